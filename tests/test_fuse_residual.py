"""fuse_residual: residual Adds fused into the Conv before them, activations
after an Add fused into the Add. Each graph runs before and after the pass
(and the whole pipeline) against onnxruntime."""
import numpy as np
from onnx import helper

import qpi
from qpi.lower import compile_graph
from qpi.frontend.onnx_import import import_model
from qpi.ops.conv import RESIDUAL
from qpi.ops.resize import ADDEND
from qpi.passes import fuse_activation, fuse_residual
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand


def conv(name, x, y, cin, cout, k=1, seed=0, bias=True, group=1):
    inits = [(name + "_w", rand((cout, cin // group, k, k), seed, 0.3))]
    if bias:
        inits.append((name + "_b", rand((cout,), seed + 1, 0.1)))
    return helper.make_node("Conv", [x] + [i[0] for i in inits], [y], name=name, pads=[k // 2] * 4,
                            group=group), inits


def model_of(parts, cin, h, w, out, cout):
    nodes, inits = [], []
    for n, i in parts:
        nodes.append(n)
        inits += i
    return make_model(nodes, [("x", [1, cin, h, w])], [(out, [1, cout, h, w])], inits)


def check(model, x, passes, want_ops):
    graph, _ = import_model(model)
    before = graph.copy()
    n = sum(p.run(graph) for p in passes)
    assert n >= 1
    for op, count in want_ops.items():
        assert graph.op_counts().get(op, 0) == count, graph.op_counts()
    ref = ort_run(model, {"x": x})
    r0, r1 = compile_graph(before, 1)[0].run([x]), compile_graph(graph, 1)[0].run([x])
    assert len(r0) == len(r1) == len(ref) == 1
    np.testing.assert_allclose(r0[0], ref[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r1[0], ref[0], rtol=1e-4, atol=1e-4)
    return graph


def mbv2_block(cin, cexp, h, w, act="Clip"):
    """MobileNetV2 inverted residual: expand 1x1 + ReLU6, depthwise 3x3 + ReLU6,
    project 1x1 (linear), Add with the block's input."""
    lo, hi = ("lo", rand((), 0) * 0), ("hi", np.array(6, np.float32))
    parts = [conv("expand", "x", "e", cin, cexp, 1, 1),
             (helper.make_node(act, ["e", "lo", "hi"], ["e1"]), [lo, hi]),
             conv("dw", "e1", "d", cexp, cexp, 3, 3, group=cexp),
             (helper.make_node(act, ["d", "lo", "hi"], ["d1"]), []),
             conv("project", "d1", "p", cexp, cin, 1, 5, bias=True),
             (helper.make_node("Add", ["x_in", "p"], ["y"]), [])]
    # the block input must be an activation (NC4HW4), not the plain graph input
    parts.insert(0, conv("stem", "x", "x_in", cin, cin, 1, 7))
    parts[1] = conv("expand", "x_in", "e", cin, cexp, 1, 1)
    return parts


def test_mobilenetv2_block():
    cin, h, w = 8, 9, 7
    model = model_of(mbv2_block(cin, 24, h, w), cin, h, w, "y", cin)
    graph = check(model, rand((1, cin, h, w), 2), [fuse_activation, fuse_residual], {"Add": 0, "Conv": 4})
    project = next(n for n in graph.nodes if n.name == "project")
    assert project.inputs[3] == "x_in" and project.outputs == ["y"]


def test_residual_then_relu_joins_the_conv():
    cin, h, w = 6, 5, 8
    # (b reads Relu(t), not t: conv(t) + t would be one conv, passes/merge_branches.py)
    parts = [conv("a", "x", "t", cin, cin, 1, 1), (helper.make_node("Relu", ["t"], ["tr"]), []),
             conv("b", "tr", "u", cin, cin, 3, 3, bias=False),
             (helper.make_node("Add", ["u", "t"], ["s"]), []), (helper.make_node("Relu", ["s"], ["y"]), [])]
    model = model_of(parts, cin, h, w, "y", cin)
    x = rand((1, cin, h, w), 4)
    graph, _ = import_model(model)
    qpi.passes.optimize(graph)
    assert graph.op_counts() == {"Conv": 2, "Relu": 1}, graph.op_counts()
    b = next(n for n in graph.nodes if n.name == "b")
    assert b.inputs[3] == "t" and b.attrs["_act"][0] == 1
    ours = qpi.load(model).run(x)
    ref = ort_run(model, {"x": x})
    assert len(ours) == len(ref) == 1
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-4, atol=1e-4)


def test_add_relu_of_two_activated_convs_fuses_into_the_add():
    # RetinaFace SSH: Relu(Add(conv+relu, conv+relu)): no conv may take the Add
    cin, h, w = 4, 6, 6
    parts = [conv("a", "x", "t", cin, cin, 3, 1), (helper.make_node("Relu", ["t"], ["t1"]), []),
             conv("b", "x", "u", cin, cin, 1, 3), (helper.make_node("Relu", ["u"], ["u1"]), []),
             (helper.make_node("Add", ["t1", "u1"], ["s"]), []), (helper.make_node("Relu", ["s"], ["y"]), [])]
    model = model_of(parts, cin, h, w, "y", cin)
    graph = check(model, rand((1, cin, h, w), 5, 2.0), [fuse_activation, fuse_residual], {"Add": 1, "Relu": 0})
    add = next(n for n in graph.nodes if n.op == "Add")
    assert add.attrs["_act"][0] == 1


def test_no_fusion_when_conv_has_activation_or_output_is_read_twice():
    cin, h, w = 4, 5, 5
    # conv output also a second consumer's input
    parts = [conv("a", "x", "t", cin, cin, 1, 1), conv("b", "t", "u", cin, cin, 1, 3),
             (helper.make_node("Add", ["u", "t"], ["s"]), []), (helper.make_node("Mul", ["s", "u"], ["y"]), [])]
    graph, _ = import_model(model_of(parts, cin, h, w, "y", cin))
    assert fuse_residual.run(graph) == 0
    # broadcast operand: no fusion
    parts = [conv("a", "x", "t", cin, cin, 1, 1), (helper.make_node("Add", ["t", "bb"], ["y"]), [("bb", rand((1, cin, 1, 1), 2))])]
    graph, _ = import_model(model_of(parts, cin, h, w, "y", cin))
    assert fuse_residual.run(graph) == 0


def test_mobilenetv2_blocks_fused():
    """The real MobileNetV2: every residual Add is fused (10 blocks)."""
    from conftest import assets_dir

    d = assets_dir()
    if d is None:
        import pytest
        pytest.skip("real-model assets not found")
    sess = qpi.load(d / "models" / "mobilenet_v2_224.onnx", threads=1)
    assert sess.stats["nodes_before"].get("Add") == 10
    assert sess.stats["nodes_after"].get("Add", 0) == 0
    assert sess.stats["passes"]["fuse_residual"] == 10


def test_relu_after_concat_of_convs_moves_into_the_convs():
    # RetinaFace SSH: Relu(Concat(conv3x3, conv5x5_2, conv7x7_3)), convs linear
    from qpi.passes import fuse_concat_act

    cin, h, w = 4, 7, 6
    parts = [conv("a", "x", "t", cin, 4, 3, 1), conv("b", "x", "u", cin, 2, 3, 3), conv("c", "u", "v", 2, 3, 3, 5),
             (helper.make_node("Concat", ["t", "v"], ["s"], axis=1), []),
             (helper.make_node("LeakyRelu", ["s"], ["y"], alpha=0.2), [])]
    model = model_of(parts, cin, h, w, "y", 7)
    graph = check(model, rand((1, cin, h, w), 6, 2.0), [fuse_concat_act], {"LeakyRelu": 0, "Concat": 1})
    acts = {n.name: n.attrs.get("_act") for n in graph.nodes if n.op == "Conv"}
    assert acts["b"] is None and acts["a"] == acts["c"] and acts["a"][0] == 3  # LeakyRelu in a and c
    # a conv output also read elsewhere: no move
    parts.append((helper.make_node("Identity", ["t"], ["t2"]), []))
    g2, _ = import_model(model_of(parts, cin, h, w, "y", 7))
    g2.outputs.append("t2")
    assert fuse_concat_act.run(g2) == 0


def test_retinaface_ssh_relus_fused():
    from conftest import assets_dir

    d = assets_dir()
    if d is None:
        import pytest
        pytest.skip("real-model assets not found")
    sess = qpi.load(d / "models" / "retinaface_mnet025_640.onnx", threads=1)
    assert sess.stats["nodes_before"].get("Relu") == 3
    assert sess.stats["nodes_after"].get("Relu", 0) == 0


def fpn(mode="nearest", order=0, by="scales", leaky=True, broadcast=False):
    """An FPN merge: a coarse map (stride-2 conv) upsampled x2 and added to
    the fine map (a conv with LeakyRelu, as RetinaFace's, so the Add cannot
    join that conv), then a 3x3 conv; order: which Add operand is the resize."""
    nodes, inits = [], []
    for n, i in [conv("fine", "x", "f", 8, 12, 1, 1), conv("down", "x", "d", 8, 12, 3, 3)]:
        nodes.append(n)
        inits += i
    nodes[1].attribute.append(helper.make_attribute("strides", [2, 2]))
    if leaky:
        nodes.append(helper.make_node("LeakyRelu", ["f"], ["fa"], alpha=0.1))
        fine = "fa"
    else:
        fine = "f"
    if by == "scales":
        inits.append(("sc", np.array([1, 1, 2, 2], np.float32)))
        ins = ["d", "", "sc"]
    else:
        inits.append(("sz", np.array([1, 12, 10, 14], np.int64)))
        ins = ["d", "", "", "sz"]
    nodes.append(helper.make_node("Resize", ins, ["up"], mode=mode))
    other = fine
    if broadcast:  # a per-channel addend: not the output's shape, no fusion
        inits.append(("bc", rand((1, 12, 1, 1), 9)))
        other = "bc"
    pair = ["up", other] if order == 0 else [other, "up"]
    nodes.append(helper.make_node("Add", pair, ["m"]))
    n, i = conv("merge", "m", "y", 12, 6, 3, 5)
    nodes.append(n)
    inits += i
    return make_model(nodes, [("x", [1, 8, 10, 14])], [("y", [1, 6, 10, 14])], inits)


def test_resize_add_fuses_into_the_resize():
    x = rand((1, 8, 10, 14), 4)
    for mode, order, by in [("nearest", 0, "scales"), ("nearest", 1, "sizes"), ("linear", 0, "scales")]:
        model = fpn(mode, order, by)
        g = check(model, x, [fuse_activation, fuse_residual], {"Add": 0, "Resize": 1})
        assert [n for n in g.nodes if n.op == "Resize"][0].input(ADDEND)
        for cap in ("generic", None):  # the nc4 kernel and the generic oracle both add
            if cap:
                with isa_cap(cap):
                    sess = qpi.load(model)
            else:
                sess = qpi.load(model)
            assert [k for k in sess.kernels() if k[1] == "binary"] == []
            out = sess.run(x)
            ref = ort_run(model, {"x": x})
            assert len(out) == len(ref) == 1
            np.testing.assert_allclose(out[0], ref[0], rtol=1e-4, atol=1e-4)


def test_resize_add_that_does_not_fuse():
    x = rand((1, 8, 10, 14), 4)
    for model in (fpn("cubic"), fpn(broadcast=True)):
        graph, _ = import_model(model)
        fuse_activation.run(graph)
        fuse_residual.run(graph)
        assert graph.op_counts().get("Add", 0) == 1
        sess = qpi.load(model)
        out, ref = sess.run(x), ort_run(model, {"x": x})
        assert len(out) == len(ref) == 1
        np.testing.assert_allclose(out[0], ref[0], rtol=1e-4, atol=1e-4)
