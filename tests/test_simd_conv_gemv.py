"""1x1 convs on a 1x1 map (kernels/conv_gemv: the head convs after global
pooling, a matrix-vector product per image) against conv2d_generic in one
process: the reference plan under isa_cap("generic"), the other at the current
level (QPI_MAX_ISA runs cover each x86 level; tests/arm/run.sh the NEON one).
Tolerance: assert_allclose rtol=1e-5, atol=1e-5 * max|ref| (simd_plans.assert_close).
Channel counts off the 16-channel panel and the 4-panel group, a partial last
NC4HW4 block (its padding lanes must come out 0: the reorder to plain reads
only real channels, the zero-lane check QPI_CHECK_NC4_PAD the rest), N = 2,
NCHW and NC4HW4 input, bias, a fused residual and every activation kind."""
import numpy as np
import pytest

from qpi.testing import isa_cap

from simd_plans import ACTS, assert_close, conv_kernel, conv_plan, isa_suffix

# (N, C, OC, bias, residual, act, in_nc4)
CASES = [
    (1, 960, 1280, True, False, 6, True),  # MobileNetV4-small's conv_head (hard-swish)
    (1, 512, 1280, True, False, 1, True),  # LCNet's
    (1, 16, 16, False, False, 0, True),
    (1, 3, 5, True, False, 2, False),
    (2, 37, 70, True, True, 3, True),  # two images, a partial panel group and a partial block
    (1, 64, 65, False, True, 4, False),
    (2, 1, 129, True, False, 5, True),
    (1, 200, 48, True, True, 7, True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"n{c[0]}c{c[1]}o{c[2]}{'_b' if c[3] else ''}"
                         f"{'_res' if c[4] else ''}_act{c[5]}{'' if c[6] else '_nchw'}")
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_gemv_matches_generic(case, threads):
    n, c, oc, bias, residual, ai, in_nc4 = case
    rng = np.random.default_rng(c * 1000 + oc)
    w = rng.standard_normal((oc, c, 1, 1)).astype(np.float32) / np.sqrt(c)
    b = rng.standard_normal(oc).astype(np.float32) if bias else None
    kw = dict(strides=(1, 1), pads=(0, 0, 0, 0), act=ACTS[ai % len(ACTS)], residual=residual, threads=threads,
              in_nc4=in_nc4)
    with isa_cap("generic"):
        ref = conv_plan((n, c, 1, 1), w, b, (n, oc, 1, 1), **kw)
    fast = conv_plan((n, c, 1, 1), w, b, (n, oc, 1, 1), **kw)
    assert conv_kernel(ref) == "conv2d_generic"
    suffix = isa_suffix()
    if suffix:
        assert conv_kernel(fast) == f"conv_gemv_{suffix}"
    feeds = [rng.standard_normal((n, c, 1, 1)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((n, oc, 1, 1)).astype(np.float32))
    assert_close(fast.run(feeds), ref.run(feeds))
