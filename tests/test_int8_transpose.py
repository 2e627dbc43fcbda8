"""int8 Transpose and the head split / merge of attention in int8 (kernels/transpose_s8, ops/shape.py
fold_transpose / fold_split_any):
- every transpose_s8 table entry (generic, the portable tiled walk, the AVX2 / NEON tiles of the machine)
  against numpy's transpose (data movement: exact) over ranks 2-6, odd dims, size-1 dims, short trailing rows,
  whole 16 x 16 / 16 x 4 / 4 x 16 SIMD blocks and their edges, all 24 perms of rank 4 and a sample of rank
  5 / 6, 1 and 2 threads, at every QPI_MAX_ISA level the machine allows;
- a calibrated ViT attention block (qkv -> Reshape -> Transpose -> Split -> Squeeze -> Q.K^T / Softmax / P.V ->
  Transpose -> Reshape -> proj) runs its whole head split / merge in int8 (no fp32 Transpose, no Quantize /
  Dequantize inside the block) and matches onnxruntime on the same QDQ file."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import ort_session

LEVELS = ["generic", "avx2", "avx512", "neon"]


def _levels():
    cur = _engine.diag.current_isa()
    out = ["generic"]
    for lv in ("avx2", "avx512", "neon"):
        if cur.startswith(lv[:4]) and (lv != "avx512" or cur.startswith("avx512")):
            out.append(lv)
    return out


def _cases():
    rng = np.random.default_rng(5)
    cases = [((3, 5), (1, 0)), ((1, 7), (1, 0)), ((33, 17), (1, 0)), ((7, 1, 9), (2, 0, 1)),
             ((2, 3, 4, 5, 6), (2, 0, 3, 1, 4)), ((3, 1, 2, 17, 8), (2, 0, 3, 1, 4)),  # qkv head split
             ((1, 4, 37, 8), (0, 2, 1, 3)), ((1, 4, 37, 8), (0, 1, 3, 2)),  # merge, K^T
             ((64, 2, 16, 2), (0, 2, 1, 3)), ((5, 3, 7, 4), (0, 2, 1, 3)), ((5, 3, 7, 8), (0, 2, 1, 3)),
             ((1, 3, 33, 65), (0, 2, 3, 1)), ((2, 2, 3, 3, 2, 2), (0, 3, 5, 1, 2, 4)),
             # whole 16 x 16 blocks of the SIMD tiles and their edges
             ((40, 70), (1, 0)), ((32, 48), (1, 0)), ((2, 37, 50), (0, 2, 1)), ((1, 4, 256, 16), (0, 1, 3, 2)),
             ((17, 33, 48), (2, 1, 0)), ((4, 100), (1, 0)), ((100, 4), (1, 0)), ((64, 37, 4), (2, 1, 0)),
             ((4, 3, 50), (2, 1, 0)), ((1, 4, 256, 16), (0, 2, 3, 1)), ((3, 4, 33), (0, 2, 1)), ((3, 33, 4), (0, 2, 1)),
             ((1, 37, 3, 4, 16), (2, 0, 3, 1, 4)), ((5, 7, 16), (1, 0, 2)), ((3, 5, 8), (1, 0, 2)), ((3, 16, 17, 2), (0, 2, 1, 3)), ((2, 31, 3, 65), (3, 1, 2, 0)),
             # the NEON tile (transpose_s8_tiled_neon): exact 16 x 16 blocks, batches of them, 16 x 4 / 4 x 16 blocks
             # with contiguous 64 bytes (st4 / ld4) and strided ones (zip / uzp), MobileViT-xxs's K^T, unfold and
             # fold of its 256-token stage, a plain 256 x 64
             ((16, 16), (1, 0)), ((3, 32, 48), (0, 2, 1)), ((4, 16), (1, 0)), ((16, 4), (1, 0)), ((33, 4), (1, 0)),
             ((48, 3, 4), (2, 1, 0)), ((4, 5, 33), (2, 1, 0)), ((16, 256, 16), (0, 2, 1)), ((64, 256, 4), (2, 1, 0)),
             ((4, 256, 64), (2, 1, 0)), ((256, 64), (1, 0))]
    for perm in itertools.permutations(range(4)):
        cases.append(((3, 5, 7, 9), perm))
        cases.append(((2, 1, 19, 4), perm))
    for _ in range(10):
        r = int(rng.integers(5, 7))
        shape = tuple(int(v) for v in rng.integers(1, 8, r))
        cases.append((shape, tuple(int(v) for v in rng.permutation(r))))
    return cases


@pytest.mark.parametrize("shape,perm", _cases(), ids=lambda v: "x".join(map(str, v)))
def test_transpose_s8_kernels_match_numpy(shape, perm):
    rng = np.random.default_rng(sum(shape) + 7 * len(perm))
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    want = np.transpose(x, perm)
    names = _engine.diag.transpose_s8_kernels()
    assert names[-1] == "transpose_s8_generic"
    ran, levels = set(), _levels()
    for lv in levels:
        with isa_cap(lv):
            for k in names:
                for threads in (1, 2):
                    try:
                        got = _engine.diag.transpose_s8_run(k, x.reshape(-1), list(shape), list(perm), threads)
                    except ValueError as e:
                        assert "above the ISA cap" in str(e), (k, lv, e)
                        assert not (lv == levels[-1] and lv != "generic"), (k, lv, e)  # variants of this level run
                        continue
                    ran.add(k)
                    np.testing.assert_array_equal(got, want, err_msg=f"{k} at {lv}, {threads} threads")
    assert {"transpose_s8_tiled", "transpose_s8_generic"} <= ran
    if levels[-1] != "generic":
        assert ran == set(names)  # at the machine's own level every variant built for it runs


def test_transpose_s8_large_parallel():
    """Above the parallel threshold (256 KiB): the pool's chunks cover every tile once."""
    x = np.random.default_rng(2).integers(-128, 128, (1, 4, 257, 261), dtype=np.int8)
    for k in _engine.diag.transpose_s8_kernels()[:-1]:
        if k.endswith("_avx2") and not _engine.diag.current_isa().startswith("avx"):
            continue
        for perm in ((0, 1, 3, 2), (0, 2, 1, 3), (3, 2, 1, 0)):
            got = _engine.diag.transpose_s8_run(k, x.reshape(-1), list(x.shape), list(perm), 2)
            np.testing.assert_array_equal(got, np.transpose(x, perm), err_msg=k)


def test_transpose_s8_run_checks():
    x = np.zeros(6, np.int8)
    with pytest.raises(ValueError):
        _engine.diag.transpose_s8_run("transpose_s8_tiled", x, [2, 3], [0, 0], 1)
    with pytest.raises(ValueError):
        _engine.diag.transpose_s8_run("transpose_s8_tiled", x, [2, 4], [1, 0], 1)
    with pytest.raises(ValueError):
        _engine.diag.transpose_s8_run("nope", x, [2, 3], [1, 0], 1)


def test_attention_head_split_and_merge_run_in_int8():
    """The calibrated attention block of test_matmul_s8.py: its Transposes, Split and Squeezes run in int8
    (transpose_s8, slice_rows_s8, copies), no fp32 op is left between the qkv projection and proj, the bytes
    are the same at every level, and the output is onnxruntime's on the same QDQ file within 4 output steps
    (as test_calibrated_attention_runs_its_matmuls_in_int8 bounds it)."""
    ort = pytest.importorskip("onnxruntime")
    from test_matmul_s8 import _attention, _calibrated

    m = _attention()
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1, 24, 16)).astype(np.float32) for _ in range(4)]
    q = _calibrated(m, xs)
    s = qpi.load(q, precision="int8")
    prec = s.kernels(precision=True)
    by = {node: (op, p) for node, op, _, p in prec}
    for name in ("t5", "kt", "ot"):
        assert by.get(name, ("", ""))[0] == "transpose_s8", prec
    assert sum(1 for k in prec if k[1] == "slice_rows_s8") >= 2, prec
    # the graph input's quantize and the output's dequantize only: everything between runs in int8
    assert [k[1] for k in prec if k[3] != "int8"] == ["quantize", "dequantize"], prec
    got = s.run(xs[0])[0]
    for lv in _levels():
        with isa_cap(lv):
            np.testing.assert_array_equal(qpi.load(q, precision="int8").run(xs[0])[0], got, err_msg=lv)
    ref = ort_session(q).run(None, {"x": xs[0]})[0]
    step = max(float(np.abs(ref).max()) / 127, 1e-6)
    assert np.abs(got - ref).max() <= 4 * step, (np.abs(got - ref).max(), step)


@pytest.mark.parametrize("shape,perm", [((1, 8, 5, 7), (0, 2, 1)), ((2, 3, 4, 9), (1, 0, 2)),
                                        ((1, 16, 6, 2), (2, 1, 0))], ids=str)
def test_nhwc_reshape_and_transpose_chain_is_exact(shape, perm):
    """A rank-4 int8 map (NHWC) reshaped to rank 3 (a byte transpose back to NCHW order), transposed, and
    reshaped to rank 4 again (read by nothing int8: NHWC, a byte transpose from plain): every op int8 between
    the input's quantize and the output's dequantize, the same bytes at every level, onnxruntime's values
    exactly (bytes move, one scale)."""
    ort = pytest.importorskip("onnxruntime")
    from int8_models import QDQ

    b = QDQ("s8")
    n, c, h, w = shape
    x = b.q("x", 0.05, 3)
    r3 = b.q(b.node("Reshape", [x, b.const("shp", np.array([n, c, h * w], np.int64))]), 0.05, 3)
    t = b.q(b.node("Transpose", [r3], perm=list(perm)), 0.05, 3)
    out_shape = [n, h, w, c]
    y = b.q(b.node("Reshape", [t, b.const("shp", np.array(out_shape, np.int64))]), 0.05, 3)
    m = b.model([("x", list(shape))], [y])
    xv = np.random.default_rng(3).standard_normal(shape).astype(np.float32) * 3
    ref = ort_session(m).run(None, {"x": xv})[0]
    for lv in _levels():
        with isa_cap(lv):
            s = qpi.load(m, precision="int8")
        prec = s.kernels(precision=True)
        assert [k[1] for k in prec if k[3] != "int8"] == ["quantize", "dequantize"], prec
        assert sum(1 for k in prec if k[1] == "transpose_s8") >= 2, prec
        np.testing.assert_array_equal(s.run(xv)[0], ref, err_msg=lv)
