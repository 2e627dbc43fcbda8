"""Ops and patterns of real-world CNN exports (text detectors, YOLO heads,
MobileNetV3, UNet decoders) against onnxruntime: ConvTranspose, the new
activations, the decomposed-activation fusions (each before/after the pass),
a model zoo built here with onnx.helper (random weights, fixed seeds), and one
session fed several input sizes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qpi
from qpi.lower import compile_graph
from qpi.frontend.onnx_import import import_model
from qpi.passes import fuse_decomposed, optimize
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand, rel_close

C = lambda name, v: (name, np.asarray(v, np.float32))  # noqa: E731  a constant initializer


def close(ours, ref, tol=1e-4):
    """The Foundation's model tolerance by default: max|qpi - ort| <= tol * max|ort| per output."""
    rel_close(ours, ref, tol)


def conv(name, x, y, cin, cout, k=3, seed=0, group=1, stride=1):
    w = (name + "_w", rand((cout, cin // group, k, k), seed, 0.3))
    b = (name + "_b", rand((cout,), seed + 1, 0.1))
    node = helper.make_node("Conv", [x, w[0], b[0]], [y], name=name, pads=[k // 2] * 4, group=group,
                            strides=[stride, stride])
    return [node], [w, b]


def bn(name, x, y, c, seed=0):
    rng = np.random.default_rng(seed)
    inits = [(f"{name}_{k}", v.astype(np.float32)) for k, v in
             (("g", rng.uniform(0.5, 1.5, c)), ("b", rng.normal(0, 0.2, c)), ("m", rng.normal(0, 0.2, c)),
              ("v", rng.uniform(0.5, 2.0, c)))]
    return [helper.make_node("BatchNormalization", [x] + [i[0] for i in inits], [y], name=name, epsilon=1e-3)], inits


def deconv(name, x, y, cin, cout, k=2, s=2, seed=0, **attrs):
    w = (name + "_w", rand((cin, cout // attrs.get("group", 1), k, k), seed, 0.3))
    b = (name + "_b", rand((cout,), seed + 1, 0.1))
    return [helper.make_node("ConvTranspose", [x, w[0], b[0]], [y], name=name, strides=[s, s], **attrs)], [w, b]


# --- decomposed activations, written the ways exporters write them ---------------

def hard_sigmoid_div(x, y, p):
    """clip(x + 3, 0, 6) / 6"""
    return [helper.make_node("Add", [x, p + "_3"], [p + "_a"]),
            helper.make_node("Clip", [p + "_a", p + "_0", p + "_6"], [p + "_c"]),
            helper.make_node("Div", [p + "_c", p + "_6"], [y])], [C(p + "_3", 3), C(p + "_0", 0), C(p + "_6", 6)]


def hard_sigmoid_mul(x, y, p):
    """clip(3 + x, 0, 6) * (1/6)"""
    return [helper.make_node("Add", [p + "_3", x], [p + "_a"]),
            helper.make_node("Clip", [p + "_a", p + "_0", p + "_6"], [p + "_c"]),
            helper.make_node("Mul", [p + "_c", p + "_k"], [y])], \
        [C(p + "_3", 3), C(p + "_0", 0), C(p + "_6", 6), C(p + "_k", 1 / 6)]


def hard_swish_div(x, y, p):
    """x * clip(x + 3, 0, 6) / 6"""
    nodes, inits = hard_sigmoid_div(x, p + "_hs", p)
    return nodes + [helper.make_node("Mul", [x, p + "_hs"], [y])], inits


def hard_swish_outer(x, y, p):
    """(x * relu6(x + 3)) * (1/6): the 1/6 applied last"""
    return [helper.make_node("Add", [x, p + "_3"], [p + "_a"]),
            helper.make_node("Clip", [p + "_a", p + "_0", p + "_6"], [p + "_c"]),
            helper.make_node("Mul", [p + "_c", x], [p + "_m"]),
            helper.make_node("Mul", [p + "_m", p + "_k"], [y])], \
        [C(p + "_3", 3), C(p + "_0", 0), C(p + "_6", 6), C(p + "_k", 1 / 6)]


def hard_swish_hsig(x, y, p):
    """x * HardSigmoid(x), alpha 1/6 (paddle2onnx)"""
    return [helper.make_node("HardSigmoid", [x], [p + "_h"], alpha=1 / 6, beta=0.5),
            helper.make_node("Mul", [p + "_h", x], [y])], []


def silu(x, y, p):
    return [helper.make_node("Sigmoid", [x], [p + "_s"]), helper.make_node("Mul", [x, p + "_s"], [y])], []


def mish(x, y, p):
    return [helper.make_node("Softplus", [x], [p + "_sp"]), helper.make_node("Tanh", [p + "_sp"], [p + "_t"]),
            helper.make_node("Mul", [x, p + "_t"], [y])], []


PATTERNS = {
    "silu": (silu, "Swish", "swish"),
    "hard_swish_div": (hard_swish_div, "HardSwish", "hard_swish"),
    "hard_swish_outer": (hard_swish_outer, "HardSwish", "hard_swish"),
    "hard_swish_hsig": (hard_swish_hsig, "HardSwish", "hard_swish"),
    "hard_sigmoid_div": (hard_sigmoid_div, "HardSigmoid", "hard_sigmoid"),
    "hard_sigmoid_mul": (hard_sigmoid_mul, "HardSigmoid", "hard_sigmoid"),
    "mish": (mish, "Mish", "mish"),
}


def _run_graph(graph, x):
    plan, _ = compile_graph(graph, 1)
    return plan.run([x])


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_decomposed_activation_pass(pattern):
    make, op, kind = PATTERNS[pattern]
    n1, i1 = conv("c1", "x", "t", 8, 8, seed=1)
    n2, i2 = make("t", "y", "p")
    model = make_model(n1 + n2, [("x", [1, 8, 9, 7])], [("y", [1, 8, 9, 7])], i1 + i2, opset=18)
    x = rand((1, 8, 9, 7), 5, 2.0)
    graph, _ = import_model(model)
    before = graph.copy()
    counts = fuse_decomposed.run(graph)
    assert counts[kind] == 1 and sum(counts.values()) == 1, counts
    assert [n.op for n in graph.nodes] == ["Conv", op]
    ref = ort_run(model, {"x": x})
    close(_run_graph(before, x), ref)
    close(_run_graph(graph, x), ref)
    # and the whole pipeline leaves one Conv with the activation in its epilogue
    stats = optimize(graph)
    assert [n.op for n in graph.nodes] == ["Conv"] and "_act" in graph.nodes[0].attrs, (graph.nodes, stats)
    close(_run_graph(graph, x), ref)


def test_decomposed_not_fused_when_intermediate_is_read():
    """The clip(x + 3) tensor is also a graph output: nothing may be rewritten."""
    n1, i1 = conv("c1", "x", "t", 4, 4)
    n2, i2 = hard_swish_div("t", "y", "p")
    model = make_model(n1 + n2, [("x", [1, 4, 5, 5])], [("y", [1, 4, 5, 5]), ("p_c", [1, 4, 5, 5])], i1 + i2)
    graph, _ = import_model(model)
    counts = fuse_decomposed.run(graph)
    assert sum(counts.values()) == 0
    x = rand((1, 4, 5, 5), 2, 2.0)
    close(_run_graph(graph, x), ort_run(model, {"x": x}))


def test_silu_with_other_operand_is_not_fused():
    """y * sigmoid(x) with y != x is not SiLU."""
    n1, i1 = conv("c1", "x", "t", 4, 4)
    nodes = n1 + [helper.make_node("Sigmoid", ["t"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    model = make_model(nodes, [("x", [1, 4, 5, 5])], [("y", [1, 4, 5, 5])], i1)
    graph, _ = import_model(model)
    assert sum(fuse_decomposed.run(graph).values()) == 0


# --- new ops ------------------------------------------------------------------

@pytest.mark.parametrize("op,attrs,lo", [("Mish", {}, -6), ("Softplus", {}, -30), ("Tanh", {}, -5), ("Exp", {}, -5),
                                         ("Sqrt", {}, 0), ("Swish", {}, -8)])
def test_unary_ops_standalone_and_fused(op, attrs, lo):
    opset = 24 if op == "Swish" else 18
    x = np.random.default_rng(3).uniform(lo, 8 if op != "Exp" else 5, (1, 6, 5, 7)).astype(np.float32)
    model = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", [1, 6, 5, 7])], [("y", [1, 6, 5, 7])],
                       opset=opset)
    if op == "Swish":  # onnxruntime may not know Swish yet: compare with x * sigmoid(x)
        ref = [x / (1 + np.exp(-x))]
    else:
        ref = ort_run(model, {"x": x})
    close(qpi.load(model).run(x), ref, 1e-5)


@pytest.mark.parametrize("exp", [2.0, 0.5, 3.0, -1.0])
def test_pow_constant_exponent_fuses(exp):
    n1, i1 = conv("c1", "x", "t", 4, 4)
    nodes = n1 + [helper.make_node("Relu", ["t"], ["r"]), helper.make_node("Add", ["r", "one"], ["u"]),
                  helper.make_node("Pow", ["u", "e"], ["y"])]
    model = make_model(nodes, [("x", [1, 4, 6, 6])], [("y", [1, 4, 6, 6])], i1 + [C("one", 1.0), C("e", exp)])
    x = rand((1, 4, 6, 6), 4)
    sess = qpi.load(model)
    close(sess.run(x), ort_run(model, {"x": x}))
    # the Relu is in the conv; the Add keeps Pow apart from it, and the Pow, an activation (a constant
    # exponent), is in the Add's epilogue: no binary pow kernel, no separate pass over the tensor
    assert "Pow" not in sess.stats["nodes_after"]
    assert [op for _, op, _ in sess.kernels()] .count("binary") == 1


CT_CASES = [
    dict(k=2, s=2),
    dict(k=3, s=2, pads=[1, 1, 1, 1], output_padding=[1, 1]),
    dict(k=4, s=2, pads=[1, 1, 1, 1]),
    dict(k=3, s=1, pads=[1, 0, 2, 1], dilations=[2, 1]),
    dict(k=3, s=3, output_shape=[16, 13]),
    dict(k=3, s=2, auto_pad="SAME_UPPER"),
    dict(k=4, s=2, auto_pad="SAME_LOWER"),
    dict(k=3, s=2, group=2, pads=[1, 1, 1, 1]),
    dict(k=4, s=2, group=8, pads=[1, 1, 1, 1], cout=8),  # depthwise
    dict(k=1, s=1, cout=5),
]


@pytest.mark.parametrize("case", range(len(CT_CASES)))
@pytest.mark.parametrize("nc4_in", [False, True])
def test_conv_transpose_matches_onnxruntime(case, nc4_in):
    a = dict(CT_CASES[case])
    k, s, cout = a.pop("k"), a.pop("s"), a.pop("cout", 6)
    cin, h, w = 8, 5, 4
    nodes, inits = [], []
    x = "x"
    if nc4_in:  # produced by a conv: the input arrives NC4HW4
        nodes, inits = conv("c0", "x", "xc", cin, cin, k=1, seed=9)
        x = "xc"
    n, i = deconv("ct", x, "y", cin, cout, k=k, s=s, seed=2, kernel_shape=[k, k], **a)
    model = make_model(nodes + n, [("x", [1, cin, h, w])], [("y", None)], inits + i, opset=17)
    xv = rand((1, cin, h, w), 7)
    ref = ort_run(model, {"x": xv})
    with isa_cap("generic"):
        generic = qpi.load(model).run(xv)
    close(generic, ref, 1e-5)
    close(qpi.load(model).run(xv), generic, 1e-5)


def test_conv_transpose_bn_relu_fold_into_it():
    n1, i1 = deconv("ct", "x", "t", 8, 8, k=2, s=2, group=2)
    n2, i2 = bn("bn", "t", "b", 8, seed=3)
    nodes = n1 + n2 + [helper.make_node("Relu", ["b"], ["y"])]
    model = make_model(nodes, [("x", [1, 8, 6, 6])], [("y", [1, 8, 12, 12])], i1 + i2)
    x = rand((1, 8, 6, 6), 1)
    sess = qpi.load(model)
    assert sess.stats["nodes_after"] == {"ConvTranspose": 1}
    close(sess.run(x), ort_run(model, {"x": x}))


@pytest.mark.parametrize("rank_in", [3, 4])
def test_instance_norm(rank_in):
    shape = [2, 6, 35] if rank_in == 3 else [2, 6, 7, 5]
    nodes, inits = [], [C("s", np.linspace(0.5, 1.5, 6)), C("b", np.linspace(-1, 1, 6))]
    x = "x"
    if rank_in == 4:  # an NC4HW4 input
        n, i = conv("c0", "x", "xc", 6, 6, k=1)
        nodes, inits, x = n, inits + i, "xc"
    nodes.append(helper.make_node("InstanceNormalization", [x, "s", "b"], ["y"], epsilon=1e-4))
    model = make_model(nodes, [("x", shape)], [("y", shape)], inits)
    xv = rand(shape, 5, 3.0) + 10.0  # a large mean
    close(qpi.load(model).run(xv), ort_run(model, {"x": xv}))


@pytest.mark.parametrize("op,mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"), ("SpaceToDepth", None)])
def test_depth_space(op, mode):
    shape = [1, 8, 3, 4] if op == "DepthToSpace" else [1, 2, 6, 8]
    attrs = {"blocksize": 2}
    if mode:
        attrs["mode"] = mode
    n, i = conv("c0", "x", "xc", shape[1], shape[1], k=1)
    model = make_model(n + [helper.make_node(op, ["xc"], ["y"], **attrs)], [("x", shape)], [("y", None)], i)
    x = rand(shape, 2)
    close(qpi.load(model).run(x), ort_run(model, {"x": x}), 1e-6)


@pytest.mark.parametrize("mode,extra", [("cubic", {}), ("cubic", {"exclude_outside": 1, "cubic_coeff_a": -0.5}),
                                        ("cubic", {"antialias": 1}), ("linear", {"antialias": 1})])
@pytest.mark.parametrize("scale", [2.0, 0.6])
def test_resize_cubic_antialias_matches_onnxruntime(mode, extra, scale):
    n, i = conv("c0", "x", "xc", 5, 5, k=1)
    node = helper.make_node("Resize", ["xc", "", "sc"], ["y"], mode=mode, **extra)
    model = make_model(n + [node], [("x", [1, 5, 10, 9])], [("y", None)], i + [C("sc", [1, 1, scale, scale])],
                       opset=18)
    x = rand((1, 5, 10, 9), 3)
    close(qpi.load(model).run(x), ort_run(model, {"x": x}), 1e-5)


# --- the model zoo -----------------------------------------------------------------

R4 = ["d0", "d1", "d2", "d3"]  # outputs: rank 4, sizes left to shape inference

def unet_decoder(h="H", w="W"):
    n, i = [], []

    def add(r):
        n.extend(r[0]), i.extend(r[1])

    add(conv("e1", "x", "e1c", 3, 8, seed=1))
    n.append(helper.make_node("Relu", ["e1c"], ["e1"]))
    add(conv("e2", "e1", "e2c", 8, 16, seed=2, stride=2))
    n.append(helper.make_node("Relu", ["e2c"], ["e2"]))
    add(conv("e3", "e2", "e3c", 16, 32, seed=3, stride=2))
    n.append(helper.make_node("Relu", ["e3c"], ["e3"]))
    add(deconv("d2", "e3", "d2u", 32, 16, seed=4))
    n.append(helper.make_node("Concat", ["d2u", "e2"], ["d2cat"], axis=1))
    add(conv("d2c", "d2cat", "d2cc", 32, 16, seed=5))
    add(bn("d2bn", "d2cc", "d2b", 16, seed=6))
    n.append(helper.make_node("Relu", ["d2b"], ["d2"]))
    add(deconv("d1", "d2", "d1u", 16, 8, k=4, s=2, seed=7, pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Concat", ["d1u", "e1"], ["d1cat"], axis=1))
    add(conv("d1c", "d1cat", "d1cc", 16, 4, seed=8))
    n.append(helper.make_node("Sigmoid", ["d1cc"], ["mask"]))
    # a side output: the bottleneck upsampled x4 by cubic Resize
    n.append(helper.make_node("Resize", ["e3", "", "sc"], ["side"], mode="cubic"))
    i.append(C("sc", [1, 1, 4, 4]))
    return make_model(n, [("x", [1, 3, h, w])], [("mask", R4), ("side", R4)], i, opset=18)


def yolo_head(h="H", w="W"):
    n, i = [], []

    def add(r):
        n.extend(r[0]), i.extend(r[1])

    outs = []
    src = "x"
    for s, stride in enumerate((1, 2)):
        add(conv(f"b{s}", src, f"b{s}c", 16, 16, seed=10 + s, stride=stride))
        add(silu(f"b{s}c", f"b{s}a", f"b{s}s"))
        add(conv(f"h{s}", f"b{s}a", f"h{s}c", 16, 3 * 9, k=1, seed=20 + s))
        n.append(helper.make_node("Reshape", [f"h{s}c", "rs"], [f"h{s}r"]))
        n.append(helper.make_node("Transpose", [f"h{s}r"], [f"h{s}t"], perm=[0, 1, 3, 2]))
        outs.append(f"h{s}t")
        src = f"b{s}a"
    i.append(("rs", np.array([1, 3, 9, -1], np.int64)))
    n.append(helper.make_node("Concat", outs, ["cat"], axis=2))
    n.append(helper.make_node("Sigmoid", ["cat"], ["det"]))
    return make_model(n, [("x", [1, 16, h, w])], [("det", R4)], i, opset=18)


def mobilenet_v3_block(h="H", w="W"):
    n, i = [], []

    def add(r):
        n.extend(r[0]), i.extend(r[1])

    add(conv("exp", "x", "e", 16, 48, k=1, seed=30))
    add(bn("exp_bn", "e", "eb", 48, seed=31))
    add(hard_swish_div("eb", "ea", "hs1"))
    add(conv("dw", "ea", "d", 48, 48, k=3, seed=32, group=48))
    add(bn("dw_bn", "d", "db", 48, seed=33))
    add(hard_swish_hsig("db", "da", "hs2"))
    # squeeze-excitation
    n.append(helper.make_node("GlobalAveragePool", ["da"], ["gap"]))
    add(conv("se1", "gap", "s1", 48, 12, k=1, seed=34))
    n.append(helper.make_node("Relu", ["s1"], ["s1r"]))
    add(conv("se2", "s1r", "s2", 12, 48, k=1, seed=35))
    add(hard_sigmoid_div("s2", "sg", "hsg"))
    n.append(helper.make_node("Mul", ["da", "sg"], ["se"]))
    add(conv("proj", "se", "p", 48, 16, k=1, seed=36))
    add(bn("proj_bn", "p", "pb", 16, seed=37))
    n.append(helper.make_node("Add", ["pb", "x"], ["blk"]))
    # a second block head: x * relu6(x + 3) / 6 with the 1/6 last
    add(conv("last", "blk", "l", 16, 32, k=1, seed=38))
    add(hard_swish_outer("l", "y", "hs3"))
    return make_model(n, [("x", [1, 16, h, w])], [("y", R4)], i, opset=18)


def dbnet_head(h="H", w="W"):
    n, i = [], []

    def add(r):
        n.extend(r[0]), i.extend(r[1])

    add(conv("c", "x", "c0", 32, 8, seed=40))
    add(bn("c_bn", "c0", "c1", 8, seed=41))
    n.append(helper.make_node("Relu", ["c1"], ["c2"]))
    add(deconv("up1", "c2", "u1", 8, 8, seed=42))
    add(bn("up1_bn", "u1", "u1b", 8, seed=43))
    n.append(helper.make_node("Relu", ["u1b"], ["u1r"]))
    add(deconv("up2", "u1r", "u2", 8, 1, seed=44))
    n.append(helper.make_node("Sigmoid", ["u2"], ["prob"]))
    return make_model(n, [("x", [1, 32, h, w])], [("prob", R4)], i, opset=18)


ZOO = {
    # name: (builder, input channels, size, pass-statistics that must hold)
    "unet_decoder": (unet_decoder, 3, (32, 24), {"fold_bn": 1, "fuse_activation": 5}),
    "yolo_head": (yolo_head, 16, (32, 40), {"fuse_decomposed.swish": 2, "fuse_activation": 2}),
    "mobilenet_v3_block": (mobilenet_v3_block, 16, (28, 28),
                           {"fold_bn": 3, "fuse_decomposed.hard_swish": 3, "fuse_decomposed.hard_sigmoid": 1,
                            "fuse_activation": 5}),
    "dbnet_head": (dbnet_head, 32, (20, 16), {"fold_bn": 2, "fuse_activation": 3}),
}


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_matches_onnxruntime(name):
    build, cin, (h, w), want = ZOO[name]
    model = build(h, w)
    x = rand((1, cin, h, w), 11)
    sess = qpi.load(model)
    close(sess.run(x), ort_run(model, {"x": x}))
    passes = sess.stats["passes"]
    for k, v in want.items():
        assert passes.get(k) == v, (k, passes)
    # no activation is left standalone: every one went into a conv epilogue
    after = sess.stats["nodes_after"]
    for op in ("Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Swish", "Clip", "BatchNormalization"):
        if name == "yolo_head" and op == "Sigmoid":
            assert after.get(op) == 1  # the one after Concat has no conv to go into
            continue
        assert op not in after, after


def test_squeeze_excitation_scales_without_a_broadcast_tensor():
    """The SE Mul reads the [N, C, 1, 1] gate directly (the binary op
    broadcasts): no Expand / Tile, no tensor of the feature map's size made
    for the gate, and no layout reorder."""
    model = mobilenet_v3_block(14, 14)
    sess = qpi.load(model)
    ops = [op for _, op, _ in sess.kernels()]
    # the block's input (a graph input here) read in NC4HW4 as the residual fused into the projection;
    # the last conv (1x1, the graph output) writes NCHW itself
    assert ops.count("reorder") == sess.stats["reorders"] == 1
    assert sess.kernels()[-1][0] == "last"
    assert ops.count("binary") == 1  # the SE Mul (the residual Add is in the conv's epilogue)
    gate = [n for n in sess.graph.nodes if n.op == "Mul"]
    assert len(gate) == 1
    shapes = [tuple(sess.graph.shapes[t]) for t in gate[0].inputs]
    assert sorted(shapes) == [(1, 48, 1, 1), (1, 48, 14, 14)]


def test_zoo_info_shows_fusions(tmp_path, capsys):
    import onnx

    from qpi.cli import main

    path = tmp_path / "mnv3.onnx"
    onnx.save(mobilenet_v3_block(28, 28), path)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "fuse_decomposed 4" in out and "fuse_decomposed.hard_swish 3" in out, out


# --- dynamic input sizes --------------------------------------------------------------

@pytest.mark.parametrize("name", ["unet_decoder", "yolo_head"])
def test_one_session_many_sizes(name):
    build, cin, _, _ = ZOO[name]
    model = build()  # H and W dynamic
    sess = qpi.load(model, plan_cache=8)
    sizes = [(32, 24), (64, 48), (16, 40), (24, 24), (32, 24)]
    for k, (h, w) in enumerate(sizes):
        x = rand((1, cin, h, w), 20 + k)
        close(sess.run(x), ort_run(model, {"x": x}))
    compiles = sess.stats["compiles"]
    assert len(compiles) == 4 and all(v == 1 for v in compiles.values()), compiles
    assert compiles[((1, cin, 32, 24),)] == 1


def test_dynamic_retinaface_runs_each_size(assets):
    """The exporter's dynamic-size RetinaFace (its Shape -> Reshape chains fold
    differently per size) in one session, back to the first size at the end."""
    import onnx

    from qpi import images

    path = assets / "models" / "retinaface_mnet025_dynamic_orig.onnx"
    model = onnx.load(str(path))
    sess = qpi.load(path)
    sizes = [(160, 160), (96, 128), (128, 96), (160, 160)]
    for h, w in sizes:
        x = images.retinaface(assets / "images" / "astronaut.png", (h, w))
        close(sess.run(x), ort_run(model, {"input": x}))
    assert sess.stats["compiles"] == {((1, 3, h, w),): 1 for h, w in sizes[:3]}


def test_plans_of_one_model_share_packed_weights():
    """The plans for other sizes pack no weights of their own: the packed copy
    of every Conv / ConvTranspose is made once (misses) and then shared (hits)."""
    import gc

    from qpi import _engine

    gc.collect()
    model = unet_decoder()
    n_weighted = 7  # 5 Conv + 2 ConvTranspose (the BN folds into d2c)
    s0 = _engine.weight_cache_stats()
    sess = qpi.load(model)
    sess.run(rand((1, 3, 32, 24), 1))
    s1 = _engine.weight_cache_stats()
    assert s1["misses"] - s0["misses"] == n_weighted
    one_plan = s1["live_bytes"] - s0["live_bytes"]
    assert one_plan > 0
    for h, w in ((64, 48), (16, 40)):
        x = rand((1, 3, h, w), h)
        close(sess.run(x), ort_run(model, {"x": x}))
    s3 = _engine.weight_cache_stats()
    assert s3["misses"] == s1["misses"] and s3["hits"] - s1["hits"] == 2 * n_weighted
    assert s3["live_bytes"] - s0["live_bytes"] == one_plan  # three plans, one packed copy
    del sess
    gc.collect()
    assert _engine.weight_cache_stats()["live_bytes"] == s0["live_bytes"]  # freed with the plans


def test_plan_cache_evicts_least_recently_used():
    model = dbnet_head()
    sess = qpi.load(model, plan_cache=2)
    for h in (8, 12, 8, 16, 12):  # 12 was evicted by 16 (8 was used after 12)
        x = rand((1, 32, h, h), h)
        close(sess.run(x), ort_run(model, {"x": x}))
    c = sess.stats["compiles"]
    assert c[((1, 32, 8, 8),)] == 1 and c[((1, 32, 16, 16),)] == 1 and c[((1, 32, 12, 12),)] == 2, c


def test_shapes_still_fix_the_size():
    model = dbnet_head()
    sess = qpi.load(model, shapes={"x": (1, 32, 8, 8)})
    with pytest.raises(ValueError, match="expected shape"):
        sess.run(rand((1, 32, 12, 12), 1))
    assert sess.stats["compiles"] == {((1, 32, 8, 8),): 1}


def test_plan_cache_argument_checked():
    with pytest.raises(ValueError, match="plan_cache"):
        qpi.load(dbnet_head(), plan_cache=0)


# --- CLI ---------------------------------------------------------------------------------

def _cli(*args, **kw):
    import subprocess

    from conftest import PYTHON

    return subprocess.run([PYTHON, "-m", "qpi.cli", *args], capture_output=True, text=True, **kw)


@pytest.mark.python_flow
def test_cli_run_save_draws_faces(assets, tmp_path):
    from PIL import Image

    from qpi import images
    from qpi.cli import DEFAULT_MODEL
    from qpi.retinaface import detect

    src = assets / "images" / "astronaut.png"
    r = _cli("run", "--input", str(src), "--save", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "astronaut.png"
    assert f"saved {out}" in r.stdout
    drawn, orig = np.asarray(Image.open(out).convert("RGB")), np.asarray(images.load_rgb(src))
    assert drawn.shape == orig.shape
    # the box onnxruntime's outputs give, scaled back to the photo, is drawn in green
    x = images.retinaface(src, (320, 320))
    faces = detect(*ort_run_path(DEFAULT_MODEL, x), 320, 320)
    assert len(faces) == 1
    x1, y1, x2, y2 = faces[0]["box"]
    sx, sy = orig.shape[1] / 320, orig.shape[0] / 320
    left, mid_y = int(round(x1 * sx)), int(round((y1 + y2) / 2 * sy))
    edge = drawn[mid_y, left - 1:left + 2]
    assert any(tuple(px) == (0, 255, 0) for px in edge), edge
    changed = np.any(drawn != orig, axis=2)
    ys, xs = np.nonzero(changed)
    # everything drawn lies around the face (box, label, landmarks)
    assert xs.min() >= x1 * sx - 10 and xs.max() <= x2 * sx + 10 and ys.max() <= y2 * sy + 10


def ort_run_path(path, x):
    import onnx

    return ort_run(onnx.load(str(path)), {"input": x})


@pytest.mark.python_flow
def test_cli_run_save_draws_labels(tmp_path):
    from PIL import Image

    path = tmp_path / "cls.onnx"
    w = rand((1000, 3), 1)
    nodes = [helper.make_node("GlobalAveragePool", ["input"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "w"], ["logits"], transB=1)]
    path.write_bytes(make_model(nodes, [("input", [1, 3, 32, 32])], [("logits", [1, 1000])],
                                [("w", w)]).SerializeToString())
    img = tmp_path / "red.png"
    Image.new("RGB", (80, 60), (200, 30, 30)).save(img)
    r = _cli("run", str(path), "--input", str(img), "--preset", "imagenet", "--top", "2", "--save", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    drawn = np.asarray(Image.open(tmp_path / "o" / "red.png").convert("RGB"))
    assert drawn.shape == (60, 80, 3)
    assert np.any(np.all(drawn[:30] == 255, axis=2))  # the white label boxes, top-left
    assert np.all(drawn[-5:] == (200, 30, 30))  # and nothing at the bottom


@pytest.mark.python_flow
def test_cli_save_needs_a_preset(tmp_path):
    path = tmp_path / "m.onnx"
    n, i = conv("c", "x", "y", 3, 3)
    path.write_bytes(make_model(n, [("x", [1, 3, 8, 8])], [("y", [1, 3, 8, 8])], i).SerializeToString())
    np.save(tmp_path / "x.npy", rand((1, 3, 8, 8)))
    r = _cli("run", str(path), "--input", str(tmp_path / "x.npy"), "--save", str(tmp_path / "o"))
    assert r.returncode != 0 and "--save" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.python_flow
def test_cli_piped_output_ends_quietly(bundled_model):
    """`qpi info MODEL --kernels | head`: the reader is gone before qpi writes
    (closed here before qpi has even imported), so every write fails with EPIPE."""
    import subprocess

    from conftest import PYTHON

    p = subprocess.Popen([PYTHON, "-m", "qpi.cli", "info", str(bundled_model), "--kernels"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
