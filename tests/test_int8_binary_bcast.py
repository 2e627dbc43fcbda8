"""int8 Add / Mul with a broadcast operand (kernels/binary_bcast_s8/): a map
times one value per channel ([N or 1, C, 1, 1]: the squeeze-excite gate) or a
scalar, the small operand first or second.

- every QPI_MAX_ISA level below the machine's (qpi.testing.isa_cap) against the
  generic plan, byte for byte (tolerance 0: int8 results are the same bytes on
  every ISA), each level's kernel named;
- the plan keeps the op in int8 (no fp32 Mul / Add between a Dequantize and a
  Quantize);
- onnxruntime on the same QDQ file: within one output step (the requantization
  rounds the product of the two dequantized values once; onnxruntime rounds in
  float too, in another order)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from int8_models import QDQ

from conftest import ort_session

ISA = qpi.cpu_info()["isa"]
LEVELS = isa_levels()
KERNEL = {"avx2": "binary_bcast_s8_avx2", "avx512": "binary_bcast_s8_avx512",
          "avx512_vnni": "binary_bcast_s8_avx512", "neon": "binary_bcast_s8_neon",
          "neon_dotprod": "binary_bcast_s8_neon"}

# (map shape, small operand shape, small operand first)
CASES = [
    ((1, 16, 7, 7), (1, 16, 1, 1), False),
    ((1, 96, 14, 14), (1, 96, 1, 1), False),  # MobileNetV3's SE
    ((1, 24, 5, 9), (1, 24, 1, 1), True),  # gate first
    ((2, 40, 3, 5), (2, 40, 1, 1), False),  # one gate per image
    ((2, 37, 4, 3), (1, 37, 1, 1), False),  # one gate for both images, C % 8 and % 16 tails
    ((1, 3, 6, 6), (1, 3, 1, 1), False),  # below one vector
    ((1, 17, 1, 1), (1, 17, 1, 1), False),  # 1x1 map (same shape: binary_s8 proper)
    ((1, 1152, 7, 7), (1, 1152, 1, 1), False),  # EfficientNet's last SE
    ((1, 33, 5, 5), (1,), False),  # scalar
    ((2, 8, 3, 3), (), True),  # rank-0 scalar first
]
PARAMS = [(0, 0, 0, 0.05, 0.05, 0.1), (-128, 127, 5, 0.02, 0.3, 0.07), (-10, -128, -128, 0.03, 1 / 255, 0.03),
          (60, -60, -128, 0.5, 0.001, 0.02), (0, 0, 0, 2.0, 2.0, 1e-3)]  # the last saturates at lo / hi


def _model(op, shape, small, first, act, za, zb, zy, sa, sb, sy):
    b = QDQ(act)
    xa, xb = b.q("a", sa, za), b.q("g", sb, zb)
    y = b.q(b.node(op, [xb, xa] if first else [xa, xb]), sy, zy)
    return b.model([("a", list(shape)), ("g", list(small))], [y])


def _feeds(rng, shape, small, sa, sb):
    return [(rng.standard_normal(shape) * sa * 50).astype(np.float32),
            np.asarray(rng.standard_normal(small) * sb * 50, dtype=np.float32)]


@pytest.mark.parametrize("op", ["Mul", "Add"])
@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}_by_{'x'.join(map(str, c[1])) or 's'}"
                         + ("_first" if c[2] else ""))
def test_every_isa_level_same_bytes(case, act, op):
    shape, small, first = case
    rng = np.random.default_rng(sum(shape))
    for prm in PARAMS:
        m = _model(op, shape, small, first, act, *prm)
        feeds = _feeds(rng, shape, small, prm[3], prm[4])
        ref = None
        for lv in LEVELS:
            with isa_cap(lv):
                s = qpi.load(m, precision="int8", threads=2)
            ks = [k for _, _, k in s.kernels()]
            assert not any(k.startswith("binary_flat") or k.startswith("binary_bcast_") and "s8" not in k
                           for k in ks), ks  # stays int8
            y = s.run(feeds)[0]
            if ref is None:
                ref = y
                assert any(k in ("binary_bcast_s8_generic", "binary_s8_generic") for k in ks), ks
            else:
                if small != shape[:2] + (1, 1) or shape[2:] != (1, 1):
                    assert KERNEL[lv] in ks, (lv, ks)
                np.testing.assert_array_equal(y, ref, err_msg=f"{lv} {prm}")


@pytest.mark.parametrize("op", ["Mul", "Add"])
@pytest.mark.parametrize("case", CASES[:6] + CASES[8:], ids=str)
def test_matches_onnxruntime(case, op):
    shape, small, first = case
    rng = np.random.default_rng(7)
    for prm in PARAMS[:4]:
        m = _model(op, shape, small, first, "s8", *prm)
        feeds = _feeds(rng, shape, small, prm[3], prm[4])
        y = qpi.load(m, precision="int8").run(feeds)[0]
        r = ort_session(m).run(
            None, {"a": feeds[0], "g": feeds[1]})[0]
        # one output step: s_y
        assert np.abs(y - r).max() <= prm[5] * 1.001, (prm, np.abs(y - r).max())


@pytest.mark.parametrize("op,first", [("Mul", False), ("Add", True), ("Sub", False), ("Sub", True), ("Div", False),
                                      ("Div", True)])
def test_scalar_constant_operand_is_a_table_composed_with_the_one_before(op, first):
    """x op c with c a float scalar constant (PP-LCNetV3's learnable affine after each hard-swish) is a
    256-entry table, and a table reading a table's only output becomes one table: HardSwish -> Mul -> op
    is one table_s8 pass. The table holds what the float ops compute between the file's Q / DQ pairs,
    so the bytes are onnxruntime's within one step."""
    shape = [1, 24, 7, 9]
    b = QDQ("s8")
    x = b.q("x", 0.05, 3)
    h = b.q(b.node("HardSwish", [x]), 0.03, -90)
    k = b.const("k", np.float32(1.7))
    m = b.q(b.node("Mul", [h, k]), 0.05, -60)
    c = b.const("c", np.float32(-0.4 if op != "Div" else 2.5))
    y = b.q(b.node(op, [c, m] if first else [m, c]), 0.06, 10)
    model = b.model([("x", shape)], [y], opset=14)
    xs = (np.random.default_rng(9).standard_normal(shape) * 2).astype(np.float32)
    s = qpi.load(model, precision="int8")
    ks = s.kernels(precision=True)
    assert [k for _, o, k, _ in ks if o == "table_s8"] and len([1 for _, o, _, _ in ks if o == "table_s8"]) == 1, ks
    assert not [k for k in ks if k[3] == "fp32"], ks
    got = s.run(xs)[0]
    ref = ort_session(model).run(None, {"x": xs})[0]
    assert np.abs(got - ref).max() <= 0.06 * 1.001, np.abs(got - ref).max()


@pytest.mark.parametrize("op,first,fn", [("Mul", False, "Sigmoid"), ("Mul", True, "Sigmoid"), ("Add", False, "Tanh"),
                                         ("Mul", False, "HardSigmoid")])
def test_map_op_table_of_itself_is_one_table(op, first, fn):
    """x * sigmoid(x) written as two ops (how torchvision / ultralytics export SiLU): every output byte
    depends on one byte of x, so Sigmoid -> Mul is one table_s8 pass and no binary_s8. The table holds
    what the float ops compute between the file's Q / DQ pairs: onnxruntime's bytes within one step,
    and the same bytes at every level."""
    shape = [2, 19, 7, 9]
    b = QDQ("s8")
    x = b.q("x", 0.04, -7)
    f = b.q(b.node(fn, [x]), 1 / 255 if fn != "Tanh" else 1 / 127, -128 if fn != "Tanh" else 0)
    y = b.q(b.node(op, [f, x] if first else [x, f]), 0.03, -100)
    model = b.model([("x", shape)], [y])
    xs = (np.random.default_rng(3).standard_normal(shape) * 3).astype(np.float32)
    ref = ort_session(model).run(None, {"x": xs})[0]
    first_bytes = None
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(model, precision="int8")
        ks = s.kernels(precision=True)
        assert len([1 for _, o, _, _ in ks if o == "table_s8"]) == 1, ks
        assert not [k for k in ks if k[1] == "binary_s8" or k[3] == "fp32"], ks
        got = s.run(xs)[0]
        assert np.abs(got - ref).max() <= 0.03 * 1.001, (lv, np.abs(got - ref).max())
        if first_bytes is None:
            first_bytes = got
        np.testing.assert_array_equal(got, first_bytes, err_msg=lv)
