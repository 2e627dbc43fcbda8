"""Each graph pass: the graph runs before and after the pass on random inputs
with the same results, and the pass did rewrite it."""
import numpy as np
import pytest
from onnx import helper

from qpi.lower import compile_graph
from qpi.frontend.onnx_import import import_model
from qpi.frontend import const_fold
from qpi.passes import dce, eliminate, fold_affine, fold_bn, fold_pad, fuse_activation, fuse_bias, optimize

from conftest import make_model, ort_run, rand


def run_graph(graph, x):
    plan, _ = compile_graph(graph, 1)
    return plan.run([x])


def check_pass(model, pass_mod, x, min_rewrites=1):
    graph, _ = import_model(model)
    before = graph.copy()
    n = pass_mod.run(graph)
    assert n >= min_rewrites, f"{pass_mod.__name__} made {n} rewrites"
    r0, r1 = run_graph(before, x), run_graph(graph, x)
    ref = ort_run(model, {"x": x})
    assert len(r0) == len(r1) == len(ref) >= 1
    for a, b, c in zip(r0, r1, ref):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)
    return before, graph


def conv(name, x, y, cin, cout, k=3, seed=0, group=1, bias=True):
    w = (name + "_w", rand((cout, cin // group, k, k), seed, 0.3))
    b = (name + "_b", rand((cout,), seed + 1, 0.1))
    node = helper.make_node("Conv", [x, w[0]] + ([b[0]] if bias else []), [y], name=name,
                            pads=[k // 2] * 4, group=group)
    return node, [w, b] if bias else [w]


def bn(name, x, y, c, seed=0):
    rng = np.random.default_rng(seed)
    inits = [(f"{name}_{k}", v.astype(np.float32)) for k, v in
             (("g", rng.uniform(0.5, 1.5, c)), ("b", rng.normal(0, 0.2, c)), ("m", rng.normal(0, 0.2, c)),
              ("v", rng.uniform(0.5, 2.0, c)))]
    return helper.make_node("BatchNormalization", [x] + [i[0] for i in inits], [y], name=name, epsilon=1e-3), inits


def test_fold_bn_conv_and_gemm():
    c1, i1 = conv("c1", "x", "t1", 3, 6)
    b1, i2 = bn("bn1", "t1", "t2", 6)
    gp = helper.make_node("GlobalAveragePool", ["t2"], ["t3"])
    fl = helper.make_node("Flatten", ["t3"], ["t4"])
    gm = helper.make_node("Gemm", ["t4", "gw", "gb"], ["t5"], transB=1)
    b2, i3 = bn("bn2", "t5", "y", 5, seed=3)
    model = make_model([c1, b1, gp, fl, gm, b2], [("x", [1, 3, 9, 7])], [("y", [1, 5])],
                       i1 + i2 + i3 + [("gw", rand((5, 6), 4)), ("gb", rand((5,), 5))])
    _, after = check_pass(model, fold_bn, rand((1, 3, 9, 7)), min_rewrites=2)
    assert "BatchNormalization" not in after.op_counts()



def _mixconv(split_reads_more=False, axis=1):
    """MixNet's mixed-kernel block: Split -> a 3x3 and a 5x5 depthwise conv -> Concat -> BatchNormalization ->
    Relu; split_reads_more: the 5x5 conv's output is also a graph output; axis: the Concat's (3: along the
    width, 6 + 6 channels, the BatchNormalization over 6)."""
    a, b = (4, 8) if axis == 1 else (6, 6)
    sp = helper.make_node("Split", ["x", "sizes"], ["s0", "s1"], axis=1)
    c3, i3 = conv("c3", "s0", "t0", a, a, k=3, group=a)
    c5, i5 = conv("c5", "s1", "t1", b, b, k=5, seed=2, group=b)
    cat = helper.make_node("Concat", ["t0", "t1"], ["t"], axis=axis)
    bnode, ib = bn("bn", "t", "u", a + b if axis == 1 else a, seed=5)
    r = helper.make_node("Relu", ["u"], ["y"])
    outs = [("y", None)] + ([("t1", None)] if split_reads_more else [])
    return make_model([sp, c3, c5, cat, bnode, r], [("x", [1, 12, 9, 10])], outs,
                      i3 + i5 + ib + [("sizes", np.array([a, b], np.int64))])


def test_fold_bn_through_channel_concat():
    _, after = check_pass(_mixconv(), fold_bn, rand((1, 12, 9, 10)))
    assert "BatchNormalization" not in after.op_counts()


@pytest.mark.parametrize("case", ["input_read_elsewhere", "width_axis"])
def test_fold_bn_through_concat_left_alone(case):
    model = _mixconv(split_reads_more=case == "input_read_elsewhere", axis=3 if case == "width_axis" else 1)
    graph, _ = import_model(model)
    before = graph.copy()
    assert fold_bn.run(graph) == 0
    assert "BatchNormalization" in graph.op_counts()
    x = rand((1, 12, 9, 10))
    for a, c in zip(run_graph(before, x), ort_run(model, {"x": x})):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("shared", [False, True], ids=["alone", "also-pooled"])
def test_fold_pad_into_conv(shared):
    """HGNet's stem: Pad (0, 0, 0, 0, 0, 0, 1, 1) feeds a 2x2 conv and (shared) a MaxPool; the conv takes the
    pads, the Pad stays only for the pool. Pads on N or C, a non-zero value or another mode are left."""
    pads = np.array([0, 0, 0, 1, 0, 0, 1, 2], np.int64)
    nodes = [helper.make_node("Pad", ["x", "p"], ["t"], name="pad"),
             helper.make_node("Conv", ["t", "w"], ["y"], pads=[1, 0, 0, 1], strides=[2, 1], name="c")]
    outs = [("y", None)]
    if shared:
        nodes.append(helper.make_node("MaxPool", ["t"], ["z"], kernel_shape=[2, 2], name="mp"))
        outs.append(("z", None))
    model = make_model(nodes, [("x", [1, 3, 9, 8])], outs, [("p", pads), ("w", rand((4, 3, 2, 2), 1))], opset=13)
    _, after = check_pass(model, fold_pad, rand((1, 3, 9, 8)))
    conv_node = next(n for n in after.nodes if n.op == "Conv")
    assert conv_node.inputs[0] == "x" and list(conv_node.attrs["pads"]) == [1, 1, 1, 3]
    # a pad on C (the conv then reads 4 channels), a crop, a non-zero value
    for bad, cin, value in ((np.array([0, 1, 0, 0, 0, 0, 0, 0], np.int64), 4, None),
                            (np.array([0, 0, -1, 0, 0, 0, 0, 0], np.int64), 3, None),
                            (pads, 3, np.array(1.0, np.float32))):
        ins = ["x", "p"] + (["v"] if value is not None else [])
        m = make_model([helper.make_node("Pad", ins, ["t"], name="pad"), nodes[1]], [("x", [1, 3, 9, 8])],
                       [("y", None)], [("p", bad), ("w", rand((4, cin, 2, 2), 1))] +
                       ([("v", value)] if value is not None else []), opset=13)
        g, _ = import_model(m)
        assert fold_pad.run(g) == 0


def test_fold_affine_mul_add_sub_div():
    c1, i1 = conv("c1", "x", "t1", 4, 5)
    nodes = [c1, helper.make_node("Mul", ["t1", "s"], ["t2"]), helper.make_node("Add", ["t2", "o"], ["t3"]),
             helper.make_node("Sub", ["t3", "k"], ["t4"]), helper.make_node("Div", ["t4", "d"], ["y"])]
    inits = i1 + [("s", rand((5, 1, 1), 7)), ("o", rand((1, 5, 1, 1), 8)), ("k", np.float32(0.5)),
                  ("d", np.array([2.0], np.float32))]
    model = make_model(nodes, [("x", [1, 4, 6, 6])], [("y", [1, 5, 6, 6])], inits)
    _, after = check_pass(model, fold_affine, rand((1, 4, 6, 6)), min_rewrites=4)
    assert after.op_counts() == {"Conv": 1}


def test_fold_affine_leaves_spatial_constant_alone():
    c1, i1 = conv("c1", "x", "t1", 2, 3)
    model = make_model([c1, helper.make_node("Mul", ["t1", "s"], ["y"])], [("x", [1, 2, 4, 4])],
                       [("y", [1, 3, 4, 4])], i1 + [("s", rand((1, 1, 4, 4), 2))])
    graph, _ = import_model(model)
    assert fold_affine.run(graph) == 0


@pytest.mark.parametrize("act,attrs,extra", [
    ("Relu", {}, []), ("LeakyRelu", {"alpha": 0.2}, []), ("Sigmoid", {}, []),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, []), ("HardSwish", {}, []), ("Clip", {}, ["lo", "hi"]),
])
def test_fuse_activation(act, attrs, extra):
    c1, i1 = conv("c1", "x", "t1", 3, 7)
    node = helper.make_node(act, ["t1"] + extra, ["y"], **attrs)
    inits = i1 + ([("lo", np.float32(0.0)), ("hi", np.float32(0.6))] if extra else [])
    model = make_model([c1, node], [("x", [1, 3, 5, 5])], [("y", [1, 7, 5, 5])], inits)
    _, after = check_pass(model, fuse_activation, rand((1, 3, 5, 5), 1, 2.0))
    assert after.op_counts() == {"Conv": 1}


def test_fuse_activation_into_gemm():
    nodes = [helper.make_node("Gemm", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    model = make_model(nodes, [("x", [2, 6])], [("y", [2, 3])], [("w", rand((6, 3), 2))])
    check_pass(model, fuse_activation, rand((2, 6), 3))


def test_fuse_bias_into_matmul():
    # an exported Linear on a 3-D input: MatMul -> Add(b) with b one value per output column, either operand
    # order; then the activation joins it too
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["b", "t"], ["u"]),
             helper.make_node("Relu", ["u"], ["y"])]
    model = make_model(nodes, [("x", [2, 5, 6])], [("y", [2, 5, 3])], [("w", rand((6, 3), 2)), ("b", rand((3,), 4))])
    _, after = check_pass(model, fuse_bias, rand((2, 5, 6), 3))
    assert after.op_counts() == {"MatMul": 1, "Relu": 1}
    fuse_activation.run(after)
    assert after.op_counts() == {"MatMul": 1}
    x = rand((2, 5, 6), 3)
    np.testing.assert_allclose(run_graph(after, x)[0], ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias_shape", [(5, 3), (2, 1, 3), (1,)])
def test_no_bias_fusion_for_other_adds(bias_shape):
    # a constant that is not one value per output column (per row, a batch broadcast, a scalar) stays an Add
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])]
    model = make_model(nodes, [("x", [2, 5, 6])], [("y", [2, 5, 3])], [("w", rand((6, 3), 2)),
                                                                        ("b", rand(bias_shape, 4))])
    graph, _ = import_model(model)
    assert fuse_bias.run(graph) == 0


def test_no_fusion_when_conv_output_is_also_read():
    c1, i1 = conv("c1", "x", "t1", 3, 4)
    nodes = [c1, helper.make_node("Relu", ["t1"], ["t2"]), helper.make_node("Add", ["t1", "t2"], ["y"])]
    model = make_model(nodes, [("x", [1, 3, 4, 4])], [("y", [1, 4, 4, 4])], i1)
    graph, _ = import_model(model)
    assert fuse_activation.run(graph) == 0


def test_eliminate():
    c1, i1 = conv("c1", "x", "t0", 3, 4)
    nodes = [c1, helper.make_node("Identity", ["t0"], ["t1"]), helper.make_node("Dropout", ["t1"], ["t2"]),
             helper.make_node("Split", ["t2"], ["t3"], axis=1),
             helper.make_node("Reshape", ["t3", "shape"], ["t4"]),
             helper.make_node("GlobalAveragePool", ["t4"], ["t5"]), helper.make_node("Flatten", ["t5"], ["t6"]),
             helper.make_node("Gemm", ["t6", "w"], ["y"])]
    inits = i1 + [("shape", np.array([1, 4, 5, 5], np.int64)), ("w", rand((4, 2), 9))]
    model = make_model(nodes, [("x", [1, 3, 5, 5])], [("y", [1, 2])], inits)
    _, after = check_pass(model, eliminate, rand((1, 3, 5, 5)), min_rewrites=5)
    assert after.op_counts() == {"Conv": 1, "GlobalAveragePool": 1, "Gemm": 1}


def test_eliminate_keeps_graph_output_name():
    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Identity", ["t"], ["y"])]
    model = make_model(nodes, [("x", [2, 3])], [("y", [2, 3])])
    before, after = check_pass(model, eliminate, rand((2, 3)))
    assert after.outputs == ["y"] and after.op_counts() == {"Relu": 1}


def test_const_fold_shape_chain():
    # the exporter pattern: Reshape to (N, -1) computed from Shape/Gather/Unsqueeze/Concat
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shp"], axis=0),
             helper.make_node("Cast", ["shp"], ["shp2"], to=7),
             helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", 1, [1], [2.0])),
             helper.make_node("Add", ["k", "k"], ["k2"]),
             helper.make_node("Reshape", ["x", "shp2"], ["t"]), helper.make_node("Mul", ["t", "k2"], ["y"])]
    inits = [("zero", np.array(0, np.int64)), ("axes", np.array([0], np.int64)),
             ("minus1", np.array([-1], np.int64))]
    model = make_model(nodes, [("x", [2, 3, 4])], [("y", [2, 12])], inits)
    graph, _ = import_model(model)  # folding runs at import, interleaved with shape inference
    assert graph.op_counts() == {"Reshape": 1, "Mul": 1}, graph.op_counts()
    np.testing.assert_allclose(graph.consts["k2"], [4.0])
    x = rand((2, 3, 4))
    np.testing.assert_allclose(run_graph(graph, x)[0], ort_run(model, {"x": x})[0], rtol=1e-6)


def test_const_fold_single_node():
    from qpi.ir import Graph, Node

    g = Graph([Node("Add", "a", ["p", "q"], ["r"]), Node("Relu", "b", ["x"], ["y"])], ["x"], ["y"],
              {"p": np.ones(3, np.float32), "q": np.full(3, 2.0, np.float32)}, 13)
    assert const_fold.run(g) == 1
    np.testing.assert_array_equal(g.consts["r"], [3.0, 3.0, 3.0])
    assert [n.op for n in g.nodes] == ["Relu"]


def test_dce():
    c1, i1 = conv("c1", "x", "y", 3, 4)
    c2, i2 = conv("c2", "x", "dead", 3, 4, seed=5)
    nodes = [c1, c2, helper.make_node("Relu", ["dead"], ["dead2"])]
    model = make_model(nodes, [("x", [1, 3, 4, 4])], [("y", [1, 4, 4, 4])], i1 + i2)
    before, after = check_pass(model, dce, rand((1, 3, 4, 4)), min_rewrites=2)
    assert after.op_counts() == {"Conv": 1} and "c2_w" not in after.consts


def test_full_pipeline_on_mixed_graph():
    c1, i1 = conv("c1", "x", "t1", 3, 8)
    b1, i2 = bn("bn", "t1", "t2", 8)
    c2, i3 = conv("c2", "t3", "t4", 8, 8, group=8, seed=3)
    nodes = [c1, b1, helper.make_node("Clip", ["t2", "lo", "hi"], ["t3"]), c2,
             helper.make_node("Mul", ["t4", "s"], ["t5"]), helper.make_node("LeakyRelu", ["t5"], ["t6"]),
             helper.make_node("Add", ["t6", "t3"], ["y"])]
    inits = i1 + i2 + i3 + [("lo", np.float32(0)), ("hi", np.float32(6)), ("s", rand((8, 1, 1), 4))]
    model = make_model(nodes, [("x", [1, 3, 8, 8])], [("y", [1, 8, 8, 8])], inits)
    graph, _ = import_model(model)
    before = graph.copy()
    stats = optimize(graph)
    assert graph.op_counts() == {"Conv": 2, "Add": 1}, (graph.op_counts(), stats)
    x = rand((1, 3, 8, 8), 2, 3.0)
    np.testing.assert_allclose(run_graph(graph, x)[0], run_graph(before, x)[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_graph(graph, x)[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4)
