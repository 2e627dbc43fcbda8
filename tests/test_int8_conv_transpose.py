"""int8 ConvTranspose (kernels/conv_transpose_s8/, ops/conv.py QConvTranspose).

- conv_transpose_s8_generic (the oracle) against a numpy int64 scatter of every
  (input pixel, tap) product, requantized in float32 as kernels/quant/requant.h
  says (round half to even, clamp) -- bit for bit;
- conv_transpose_s8_phase (SH x SW stride-1 phase convs on the int8 conv
  table) and conv_transpose_s8_gemm (non-overlapping taps: one 1x1 conv with
  the taps as output channels) byte for byte against the oracle at every QPI_MAX_ISA level of the
  machine (the phase convs pick their conv_s8 kernel at each level), 1 and 2
  threads: odd C / OC, k2s2, k3s2, k4s2, k3s1, k1s2 (phases no tap reaches),
  k3s3, dilation, groups 1 / 2 / C (depthwise, channel multiplier 2), pads
  (asymmetric; beyond the kernel's reach: the phase conv starts inside the
  input), output_padding, 1x1 maps, N = 2, LeakyRelu, clamps, extreme and
  saturating values;
- a QDQ ConvTranspose model: the plans of every level give the same bytes, and
  they are within one output step of onnxruntime running the same file;
- PP-OCRv4 det calibrated by qpi: >= 98% of its conv MACs in int8 kernels
  (skipped when the asset is absent)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import isa_cap, isa_levels

from conftest import assets_dir, ort_session
from int8_models import QDQ

ISA = qpi.cpu_info()["isa"]
LEVELS = isa_levels()
ASSETS = assets_dir()  # read directly: under QPI_MAX_ISA the PP-OCR test skips by design (conftest's asset gate)


def _out_size(h, k, s, pb, pe, op, d):
    return s * (h - 1) + op + (k - 1) * d + 1 - pb - pe


def ct_s8(kernel, x, w, bias, m, m_neg=None, *, stride=(1, 1), pad=(0, 0, 0, 0), out_pad=(0, 0), dilation=(1, 1),
          group=1, zp_in=0, zp_out=0, lo=-128, hi=127, threads=1):
    """One table entry by name: x int8 NHWC, w int8 [C, OC / group, kh, kw], bias int32 (no zero point folded)."""
    n, h, wd, c = x.shape
    _, ocg, kh, kw = w.shape
    oh = _out_size(h, kh, stride[0], pad[0], pad[2], out_pad[0], dilation[0])
    ow = _out_size(wd, kw, stride[1], pad[1], pad[3], out_pad[1], dilation[1])
    leaky = m_neg is not None
    m = np.ascontiguousarray(m, np.float32)
    m_neg = np.ascontiguousarray(m if m_neg is None else m_neg, np.float32)
    params = [n, c, h, wd, ocg * group, oh, ow, kh, kw, stride[0], stride[1], pad[0], pad[1], dilation[0],
              dilation[1], group, zp_in, zp_out, lo, hi, int(leaky)]
    y, inner = _engine.diag.conv_transpose_s8_run(kernel, np.ascontiguousarray(x, np.int8),
                                                  np.ascontiguousarray(w, np.int8),
                                                  np.ascontiguousarray(bias, np.int32), m, m_neg, params, threads)
    return y, inner


def reference(x, w, bias, m, m_neg=None, *, stride=(1, 1), pad=(0, 0, 0, 0), out_pad=(0, 0), dilation=(1, 1),
              group=1, zp_in=0, zp_out=0, lo=-128, hi=127):
    """numpy: scatter every input pixel times every tap (int64), crop the pads, requantize in float32"""
    n, h, wd, c = x.shape
    _, ocg, kh, kw = w.shape
    icg, oc = c // group, ocg * group
    oh = _out_size(h, kh, stride[0], pad[0], pad[2], out_pad[0], dilation[0])
    ow = _out_size(wd, kw, stride[1], pad[1], pad[3], out_pad[1], dilation[1])
    full = np.zeros((n, pad[0] + oh + stride[0] * h + kh * dilation[0], pad[1] + ow + stride[1] * wd + kw * dilation[1],
                     oc), np.int64)
    xs = x.astype(np.int64) - zp_in
    for g in range(group):
        xg = xs[..., g * icg:(g + 1) * icg]
        for ky in range(kh):
            for kx in range(kw):
                wg = w[g * icg:(g + 1) * icg, :, ky, kx].astype(np.int64)
                oy, ox = ky * dilation[0], kx * dilation[1]
                full[:, oy:oy + stride[0] * (h - 1) + 1:stride[0], ox:ox + stride[1] * (wd - 1) + 1:stride[1],
                     g * ocg:(g + 1) * ocg] += np.einsum("nhwc,cj->nhwj", xg, wg)
    acc = full[:, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow] + bias.astype(np.int64)
    acc = acc.astype(np.int32)  # the kernels' int32 accumulator (the sweep keeps sums in range)
    mm = np.broadcast_to(np.asarray(m, np.float32), acc.shape)
    if m_neg is not None:
        mm = np.where(acc < 0, np.broadcast_to(np.asarray(m_neg, np.float32), acc.shape), mm)
    v = np.clip(acc.astype(np.float32) * mm, np.float32(-65536), np.float32(65536))
    return np.clip(np.rint(v).astype(np.int64) + zp_out, lo, hi).astype(np.int8)


# (N, C, OC, group, H, W, (kh, kw), (sh, sw), (pt, pl, pb, pr), (oph, opw), (dh, dw))
CASES = [
    (1, 5, 7, 1, 6, 7, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1)),  # k2s2, odd channels
    (2, 17, 9, 1, 5, 3, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), (1, 1)),  # k2s2, N = 2, output_padding
    (1, 64, 16, 1, 9, 11, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1)),  # PP-OCR head's shape
    (1, 3, 5, 1, 7, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1)),  # k3s2 p1 op1 (2x upsampling)
    (1, 11, 13, 1, 5, 8, (3, 3), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1)),
    (2, 6, 10, 1, 4, 5, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1)),  # k4s2 p1
    (1, 9, 7, 1, 6, 6, (3, 3), (1, 1), (1, 1, 1, 1), (0, 0), (1, 1)),  # k3s1
    (1, 8, 6, 2, 7, 5, (3, 3), (2, 2), (1, 0, 2, 1), (1, 0), (1, 1)),  # groups 2, asymmetric pads
    (1, 12, 12, 12, 6, 7, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1)),  # depthwise
    (2, 5, 5, 5, 5, 4, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1)),  # depthwise, odd C
    (1, 4, 8, 4, 5, 5, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1)),  # channel multiplier 2
    (1, 6, 9, 3, 4, 6, (3, 2), (2, 3), (0, 1, 1, 0), (1, 2), (1, 1)),  # non-square, groups 3
    (1, 7, 5, 1, 1, 1, (3, 3), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1)),  # 1x1 map
    (2, 3, 4, 1, 1, 1, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1)),
    (1, 5, 6, 1, 5, 4, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), (1, 1)),  # k1s2: phases no tap reaches
    (1, 4, 3, 1, 4, 5, (2, 3), (3, 3), (0, 1, 0, 1), (2, 0), (1, 1)),  # k < s
    (1, 6, 5, 1, 4, 4, (3, 3), (3, 3), (1, 1, 1, 1), (0, 0), (1, 1)),  # k3s3
    (1, 5, 6, 1, 5, 5, (3, 3), (2, 2), (1, 1, 0, 0), (0, 1), (2, 2)),  # dilation 2 (gcd(d, s) = 2)
    (1, 4, 7, 1, 6, 5, (3, 3), (2, 2), (2, 2, 1, 1), (0, 0), (3, 3)),  # dilation 3 (odd: every phase)
    (1, 6, 4, 2, 5, 6, (3, 3), (1, 1), (2, 2, 2, 2), (0, 0), (2, 1)),  # k3s1 d2, groups 2
    (1, 3, 5, 1, 6, 6, (3, 3), (1, 1), (3, 0, 3, 0), (0, 0), (1, 1)),  # pad beyond the kernel's reach
    (2, 4, 6, 1, 5, 7, (2, 2), (3, 3), (2, 4, 1, 3), (1, 2), (1, 1)),  # the same at k < s
    (1, 6, 6, 3, 6, 6, (3, 3), (2, 2), (4, 3, 2, 3), (1, 0), (2, 2)),  # and with dilation, groups
    (1, 16, 24, 1, 9, 9, (4, 4), (4, 4), (0, 0, 0, 0), (0, 0), (1, 1)),  # 4x4 / s4
]
IDS = [f"n{c[0]}_c{c[1]}o{c[2]}g{c[3]}_{c[4]}x{c[5]}_k{c[6][0]}{c[6][1]}s{c[7][0]}{c[7][1]}"
       f"_p{''.join(map(str, c[8]))}_op{c[9][0]}{c[9][1]}_d{c[10][0]}{c[10][1]}" for c in CASES]


def _geometry(case):
    n, c, oc, g, h, wd, k, s, pad, op, d = case
    return dict(stride=s, pad=pad, out_pad=op, dilation=d, group=g)


def _args(case, rng, leaky=False, extreme=False, scale=None):
    n, c, oc, g, h, wd, (kh, kw), *_ = case
    if extreme:  # every product +-128 * 127
        x = rng.choice(np.array([-128, 127], np.int8), (n, h, wd, c))
        w = rng.choice(np.array([-127, 127], np.int8), (c, oc // g, kh, kw))
    else:
        x = rng.integers(-128, 128, (n, h, wd, c), dtype=np.int8)
        w = rng.integers(-127, 128, (c, oc // g, kh, kw), dtype=np.int8)
    bias = rng.integers(-20000, 20000, oc).astype(np.int32)
    taps = (c // g) * kh * kw
    m = (rng.uniform(0.3, 3.0, oc) / (128 * 127 * np.sqrt(taps)) * 40 if scale is None
         else np.full(oc, scale)).astype(np.float32)
    m_neg = (m * rng.uniform(0.0, 0.5, m.size)).astype(np.float32) if leaky else None
    return x, w, bias, m, m_neg


CONFIGS = [dict(), dict(leaky=True), dict(extreme=True), dict(scale=1e3), dict(scale=1e-6)]


def _kw(i, rng, case):
    lo, hi = (-128, 127) if i % 2 == 0 else (-37, 90)
    return dict(_geometry(case), zp_in=int(rng.integers(-128, 128)), zp_out=int(rng.integers(-128, 128)), lo=lo, hi=hi)


def _check(got, ref, what):
    if not np.array_equal(got, ref):
        bad = np.argwhere(got != ref)
        pytest.fail(f"{what}: {len(bad)} of {got.size} bytes differ, first at {tuple(bad[0])}: "
                    f"{got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")


def test_table():
    assert _engine.diag.conv_transpose_s8_kernels() == ["conv_transpose_s8_gemm", "conv_transpose_s8_phase",
                                                     "conv_transpose_s8_generic"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_generic_matches_numpy(case):
    rng = np.random.default_rng(sum(case[:6]))
    for i, cfg in enumerate(CONFIGS):
        x, w, bias, m, m_neg = _args(case, rng, **cfg)
        kw = _kw(i, rng, case)
        got, _ = ct_s8("conv_transpose_s8_generic", x, w, bias, m, m_neg, **kw)
        _check(got, reference(x, w, bias, m, m_neg, **kw), f"generic {cfg}")


def _variants(case):
    """the table's fast entries that take the case (gemm: non-overlapping taps, group 1, no dilation)"""
    n, c, oc, g, h, wd, k, s, pad, op, d = case
    v = ["conv_transpose_s8_phase"]
    if g == 1 and d == (1, 1) and k[0] <= s[0] and k[1] <= s[1]:
        v.append("conv_transpose_s8_gemm")
    return v


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_variants_bit_exact_every_level(case):
    rng = np.random.default_rng(sum(case[:6]) + 1)
    data = [(cfg, _args(case, rng, **cfg), _kw(i, rng, case)) for i, cfg in enumerate(CONFIGS)]
    for v in {"conv_transpose_s8_phase", "conv_transpose_s8_gemm"} - set(_variants(case)):
        with pytest.raises(ValueError, match="does not apply"):
            ct_s8(v, *data[0][1], **data[0][2])
    for cfg, args, kw in data:
        ref, _ = ct_s8("conv_transpose_s8_generic", *args, **kw)
        for lv in LEVELS:
            with isa_cap(lv):
                for v in _variants(case):
                    for threads in (1, 2):
                        got, inner = ct_s8(v, *args, **kw, threads=threads)
                        _check(got, ref, f"{v} at {lv} ({inner}) {cfg} threads {threads}")


def convt_model(C, OC, H, W, k, stride, pads, out_pad=(0, 0), group=1, zp_in=0, zp_out=0, s_in=0.05, s_out=0.1,
                act="u8", relu=None, seed=0, dilation=1, per_tensor=False):
    """x -> Q/DQ -> ConvTranspose(int8 weights per output channel on axis 1, int32 bias) [-> Relu] -> Q/DQ -> y"""
    rng = np.random.default_rng(seed)
    b = QDQ(act)
    xq = b.q("x", s_in, zp_in)
    w = rng.integers(-127, 128, (C, OC // group, k, k))
    s_w = np.float32(0.004) if per_tensor else ((rng.random(OC // group) * 2 + 0.1) * 0.004).astype(np.float32)
    s_b = np.float32(s_in) * np.broadcast_to(s_w, (OC // group,)).astype(np.float32)
    ins = [xq, b.weights(w, s_w, axis=1)]
    if group == 1:
        ins.append(b.bias(rng.integers(-2000, 2000, OC), s_b))
    else:  # the per-channel int32 bias needs a scale per output channel: a float bias
        ins.append(b.const("bf", (rng.standard_normal(OC) * 0.2).astype(np.float32)))
    y = b.node("ConvTranspose", ins, name="convt", kernel_shape=[k, k], strides=[stride, stride], pads=list(pads),
               output_padding=list(out_pad), group=group, dilations=[dilation, dilation])
    if relu == "relu":
        y = b.node("Relu", [y])
    elif relu == "leaky":
        y = b.node("LeakyRelu", [y], alpha=0.1)
    out = b.q(y, s_out, zp_out)
    return b.model([("x", [1, C, H, W])], [out]), out


MODELS = [
    dict(C=16, OC=8, H=10, W=12, k=2, stride=2, pads=(0, 0, 0, 0)),
    dict(C=7, OC=9, H=9, W=7, k=3, stride=2, pads=(1, 1, 1, 1), out_pad=(1, 1), relu="relu"),
    dict(C=12, OC=6, H=6, W=8, k=4, stride=2, pads=(1, 1, 1, 1), relu="leaky", act="s8"),
    dict(C=8, OC=8, H=7, W=7, k=3, stride=1, pads=(1, 1, 1, 1), group=2, zp_in=5, zp_out=-20),
    dict(C=6, OC=6, H=5, W=6, k=4, stride=2, pads=(1, 1, 1, 1), group=6, per_tensor=True),
]


@pytest.mark.parametrize("spec", MODELS, ids=[f"k{s['k']}s{s['stride']}g{s.get('group', 1)}" for s in MODELS])
def test_qdq_model_levels_and_onnxruntime(spec):
    ort = pytest.importorskip("onnxruntime")
    m, _ = convt_model(seed=spec["C"], **spec)
    x = (np.random.default_rng(1).standard_normal((1, spec["C"], spec["H"], spec["W"])) * 3).astype(np.float32)
    outs = {}
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8", threads=1)
        ks = [k for _, _, k in s.kernels()]
        assert any(k.startswith(("conv_transpose_s8_phase", "conv_transpose_s8_gemm")) for k in ks), (lv, ks)
        outs[lv] = s.run(x)[0]
    for lv, y in outs.items():
        np.testing.assert_array_equal(y, outs["generic"], err_msg=lv)
    sess = ort_session(m)
    ref = sess.run(None, {"x": x})[0]
    step = 0.1  # s_out
    assert np.abs(outs["generic"] - ref).max() <= step * 1.001


@pytest.mark.qemu_heavy  # calibrating a 640x640 model under qemu takes minutes
@pytest.mark.skipif(bool(os.environ.get("QPI_MAX_ISA")), reason="calibration at a capped ISA level repeats the default run")
@pytest.mark.skipif(ASSETS is None, reason="assets not found: set QPI_ASSETS or put shared/assets beside the checkout")
def test_ppocr_det_int8_conv_macs():
    """PP-OCRv4 det, calibrated by qpi on the shared photos: both ConvTransposes run in int8 and >= 98% of
    the conv MACs are in int8 kernels (76% before: the ConvTransposes stayed fp32)"""
    PPOCR, IMAGES = ASSETS / "real" / "ch_PP-OCRv4_det_infer.onnx", ASSETS / "images"
    if not PPOCR.exists() or not IMAGES.is_dir():
        pytest.skip(f"{PPOCR} or {IMAGES} absent")
    import tempfile

    from qpi.ops import of

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "det.int8.onnx"
        qpi.calibrate(PPOCR, IMAGES, output=out, size=(640, 640), num_images=2, search=False, progress=False,
                      echo=lambda s: None)
        s = qpi.load(str(out), precision="int8", threads=2, shapes={"x": [1, 3, 320, 320]})
    g = s.graph
    total = int8 = 0
    for n in g.nodes:
        f = of(n).extra.get("macs")
        if f:
            total += f(g, n)
            int8 += f(g, n) if n.domain == "qpi" else 0
    assert [n.op for n in g.nodes].count("QConvTranspose") == 2
    assert int8 / total >= 0.98, (int8, total)
