"""passes/merge_branches.py: parallel linear branches (MobileOne / RepVGG training-form blocks) summed into one
Conv. Each model against onnxruntime within 1e-5 of the largest output (the merged weights add in another
order), and the number of convs left in the plan; the cases the pass must leave alone stay correct too."""
import numpy as np
import pytest
from onnx import helper

import qpi

from conftest import make_model, ort_run, rel_close


def _bn(rng, name, x, c):
    inits = [(f"{name}_s", rng.uniform(0.5, 1.5, c).astype(np.float32)),
             (f"{name}_b", (rng.standard_normal(c) * 0.2).astype(np.float32)),
             (f"{name}_m", (rng.standard_normal(c) * 0.2).astype(np.float32)),
             (f"{name}_v", rng.uniform(0.5, 2.0, c).astype(np.float32))]
    node = helper.make_node("BatchNormalization", [x] + [n for n, _ in inits], [name])
    return node, inits


def _block(c, oc, h, branches, group=1, stride=1, identity=None, const=False, act="Relu", seed=0):
    """x -> sum of branches -> act. branches: kernel sizes (each conv + BatchNormalization, pads k // 2);
    identity: None, "bn" (BatchNormalization of x) or "x" (x itself)."""
    rng = np.random.default_rng(seed)
    nodes, inits, terms = [], [], []
    for i, k in enumerate(branches):
        kh, kw = (k, k) if isinstance(k, int) else k
        w = (rng.standard_normal((oc, c // group, kh, kw)) / np.sqrt(c // group * kh * kw)).astype(np.float32)
        inits.append((f"w{i}", w))
        nodes.append(helper.make_node("Conv", ["x", f"w{i}"], [f"c{i}"], kernel_shape=[kh, kw], group=group,
                                      strides=[stride, stride], pads=[kh // 2, kw // 2, kh // 2, kw // 2]))
        bn, bi = _bn(rng, f"bn{i}", f"c{i}", oc)
        nodes.append(bn)
        inits += bi
        terms.append(f"bn{i}")
    if identity == "bn":
        bn, bi = _bn(rng, "bnx", "x", c)
        nodes.append(bn)
        inits += bi
        terms.append("bnx")
    elif identity == "x":
        terms.append("x")
    if const:
        inits.append(("k", (rng.standard_normal((oc, 1, 1)) * 0.1).astype(np.float32)))
        terms.append("k")
    acc = terms[0]
    for i, t in enumerate(terms[1:]):
        nodes.append(helper.make_node("Add", [acc, t], [f"s{i}"]))
        acc = f"s{i}"
    nodes.append(helper.make_node(act, [acc], ["y"]))
    return make_model(nodes, [("x", [1, c, h, h + 3])], [("y", None)], inits)


def _check(model, c, h, convs_left):
    sess = qpi.load(model, threads=1)
    x = np.random.default_rng(1).standard_normal((1, c, h, h + 3)).astype(np.float32)
    rel_close(sess.run(x), ort_run(model, {"x": x}), what="merged branches")
    assert [op for _, op, _ in sess.kernels()].count("conv2d") == convs_left, sess.kernels()


@pytest.mark.parametrize("case", [
    dict(c=16, oc=24, branches=[3, 3, 3, 1], const=True),                      # MobileOne stem-like, no identity
    dict(c=16, oc=16, branches=[1, 1, 1, 1], identity="bn"),                   # MobileOne pointwise stage
    dict(c=24, oc=24, branches=[3, 3, 1], group=24, identity="bn"),            # MobileOne depthwise stage
    dict(c=20, oc=20, branches=[3, 1], identity="bn"),                         # RepVGG block
    dict(c=12, oc=12, branches=[3, 1], group=12, identity="x"),                # RepViT's RepVGGDW
    dict(c=16, oc=32, branches=[3, 1], stride=2),                              # RepVGG down-sampling block
    dict(c=8, oc=8, branches=[5, (3, 1), (1, 3)], group=2, identity="bn"),     # ACNet-style 1xk / kx1 branches
], ids=["3x3+1x1+const", "pw+bn", "dw+bn", "repvgg", "dw+x", "stride2", "5x5+1x3+3x1"])
def test_branches_merge_into_one_conv(case):
    model = _block(**case, h=13)
    _check(model, case["c"], 13, convs_left=1)


@pytest.mark.parametrize("attrs", [dict(pads=[2, 2, 0, 0]), dict(pads=[2, 2, 2, 2], dilations=[2, 2])],
                         ids=["off-centre pads", "dilated"])
def test_branches_that_do_not_merge_stay_correct(attrs):
    # a 3x3 branch whose window is not centred on the 1x1 branch's pixel (top-left pads, or dilated): 2 convs
    rng = np.random.default_rng(2)
    w0, w1 = (rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), (rng.standard_normal((8, 8, 1, 1)) * 0.2
                                                                           ).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], **attrs), helper.make_node("Conv", ["x", "w1"], ["c1"]),
             helper.make_node("Add", ["c0", "c1"], ["y"])]
    m = make_model(nodes, [("x", [1, 8, 9, 12])], [("y", None)], [("w0", w0), ("w1", w1)])
    sess = qpi.load(m, threads=1)
    x = rng.standard_normal((1, 8, 9, 12)).astype(np.float32)
    rel_close(sess.run(x), ort_run(m, {"x": x}), what="unmerged")
    assert [op for _, op, _ in sess.kernels()].count("conv2d") == 2


def test_a_branch_read_elsewhere_or_activated_is_not_merged():
    # c0 is also a graph output; c1 has its own Relu before the sum: both sums stay as they are
    rng = np.random.default_rng(3)
    w0, w1 = (rng.standard_normal((2, 8, 8, 3, 3)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Add", ["c0", "r1"], ["y"])]
    m = make_model(nodes, [("x", [1, 8, 9, 12])], [("y", None), ("c0", None)], [("w0", w0), ("w1", w1)])
    sess = qpi.load(m, threads=1)
    x = rng.standard_normal((1, 8, 9, 12)).astype(np.float32)
    rel_close(sess.run(x), ort_run(m, {"x": x}), what="unmerged")
    assert [op for _, op, _ in sess.kernels()].count("conv2d") == 2
