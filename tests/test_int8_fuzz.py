"""Random int8 convolutions: every enabled variant against conv_s8_generic, bit
for bit, on geometry the fixed sweeps of test_int8_kernels.py and
test_int8_neon.py do not reach: pads that differ per side (past the window:
rows and columns of padding alone), strides and dilations that differ between h
and w, non square kernels, 1x1 convs with padding or stride, channel counts
around the kernels' block sizes and the F(4,3) limit, extreme inputs and
weights, both requantization tails (LeakyRelu, narrow clamps, saturating
scales), at 1 and 2 threads. Each call also checks that the kernel wrote
nothing outside its output (testing.conv_s8 guards both sides) and read nothing
outside its input (the input sits against unreadable pages: such a read kills
the run with SIGSEGV; rerun with -s to see the last case printed). The cases come
from fixed seeds, so a failure reproduces; the per-case message gives the
parameters. QPI_INT8_FUZZ_CASES sets the number of cases (a longer hunt:
QPI_INT8_FUZZ_CASES=5000)."""
from __future__ import annotations

import os
import signal
import subprocess

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8

from conftest import PYTHON

VARIANTS = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and isa != "generic"]
N_CASES = int(os.environ.get("QPI_INT8_FUZZ_CASES", 300))
# QPI_INT8_FUZZ_LARGE=1: maps four times larger (up to 163 pixels a side for depthwise, 99 otherwise), many
# GEMM chunks and thread splits
LARGE = bool(os.environ.get("QPI_INT8_FUZZ_LARGE"))
MAC_BUDGET = 60_000_000 if LARGE else 2_000_000


def _geometry(rng):
    """(N, C, H, W, OC, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw), group)"""
    kind = rng.choice(["dw", "pw", "k3", "other", "first"], p=[0.35, 0.25, 0.25, 0.1, 0.05])
    n = 2 if rng.random() < 0.15 else 1
    if kind == "dw":
        c = int(rng.choice([int(rng.integers(1, 71)), 8, 16, 32, 48, 64, 96, 144]))
        oc, g = c, c
        # 3x3 mostly; the KxK kernels' 5x5 / 7x7 (EfficientNet, MNASNet), one tap, non-square
        k = (3, 3) if rng.random() < 0.6 else [(5, 5), (5, 5), (7, 7), (1, 1), (3, 5), (9, 9)][int(rng.integers(0, 6))]
    elif kind == "pw":
        c = int(rng.choice([int(rng.integers(1, 200)), int(rng.integers(200, 641)), 16, 24, 32, 64]))
        oc, k, g = int(rng.integers(1, 81)), (1, 1), 1
    elif kind == "k3":
        c = int(rng.choice([int(rng.integers(1, 81)), int(rng.integers(220, 240)), 8, 16, 64]))
        oc, k, g = int(rng.integers(1, 71)), (3, 3), 1
    elif kind == "first":  # a first layer: at most 4 input channels (kernels/conv_first_s8/)
        c, oc, g = int(rng.integers(1, 5)), int(rng.integers(1, 70)), 1
        k = [(3, 3), (3, 3), (5, 5), (7, 7), (2, 2), (1, 1), (3, 5), (4, 4)][int(rng.integers(0, 8))]
    else:
        c, oc, g = int(rng.integers(1, 33)), int(rng.integers(1, 41)), 1
        k = [(2, 2), (5, 5), (7, 7), (1, 3), (3, 1), (1, 7)][int(rng.integers(0, 6))]
        if rng.random() < 0.5:  # grouped, not depthwise (kernels/conv_group_s8/)
            g = int(rng.integers(2, 9))
            c, oc = g * max(1, c // 4), g * max(2, oc // 4)
    s1 = kind == "k3" and rng.random() < 0.6  # Winograd's stride 1
    stride = (1, 1) if s1 else tuple(int(v) for v in rng.choice([1, 1, 2, 2, 3], 2))
    dil = (1, 1) if s1 or rng.random() < 0.8 else tuple(int(v) for v in rng.choice([1, 2], 2))
    # ONNX order top, left, bottom, right; past the window too
    pad = tuple(int(rng.integers(0, k[i % 2] + 3)) for i in range(4))
    if kind == "pw" and rng.random() < 0.7:
        pad = (0, 0, 0, 0)
    h, w = (int(v) for v in rng.integers(1, (41 if kind == "dw" else 25) * (4 if LARGE else 1), 2))
    return n, c, h, w, oc, k, stride, pad, dil, g


def _out_hw(h, w, k, stride, pad, dil):
    oh = (h + pad[0] + pad[2] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + pad[1] + pad[3] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    return oh, ow


def _case(i):
    rng = np.random.default_rng(9000 + i)
    while True:
        n, c, h, w, oc, k, stride, pad, dil, g = _geometry(rng)
        oh, ow = _out_hw(h, w, k, stride, pad, dil)
        while oh >= 1 and ow >= 1 and n * oh * ow * oc * (c // g) * k[0] * k[1] > MAC_BUDGET and (h > 1 or w > 1):
            h, w = max(1, h * 3 // 4), max(1, w * 3 // 4)
            oh, ow = _out_hw(h, w, k, stride, pad, dil)
        if oh >= 1 and ow >= 1 and n * oh * ow * oc * (c // g) * k[0] * k[1] <= MAC_BUDGET:
            break
    if rng.random() < 0.1:  # the largest sums the kernels must hold exactly
        x = rng.choice(np.array([-128, 127], np.int8), (n, h, w, c))
        wt = rng.choice(np.array([-127, 127], np.int8), (oc, c // g) + k)
    else:
        x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
        wt = rng.integers(-127, 128, (oc, c // g) + k, dtype=np.int8)
    bias = rng.integers(-300000, 300000, oc, dtype=np.int32)
    scale = float(rng.choice([10 ** rng.uniform(-5.5, -1), 1e3]))
    m = (rng.uniform(0.2, 1.0, oc) * scale).astype(np.float32)
    # one slope (LeakyRelu) or one per channel (PRelu)
    m_neg = (m * (float(rng.choice([0.1, 0.01, 0.25])) if rng.random() < 0.5 else rng.uniform(0, 0.5, m.size))
             ).astype(np.float32) if rng.random() < 0.3 else None
    lo, hi = -128, 127
    if rng.random() < 0.5:
        lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
    kw = dict(stride=stride, pad=pad, dilation=dil, group=g, zp_in=int(rng.integers(-128, 128)),
              zp_out=int(rng.integers(-128, 128)), lo=lo, hi=hi, threads=int(rng.choice([1, 2])))
    return (x, wt, bias, m, m_neg), kw


_PROBE = "import sys; from qpi import _engine; print('read', _engine.diag.guarded_read_probe(100, int(sys.argv[1])))"


def test_input_guard_faults_outside_the_input():
    # the guard the random cases rely on: bytes 0 and n - 1 of the guarded copies read, -1 and n fault
    # under the sanitizer build, ASan would turn the fault into an abort with its report
    env = {**os.environ, "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":handle_segv=0"}
    for off, inside in ((0, True), (99, True), (-1, False), (100, False)):
        r = subprocess.run([PYTHON, "-c", _PROBE, str(off)], capture_output=True, text=True, timeout=300, env=env)
        if inside:
            assert r.returncode == 0 and "read 2" in r.stdout, (off, r.returncode, r.stderr)
        else:
            # qemu-user re-raises the guest's SIGSEGV on itself; a shell in between reports 128 + 11
            assert r.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV), (off, r.returncode, r.stderr)
            assert "read" not in r.stdout


def test_random_convs_bit_exact_with_generic():
    if not VARIANTS:
        pytest.skip(f"no SIMD int8 conv variant at ISA {qpi.cpu_info()['isa']}")
    ran = {v: 0 for v in VARIANTS}
    for i in range(N_CASES):
        args, kw = _case(i)
        print(f"case {i}", flush=True)  # shown with -s: the case a read past the input killed
        ref = conv_s8("conv_s8_generic", *args, **{**kw, "threads": 1})
        n, h, w, c = args[0].shape
        oc, _, kh, kwd = args[1].shape
        oh, ow = _out_hw(h, w, (kh, kwd), kw["stride"], kw["pad"], kw["dilation"])
        assert ref.shape == (n, oh, ow, oc)
        for v in VARIANTS:
            try:
                got = conv_s8(v, *args, **kw)
            except ValueError as e:
                assert "does not apply" in str(e), e
                continue
            ran[v] += 1
            assert got.shape == ref.shape
            if not np.array_equal(got, ref):
                bad = np.argwhere(got != ref)
                pytest.fail(f"{v} case {i}: x {args[0].shape} w {args[1].shape} {kw} leaky {args[4] is not None}: "
                            f"{len(bad)} bytes differ, first at {tuple(bad[0])}: {got[tuple(bad[0])]} vs "
                            f"{ref[tuple(bad[0])]}")
    # the generator is not vacuous: every enabled variant met several cases it applies to
    print(ran)
    assert all(r >= 3 for r in ran.values()), ran
