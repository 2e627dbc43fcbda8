"""The engine checks what it indexes: malformed plan descriptions given
straight to qpi._engine.Plan are a ValueError naming the node, never a crash,
an IndexError or a silent overrun."""
import numpy as np
import pytest

from qpi import _engine

PLAIN, NC4 = 0, 1


def plan_with(shape_in, shape_out, layout_in=PLAIN, layout_out=PLAIN):
    p = _engine.Plan(1)
    x = p.add_tensor("x", list(shape_in), layout_in, None)
    y = p.add_tensor("y", list(shape_out), layout_out, None)
    return p, x, y


def test_pad_mode_out_of_range():
    p, x, y = plan_with([1, 2, 3, 3], [1, 2, 5, 5])
    for mode in (4, -1, 1000):
        with pytest.raises(ValueError, match="node 'pad_bad'.*mode"):
            p.add_op("pad", "pad_bad", [x], [y], {"begin": [0, 0, 1, 1], "mode": [mode]}, {"value": [0.0]}, [])


def test_global_pool_into_too_small_output():
    p, x, y = plan_with([1, 8, 4, 4], [1, 2, 1, 1], NC4, NC4)
    with pytest.raises(ValueError, match="node 'gp'.*global pool output"):
        p.add_op("global_pool", "gp", [x], [y], {"is_max": [0]}, {}, [])


def test_conv_short_bias_and_bad_attribute_lengths():
    p, x, y = plan_with([1, 3, 5, 5], [1, 4, 5, 5], NC4, NC4)
    ints = dict(kernel=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=[1])
    w = np.zeros(4 * 3 * 9, np.float32)
    with pytest.raises(ValueError, match="node 'c'.*bias has 2 values for 4"):
        p.add_op("conv2d", "c", [x], [y], ints, {}, [w, np.zeros(2, np.float32)])
    for key, bad in (("kernel", [3]), ("strides", [1]), ("pads", [1, 1]), ("dilations", []), ("strides", [0, 1])):
        with pytest.raises(ValueError, match=f"node 'c'.*'{key}'"):
            p.add_op("conv2d", "c", [x], [y], dict(ints, **{key: bad}), {}, [w])
    with pytest.raises(ValueError, match="node 'c'.*output shape"):
        p.add_op("conv2d", "c", [x], [y], dict(ints, pads=[0, 0, 0, 0]), {}, [w])


def test_missing_operands_and_bad_ids_are_value_errors():
    p, x, y = plan_with([2, 3], [2, 3])
    with pytest.raises(ValueError, match="node 'b'.*takes 2"):
        p.add_op("binary", "b", [x], [y], {"kind": [0]}, {}, [])
    with pytest.raises(ValueError, match="node 'b'.*tensor id 99"):
        p.add_op("binary", "b", [x, 99], [y], {"kind": [0]}, {}, [])
    with pytest.raises(ValueError, match="node 'b'.*kind"):
        p.add_op("binary", "b", [x, x], [y], {"kind": [99]}, {}, [])
    with pytest.raises(ValueError, match="node 'u'.*act"):
        p.add_op("unary", "u", [x], [y], {"act": [42]}, {}, [])
    with pytest.raises(ValueError, match="node 'm'.*mkn"):
        p.add_op("matmul", "m", [x, x], [y], {"mkn": [2], "a_off": [0], "b_off": [0]}, {}, [])
    with pytest.raises(ValueError, match="node 'm'.*offsets"):
        p.add_op("matmul", "m", [x, x], [y], {"mkn": [2, 3, 3], "a_off": [5], "b_off": [0]}, {}, [])
    with pytest.raises(ValueError, match="node 'r'.*lh"):
        q, a, b = plan_with([1, 1, 2, 2], [1, 1, 4, 4])
        q.add_op("resize", "r", [a], [b], {"h0": [0] * 4, "h1": [0] * 4, "w0": [0] * 4, "w1": [0] * 4}, {"lw": [0.0] * 4},
                 [])


def test_concat_checks_axis_and_extents():
    p = _engine.Plan(1)
    a = p.add_tensor("a", [1, 2, 3], PLAIN, None)
    b = p.add_tensor("b", [1, 2, 3], PLAIN, None)
    y = p.add_tensor("y", [1, 4, 3], PLAIN, None)
    for axis in (3, -1):
        with pytest.raises(ValueError, match="node 'cc'.*axis"):
            p.add_op("concat", "cc", [a, b], [y], {"axis": [axis]}, {}, [])
    short = p.add_tensor("short", [1, 3, 3], PLAIN, None)
    with pytest.raises(ValueError, match="node 'cc'.*add up"):
        p.add_op("concat", "cc", [a, b], [short], {"axis": [1]}, {}, [])
    with pytest.raises(ValueError, match="node 'cc'.*off the concat axis"):
        p.add_op("concat", "cc", [a, b], [y], {"axis": [0]}, {}, [])


def test_transpose_and_reduce_shapes():
    p, x, y = plan_with([2, 3], [2, 3])
    with pytest.raises(ValueError, match="node 't'.*permutation"):
        p.add_op("transpose", "t", [x], [y], {"perm": [0, 0]}, {}, [])
    with pytest.raises(ValueError, match="node 't'.*permuted"):
        p.add_op("transpose", "t", [x], [y], {"perm": [1, 0]}, {}, [])
    with pytest.raises(ValueError, match="node 'r'.*reduce output"):
        p.add_op("reduce", "r", [x], [y], {"axes": [1], "is_max": [0]}, {}, [])


def test_tensor_descriptions():
    p = _engine.Plan(1)
    with pytest.raises(ValueError, match="NC4HW4.* rank 4"):
        p.add_tensor("t", [2, 3], NC4, np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="too large|bad dimension"):
        p.add_tensor("t", [1 << 30, 1 << 30, 4], PLAIN, None)
    with pytest.raises(ValueError, match="does not exist"):
        p.set_io([5], [])
