"""Per-tensor range statistics with bounded memory, and the four ways to turn
them into a clipping range (minmax, percentile, KL divergence, MSE).

Each tensor keeps its running min/max and an 8192-bin histogram of |x| over
[0, hmax]. When a batch exceeds hmax the histogram is re-binned onto a wider
range (hmax doubles until it covers the new maximum), so memory never depends
on the number of images. hmax is thus between the observed max|x| and twice
it, depending on the order the images came in; the KL search, whose answer
depends on how many bins the data spans, runs on a 2048-bin histogram of
exactly [0, max|x|] re-binned from the stored one (as TensorRT's does).

KL weighs how much probability mass a clip moves, not how far: a Relu6
output whose few saturated values sit at 6 gets clipped well below 6 when
they are rare (MobileNetV2's first depthwise output: 0.1% of its values, clip
3.2), which costs the output about 1.4 dB; percentile and MSE keep them.
"""
from __future__ import annotations

import numpy as np

NBINS = 8192     # stored histogram
KL_BINS = 2048   # the KL search's histogram over [0, max|x|]
METHODS = ("minmax", "percentile", "kl", "mse")


class TensorStats:
    __slots__ = ("min", "max", "hmax", "hist", "count", "zeros")

    def __init__(self):
        self.min = np.inf
        self.max = -np.inf
        self.hmax = 0.0
        self.hist = np.zeros(NBINS, np.float64)
        self.count = 0
        self.zeros = 0  # exact zeros (a ReLU's output): exactly representable, left out of the KL search

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float32).reshape(-1)
        if x.size == 0:
            return
        lo, hi = float(x.min()), float(x.max())
        self.min, self.max = min(self.min, lo), max(self.max, hi)
        amax = max(abs(lo), abs(hi))
        if amax > self.hmax:
            self._grow(amax)
        if self.hmax == 0.0:
            self.hist[0] += x.size
        else:
            idx = np.minimum((np.abs(x) * (NBINS / self.hmax)).astype(np.int64), NBINS - 1)
            self.hist += np.bincount(idx, minlength=NBINS)
        self.count += x.size
        self.zeros += int(np.count_nonzero(x == 0))

    def _grow(self, amax: float) -> None:
        if self.hmax == 0.0:
            # first non-zero data (earlier all-zero batches sit in bin 0, still right);
            # headroom so later batches rarely re-bin
            self.hmax = amax * 1.25
            return
        new = self.hmax
        while new < amax:
            new *= 2.0
        # move each old bin's count to the new bin holding its centre
        centres = (np.arange(NBINS) + 0.5) * (self.hmax / NBINS)
        idx = np.minimum((centres * (NBINS / new)).astype(np.int64), NBINS - 1)
        self.hist = np.bincount(idx, weights=self.hist, minlength=NBINS).astype(np.float64)
        self.hmax = new

    def merge(self, other: "TensorStats") -> None:
        """Fold another tensor's statistics in (tensors that share a scale)."""
        if other.count == 0:
            return
        self.min, self.max = min(self.min, other.min), max(self.max, other.max)
        if other.hmax > self.hmax:
            self._grow(other.hmax)
        if other.hmax > 0:
            centres = (np.arange(NBINS) + 0.5) * (other.hmax / NBINS)
            idx = np.minimum((centres * (NBINS / self.hmax)).astype(np.int64), NBINS - 1)
            self.hist += np.bincount(idx, weights=other.hist, minlength=NBINS)
        else:
            self.hist[0] += other.hist.sum()
        self.count += other.count
        self.zeros += other.zeros

    # --- clipping range ---------------------------------------------------------
    def range(self, method: str = "minmax", percentile: float = 99.99) -> tuple[float, float]:
        """(rmin, rmax) the tensor is quantized over. Histogram methods pick a
        threshold T on |x| and clip the observed [min, max] to [-T, T]."""
        if self.count == 0:
            return 0.0, 0.0
        lo, hi = float(self.min), float(self.max)
        if method == "minmax" or self.hmax == 0.0:
            return lo, hi
        # a tensor that never goes negative (post-ReLU) uses all 256 levels on [0, T]
        levels = 256 if lo >= 0 else 128
        if method == "percentile":
            t = _percentile(self.hist, self.hmax, percentile)
        elif method == "kl":
            h = self.hist.copy()
            h[0] = max(0.0, h[0] - self.zeros)
            amax = max(-lo, hi)
            h = _rebin(h, self.hmax, amax, KL_BINS)
            # the quantizer's own number of levels on [0, T] (256 when the tensor is >= 0), as
            # NVIDIA's entropy calibrator does for unsigned tensors
            t = _kl_threshold(h, amax, levels) if h.any() else amax
        elif method == "mse":
            t = _mse_threshold(self.hist, self.hmax, lo, hi)
        else:
            raise ValueError(f"unknown calibration method {method!r}; methods are {METHODS}")
        return max(lo, -t), min(hi, t)


def _percentile(hist, hmax, p) -> float:
    c = np.cumsum(hist)
    k = int(np.searchsorted(c, c[-1] * p / 100.0))
    return (min(k, NBINS - 1) + 1) * hmax / NBINS


def _rebin(hist, hmax, amax, nbins) -> np.ndarray:
    """`hist` over [0, hmax] as `nbins` bins over [0, amax] (amax <= hmax): each
    old bin's count is split in proportion to its overlap with the new bins."""
    cum = np.concatenate([[0.0], np.cumsum(hist)])
    old_edges = np.arange(len(hist) + 1) * (hmax / len(hist))
    new_edges = np.linspace(0.0, amax, nbins + 1)
    out = np.diff(np.interp(new_edges, old_edges, cum))
    out[-1] += cum[-1] - np.interp(amax, old_edges, cum)  # the stored bin holding amax reaches past it
    return np.maximum(out, 0.0)


def _kl_threshold(hist, hmax, levels, stride=4) -> float:
    """TensorRT's entropy calibration: the threshold whose `levels`-level
    quantized distribution Q is closest (KL(P||Q)) to the clipped reference P
    (the largest such threshold on ties)."""
    hist = hist.astype(np.float64)
    nbins = len(hist)
    nz_last = int(np.nonzero(hist)[0][-1]) + 1
    if nz_last <= levels:
        return nz_last * hmax / nbins
    best, best_i = np.inf, nz_last
    for i in list(range(levels, nz_last, stride)) + [nz_last]:
        p = hist[:i].copy()
        p[i - 1] += hist[i:].sum()
        # merge the i reference bins into `levels` groups, spread each group's mass
        # evenly over its non-empty bins
        edges = (np.arange(levels + 1) * i) // levels
        grp = np.repeat(np.arange(levels), np.diff(edges))
        src = hist[:i]
        nonzero = (src > 0).astype(np.float64)
        mass = np.bincount(grp, weights=src, minlength=levels)
        cnt = np.bincount(grp, weights=nonzero, minlength=levels)
        q = np.where(nonzero > 0, mass[grp] / np.maximum(cnt[grp], 1), 0.0)
        ps, qs = p.sum(), q.sum()
        if qs == 0:
            continue
        p, q = p / ps, q / qs
        m = p > 0
        # a reference bin the quantized histogram leaves empty: smooth rather than inf
        qm = np.where(q[m] > 0, q[m], 1e-12)
        kl = float(np.sum(p[m] * np.log(p[m] / qm)))
        if kl <= best:
            best, best_i = kl, i
    return best_i * hmax / nbins


def _mse_threshold(hist, hmax, lo, hi, ncand=256) -> float:
    """The threshold T minimising the expected squared error of quantizing the
    histogram over [max(lo, -T), min(hi, T)] with 256 levels, the range
    act_qparams is given: rounding error (step^2/12) inside the clip, clipping
    error outside."""
    w = hmax / NBINS
    centres = (np.arange(NBINS) + 0.5) * w
    nz_last = int(np.nonzero(hist)[0][-1]) + 1
    cands = np.linspace(nz_last * w / ncand, nz_last * w, ncand)
    best, best_t = np.inf, cands[-1]
    for t in cands:
        step = (min(hi, t) + min(max(-lo, 0.0), t)) / 255.0
        inside = centres <= t
        err = np.sum(hist[inside]) * step * step / 12.0 + np.sum(hist[~inside] * (centres[~inside] - t) ** 2)
        if err < best:
            best, best_t = err, t
    return float(best_t)
