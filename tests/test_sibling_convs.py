"""Sibling 1x1 convs (a detector's heads on one feature map) run as one conv
whose output channel ranges are the members' outputs (plan views), against
onnxruntime; the cases that must not merge; and the engine's checks of
views."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand, rel_close as close


def conv(name, x, y, cin, cout, k=1, seed=0, stride=1, bias=True):
    inits = [(name + "_w", rand((cout, cin, k, k), seed, 0.3))]
    ins = [x, name + "_w"]
    if bias:
        inits.append((name + "_b", rand((cout,), seed + 1, 0.1)))
        ins.append(name + "_b")
    return [helper.make_node("Conv", ins, [y], name=name, pads=[k // 2] * 4, strides=[stride, stride])], inits


def heads(n=1, h=12, w=10, outs=(4, 8, 20), acts=None, stride=None, late=False, head_as_output=None):
    """x -> 3x3 conv (an NC4HW4 map) -> one 1x1 conv per entry of outs, each
    Transposed to NHWC and reshaped to (n, -1, k) as RetinaFace's heads.
    late: the last head's Transpose runs after a chain of big convs, so the
    merged tensor must outlive tensors the arena would otherwise put there."""
    nodes, inits = conv("body", "x", "f", 16, 32, k=3, seed=1)
    outputs = []
    for i, oc in enumerate(outs):
        nd, it = conv(f"head{i}", "f", f"h{i}", 32, oc, seed=10 + i, stride=(stride or {}).get(i, 1))
        nodes += nd
        inits += it
        src = f"h{i}"
        if acts and acts[i]:
            nodes.append(helper.make_node(acts[i], [src], [f"a{i}"]))
            src = f"a{i}"
        if head_as_output == i:
            outputs.append((src, None))
            continue
        tail = [helper.make_node("Transpose", [src], [f"t{i}"], perm=[0, 2, 3, 1]),
                helper.make_node("Reshape", [f"t{i}", f"s{i}"], [f"o{i}"])]
        inits.append((f"s{i}", np.array([n, -1, 2 if oc % 2 == 0 else 1], np.int64)))
        if late and i == len(outs) - 1:
            big = "f"
            for j in range(3):
                nd, it = conv(f"big{j}", big, f"g{j}", 32, 32, k=3, seed=30 + j)
                nodes += nd
                inits += it
                big = f"g{j}"
            outputs.append((big, None))
        nodes += tail
        outputs.append((f"o{i}", None))
    return make_model(nodes, [("x", [n, 16, h, w])], outputs, inits)


def merged_ops(sess):
    return [k for k in sess.kernels() if k[1] == "conv2d" and "+" in k[0]]


def run_both(model, n=1, h=12, w=10):
    x = rand((n, 16, h, w), 3)
    sess = qpi.load(model)
    close(sess.run(x), ort_run(model, {"x": x}))
    return sess


def test_heads_merge_into_one_conv():
    sess = run_both(heads())
    m = merged_ops(sess)
    assert len(m) == 1 and m[0][0] == "head0+head1+head2", sess.kernels()
    assert sess.stats["reorders"] == 0


def test_merged_tensor_outlives_its_last_view_reader():
    sess = run_both(heads(late=True))
    assert len(merged_ops(sess)) == 1


@pytest.mark.parametrize("case", ["batch2", "acts_differ", "strided", "graph_output"])
def test_no_merge(case):
    if case == "batch2":
        sess = run_both(heads(n=2), n=2)
        assert merged_ops(sess) == []
    elif case == "acts_differ":  # one head with a fused Relu: the other two still merge
        sess = run_both(heads(acts=["Relu", None, None]))
        assert [k[0] for k in merged_ops(sess)] == ["head1+head2"]
    elif case == "strided":
        sess = run_both(heads(stride={1: 2}))
        assert [k[0] for k in merged_ops(sess)] == ["head0+head2"]
    else:  # a member whose output the caller gets keeps a buffer of its own
        sess = run_both(heads(head_as_output=0))
        assert [k[0] for k in merged_ops(sess)] == ["head1+head2"]


def test_merged_heads_at_every_size():
    model = heads(h="H", w="W")
    sess = qpi.load(model, plan_cache=4)
    for h, w in [(12, 10), (1, 1), (7, 33)]:
        x = rand((1, 16, h, w), h + w)
        close(sess.run(x), ort_run(model, {"x": x}))


def test_views_are_checked():
    p = _engine.Plan(1)
    c = p.add_tensor("c", [1, 4], 0, np.zeros(4, np.float32))
    a = p.add_tensor("a", [1, 8, 2, 2], 0)
    nc4 = p.add_tensor("n", [1, 8, 2, 2], 1)
    with pytest.raises(ValueError, match="computed f32"):
        p.add_view("vc", c, 0, [1, 2])
    with pytest.raises(ValueError, match="whole channel blocks"):
        p.add_view("vn", nc4, 4, [1, 4, 2, 2])  # not on a block boundary
    with pytest.raises(ValueError, match="whole channel blocks"):
        p.add_view("vn", nc4, 0, [1, 3, 2, 2])  # a partial block not at the end
    p.add_view("vn", nc4, 16, [1, 4, 2, 2])  # the second block
    with pytest.raises(ValueError, match="outside"):
        p.add_view("far", a, 20, [1, 4, 2, 2])
    with pytest.raises(ValueError, match="outside"):
        p.add_view("neg", a, -1, [1])
    v = p.add_view("v", a, 16, [1, 4, 2, 2])
    with pytest.raises(ValueError, match="writes a read-only view"):
        p.add_op("relu", "r", [a], [v], {"act": [1]}, {}, [])
    with pytest.raises(ValueError, match="graph outputs"):
        p.set_io([], [v])


def ssh(c=16, h=12, w=10, oc3=8, oc5=4, extra_member=None):
    """RetinaFace's SSH block on an NC4HW4 map: a 3x3 branch (no activation),
    a 3x3 -> LeakyRelu branch that feeds two more 3x3 convs (one with
    LeakyRelu, then one more), all concatenated and Relu'd. The 3x3 convs
    that read one map merge, each keeping its activation."""
    nodes, inits = conv("body", "x", "f", 8, c, k=3, seed=1)
    parts = [("c3", "f", "b3", c, oc3, None), ("c5_1", "f", "b5", c, oc5, "leaky"),
             ("c5_2", "b5", "o5", oc5, oc5, None), ("c7_2", "b5", "b7", oc5, oc5, "leaky"),
             ("c7_3", "b7", "o7", oc5, oc5, None)]
    if extra_member:
        parts.insert(1, ("cx", "f", "bx", c, extra_member, "leaky"))
    for i, (name, src, dst, ci, co, act) in enumerate(parts):
        out = dst + "_pre" if act else dst
        nd, it = conv(name, src, out, ci, co, k=3, seed=40 + 2 * i)
        nodes += nd
        inits += it
        if act:
            nodes.append(helper.make_node("LeakyRelu", [out], [dst], alpha=0.1))
    cat = ["b3", "o5", "o7"] + (["bx"] if extra_member else [])
    nodes += [helper.make_node("Concat", cat, ["cat"], axis=1), helper.make_node("Relu", ["cat"], ["y"])]
    return make_model(nodes, [("x", [1, 8, h, w])], [("y", None)], inits)


@pytest.mark.parametrize("wino", ["auto", "0", "2", "4", "6"])
@pytest.mark.parametrize("cap", [None, "generic"])
def test_kxk_siblings_merge_keeping_their_activations(wino, cap, monkeypatch):
    monkeypatch.setenv("QPI_WINOGRAD", wino)  # Winograd tile sizes and the direct GEMM (0)
    model = ssh()
    x = rand((1, 8, 12, 10), 3)
    if cap:
        with isa_cap(cap):
            sess = qpi.load(model)
    else:
        sess = qpi.load(model)
    close(sess.run(x), ort_run(model, {"x": x}))
    assert [k[0] for k in merged_ops(sess)] == ["c3+c5_1", "c5_2+c7_2"], sess.kernels()


@pytest.mark.parametrize("oc3, oc5, extra, merged", [
    (6, 4, None, ["c5_1+c3", "c5_2+c7_2"]),     # the 6-channel member goes last
    (8, 6, None, ["c3+c5_1"]),                  # c5_2, c7_2: both 6 channels, no merge
    (6, 8, 2, ["c5_1+c3", "c5_2+c7_2"]),        # two partial-block members: one stays alone
    (8, 4, 12, ["c3+cx+c5_1", "c5_2+c7_2"]),    # three members, three activations
])
def test_kxk_sibling_channel_counts(oc3, oc5, extra, merged):
    model = ssh(oc3=oc3, oc5=oc5, extra_member=extra)
    x = rand((1, 8, 12, 10), 4)
    sess = qpi.load(model)
    close(sess.run(x), ort_run(model, {"x": x}))
    assert [k[0] for k in merged_ops(sess)] == merged, sess.kernels()


def test_activation_runs_are_checked():
    p = _engine.Plan(1)
    x = p.add_tensor("x", [1, 8, 4, 4], 1)
    y = p.add_tensor("y", [1, 8, 4, 4], 1)
    base = dict(kernel=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=[1])
    w = [np.zeros(8 * 8 * 9, np.float32)]
    for ints, floats, msg in [
        ({"act_ch": [6, 2], "acts": [1, 3]}, {"acts_a": [0, 0.1], "acts_b": [0, 0]}, "multiple of 4"),
        ({"act_ch": [4, 2], "acts": [1, 3]}, {"acts_a": [0, 0.1], "acts_b": [0, 0]}, "cover 6 of 8"),
        ({"act_ch": [4, 4], "acts": [1, 99]}, {"acts_a": [0, 0.1], "acts_b": [0, 0]}, "out of range"),
        ({"act_ch": [4, 4], "acts": [1]}, {"acts_a": [0], "acts_b": [0]}, "has 1 values"),
    ]:
        with pytest.raises(ValueError, match=msg):
            p.add_op("conv2d", "c", [x], [y], {**base, **ints}, floats, w)
