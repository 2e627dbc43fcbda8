"""The int8 first-layer conv (kernels/conv_first_s8/: inputs of at most 4 channels, taps read 4 bytes at a time
from padded copies of the input rows) called by name against conv_s8_generic, byte for byte: 1 to 4 input
channels, kernels 1x1 to 7x7 and non-square, strides 1, 2, 4 and (2, 1), dilation, asymmetric and oversized
pads, output channel counts around the 16-channel blocks (8: two pixels a vector), widths around the 16-pixel
steps, batches, LeakyRelu's second multiplier, clamps, 1 and 2 threads. The input is read from guarded copies (qpi.testing.conv_s8): the
4-byte reads must stay inside the image. Plans choose the kernel for a first layer."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8, isa_cap

from int8_models import conv_model

FIRST = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and name.startswith("conv_s8_first")]
pytestmark = pytest.mark.skipif(not FIRST, reason=f"no first-layer int8 conv kernel at ISA {qpi.cpu_info()['isa']}")

# N, C, H, W, OC, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw)
CASES = [
    (1, 3, 224, 224, 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # the ImageNet stems: MobileNetV3 / MNASNet
    (1, 3, 33, 47, 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # MobileNetV2 / EfficientNet (32 channels)
    (1, 3, 48, 192, 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # PP-OCR cls
    (2, 3, 17, 19, 24, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # ShuffleNet's 24, a batch
    (1, 1, 13, 29, 13, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # 1 channel
    (1, 2, 9, 16, 33, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (1, 4, 11, 31, 64, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),  # 4 channels: the 4-byte read is the pixel
    (1, 3, 20, 20, 16, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),  # ResNet-style 7x7 s2
    (1, 3, 9, 10, 17, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # a 1x1 on 3 channels: the last pixel's read
    (1, 3, 12, 15, 16, (6, 6), (4, 4), (2, 2, 2, 2), (1, 1)),  # a patchify stem, stride 4
    (1, 3, 10, 21, 12, (3, 5), (2, 1), (1, 2, 0, 3), (1, 1)),  # non-square kernel, stride (2, 1), asymmetric pads
    (1, 3, 9, 9, 16, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),  # dilation 2
    (1, 3, 3, 4, 16, (3, 3), (1, 1), (4, 5, 4, 5), (1, 1)),  # pads past the window: rows of padding only
    (2, 3, 5, 3, 5, (2, 2), (2, 2), (0, 0, 1, 1), (1, 1)),  # tiny map, 5 channels: one masked store
    (1, 3, 6, 35, 48, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # widths past 16 and 32 pixels
    # 8 channels: two pixels a vector (their taps xs = SW * C bytes apart, xs <= 12), widths with odd pixel tails
    (2, 3, 11, 27, 8, (3, 5), (2, 1), (1, 2, 0, 3), (1, 1)),
    (1, 1, 7, 23, 8, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (1, 4, 9, 37, 8, (3, 3), (3, 3), (1, 1, 1, 1), (1, 1)),  # xs = 12: the widest pair
    (1, 3, 9, 13, 8, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    (1, 4, 8, 40, 8, (2, 2), (4, 4), (0, 0, 0, 0), (1, 1)),  # xs = 16: 16-channel blocks instead
]
# output spread (the multiplier is set so that the accumulators' spread maps to about this many steps; > 1000:
# saturating), LeakyRelu, (lo, hi)
REQ = [(30, False, (-128, 127)), (20, True, (-128, 127)), (40, False, (-10, 100)), (1e6, False, (-128, 127))]


def _case(case, req, seed):
    n, c, h, w, oc, (kh, kw), st, pads, dil = case
    scale, leaky, (lo, hi) = req
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
    wt = rng.integers(-127, 128, (oc, c, kh, kw), dtype=np.int8)
    bias = rng.integers(-20000, 20000, oc, dtype=np.int32)
    acc_spread = 128 * 73 * np.sqrt(c * kh * kw)  # about the accumulators' standard deviation
    m = (rng.uniform(0.5, 1.0, oc) * scale / acc_spread).astype(np.float32)
    m_neg = (m * rng.uniform(0.0, 0.5, m.size)).astype(np.float32) if leaky else None
    # zp_out inside the clamp (a zero point far below lo would clamp the whole map)
    kw_ = dict(stride=st, pad=pads, dilation=dil, zp_in=int(rng.integers(-128, 128)),
               zp_out=int(np.clip(rng.integers(-128, 128), lo + 5, hi - 5)), lo=lo, hi=hi)
    return (x, wt, bias, m, m_neg), kw_


@pytest.mark.parametrize("kernel", FIRST)
@pytest.mark.parametrize("i", range(len(CASES)))
def test_first_layer_bit_exact(kernel, i):
    for j, req in enumerate(REQ):
        args, kw = _case(CASES[i], req, seed=i * 7 + j)
        ref = conv_s8("conv_s8_generic", *args, **kw)
        assert req[0] > 1000 or len(np.unique(ref)) > 2  # not a saturated map (but for the saturating multiplier)
        for threads in (1, 2):
            got = conv_s8(kernel, *args, threads=threads, **kw)
            np.testing.assert_array_equal(got, ref, err_msg=f"{kernel} {CASES[i]} {req} threads={threads}")


@pytest.mark.parametrize("kernel", FIRST)
def test_more_than_four_channels_is_not_taken(kernel):
    args, kw = _case((1, 5, 8, 8, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)), REQ[0], seed=3)
    with pytest.raises(ValueError, match="does not apply"):
        conv_s8(kernel, *args, **kw)


def test_plan_chooses_it_for_a_first_layer():
    m, _ = conv_model(3, 16, 32, 32, 3, 2, 1, 1, -9, 5, act="u8", seed=3)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32) * 3
    s = qpi.load(m, precision="int8", threads=1)
    assert any("conv_s8_first" in str(k) for k in s.kernels()), s.kernels()
    with isa_cap("generic"):
        g = qpi.load(m, precision="int8", threads=1)
    np.testing.assert_array_equal(s.run(x), g.run(x))
