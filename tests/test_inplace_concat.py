"""Concats computed in place (compile._inplace_concats): a detector's heads
(1x1 conv -> Transpose(0, 2, 3, 1) -> Reshape -> Concat over levels) write
their NHWC rows straight into the concatenated outputs, and any other part of
such a Concat is written into its place by its producer or copied there.
Against onnxruntime, at the top ISA and with the generic kernels; plus the
engine's checks of writable views."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand, rel_close as close

HEADS = (("bbox", 8), ("cls", 4), ("lmk", 20))


def detector(k=1, extra=None, h=12, w=10):
    """x -> two feature levels (h x w and half that) -> per level one conv per
    head -> Transpose -> Reshape(1, -1, c / 2) -> per head a Concat over the
    levels; the class rows go through Softmax, the others are graph outputs.
    extra: "reader" (level 0's box rows are also a graph output of their own),
    "input" (the box Concat also takes a graph input), "const" (and a
    constant), "relu" (the landmark heads have a Relu between conv and
    Transpose: fused, so those convs do not merge with the others)."""
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["f0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["f0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["f1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["f1"], ["r1"])]
    inits = [("w0", rand((16, 8, 3, 3), 1, 0.3)), ("b0", rand((16,), 2, 0.1)),
             ("w1", rand((16, 16, 3, 3), 3, 0.3)), ("b1", rand((16,), 4, 0.1))]
    outputs = []
    rows = {name: [] for name, _ in HEADS}
    for lv, feat in enumerate(["r0", "r1"]):
        for j, (name, oc) in enumerate(HEADS):
            c = f"{name}{lv}"
            inits += [(f"{c}_w", rand((oc, 16, k, k), 10 + 3 * lv + j, 0.3)), (f"{c}_b", rand((oc,), 20 + j, 0.1)),
                      (f"{c}_s", np.array([1, -1, oc // 2], np.int64))]
            nodes.append(helper.make_node("Conv", [feat, f"{c}_w", f"{c}_b"], [f"{c}_y"], pads=[k // 2] * 4, name=c))
            src = f"{c}_y"
            if extra == "relu" and name == "lmk":
                nodes.append(helper.make_node("Relu", [src], [f"{c}_a"]))
                src = f"{c}_a"
            nodes += [helper.make_node("Transpose", [src], [f"{c}_t"], perm=[0, 2, 3, 1]),
                      helper.make_node("Reshape", [f"{c}_t", f"{c}_s"], [f"{c}_r"])]
            rows[name].append(f"{c}_r")
    bbox = list(rows["bbox"])
    if extra == "reader":
        outputs.append(("bbox0_r", None))
    if extra == "input":
        bbox.insert(1, "extra")
    if extra == "const":
        inits.append(("extra_c", rand((1, 3, 4), 7)))
        bbox.insert(1, "extra_c")
    nodes += [helper.make_node("Concat", bbox, ["bbox"], axis=1),
              helper.make_node("Concat", rows["cls"], ["cls_rows"], axis=1),
              helper.make_node("Softmax", ["cls_rows"], ["cls"], axis=-1),
              helper.make_node("Concat", rows["lmk"], ["lmk"], axis=1)]
    outputs += [("bbox", None), ("cls", None), ("lmk", None)]
    inputs = [("x", [1, 8, h, w])]
    if extra == "input":
        inputs.append(("extra", [1, 5, 4]))
    return make_model(nodes, inputs, outputs, inits)


def feeds(model, h=12, w=10):
    f = {"x": rand((1, 8, h, w), 5)}
    if any(i.name == "extra" for i in model.graph.input):
        f["extra"] = rand((1, 5, 4), 6)
    return f


def ops(sess, op):
    return [k[0] for k in sess.kernels() if k[1] == op]


@pytest.mark.parametrize("threads", [1, 2])
def test_heads_write_their_concatenated_outputs(threads):
    model = detector()
    f = feeds(model)
    sess = qpi.load(model, threads=threads)
    close(sess.run(f), ort_run(model, f))
    # one merged conv per level writes all three heads' rows; nothing moves them
    assert [k for k in ops(sess, "conv2d") if "+" in k] == ["bbox0+cls0+lmk0", "bbox1+cls1+lmk1"]
    assert ops(sess, "transpose") == [] and ops(sess, "concat") == [] and ops(sess, "copy") == []
    with isa_cap("generic"):  # the oracle conv writes NHWC segments too
        slow = qpi.load(model, threads=threads)
    assert ops(slow, "transpose") == []
    close(slow.run(f), ort_run(model, f))


@pytest.mark.parametrize("extra", ["reader", "input", "const", "relu"])
def test_parts_that_cannot_be_written_in_place_are_copied(extra):
    model = detector(extra=extra)
    f = feeds(model)
    sess = qpi.load(model)
    close(sess.run(f), ort_run(model, f))
    copies = ops(sess, "copy")
    if extra == "relu":  # fused into the landmark convs: they write alone, the others merged
        assert copies == [] and ops(sess, "transpose") == [] and ops(sess, "concat") == []
        assert [k for k in ops(sess, "conv2d") if "+" in k] == ["bbox0+cls0", "bbox1+cls1"]
    elif extra == "reader":  # the graph output's Reshape, and its copy into the Concat
        assert len(copies) == 2 and ops(sess, "concat") == [], sess.kernels()
    else:
        assert len(copies) == 1 and ops(sess, "concat") == [], sess.kernels()


def test_kxk_heads_keep_their_transpose_in_place():
    model = detector(k=3)
    f = feeds(model)
    sess = qpi.load(model)
    close(sess.run(f), ort_run(model, f))
    assert len(ops(sess, "transpose")) == 6 and ops(sess, "concat") == [] and ops(sess, "copy") == []


def test_every_input_size_and_fresh_output_buffers():
    model = detector(h="H", w="W")
    sess = qpi.load(model, plan_cache=4)
    for h, w in [(12, 10), (2, 2), (9, 7), (12, 10)]:
        f = feeds(model, h, w)
        a = sess.run(f)
        b = sess.run(f)  # the outputs are new arrays each run
        close(a, ort_run(model, f))
        close(b, a, tol=0)
        assert all(x is not y for x, y in zip(a, b))


def test_writable_views_are_checked():
    p = _engine.Plan(1)
    x = p.add_tensor("x", [1, 8], 0)
    base = p.add_tensor("base", [1, 8], 0)
    v = p.add_view("v", base, 0, [1, 8], writable=True)
    p.add_op("copy", "c1", [x], [v], {}, {}, [])
    p.add_op("copy", "c2", [x], [base], {}, {}, [])  # the whole base too
    p.set_io([x], [base])
    with pytest.raises(ValueError, match="written both whole and through view"):
        p.finalize()

    p = _engine.Plan(1)
    x = p.add_tensor("x", [1, 4], 0)
    y = p.add_tensor("y", [1, 4], 0)
    v = p.add_view("v", x, 0, [1, 4], writable=True)
    p.add_op("copy", "c", [y], [v], {}, {}, [])
    p.add_op("copy", "c2", [x], [y], {}, {}, [])
    p.set_io([x], [y])
    with pytest.raises(ValueError, match="writes a graph input"):
        p.finalize()
