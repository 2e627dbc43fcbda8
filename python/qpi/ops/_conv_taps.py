"""Conv geometry: the kernel taps that read only padding (the Conv lowering, fp32 and int8, cuts them)."""
import numpy as np


def crop_dead_taps(w, in_hw, k, s, d, pads):
    """The kernel rows and columns that read only padding for every output pixel, cut away: (w, k, d, pads)
    of the same conv on the taps left, or None when every tap is live. A dilated conv on a map smaller than
    its dilation (DeepLabv3's ASPP, dilation 12 / 24 / 36 on a 20x20 map at output stride 16) is mostly
    such taps; cut to its centre tap it is a 1x1 conv. Exact: the cut taps multiply zeros (in int8, the zero
    point the padding holds)."""
    k, d, pads = list(k), list(d), list(pads)
    out_hw = [(in_hw[i] + pads[i] + pads[i + 2] - (k[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(2)]
    if min(out_hw) < 1:
        return None
    lo_hi = []
    for i in range(2):
        # tap t of axis i reads rows o * s - pad + t * d for o in [0, out): live when that range meets [0, in)
        live = [t for t in range(k[i]) if t * d[i] - pads[i] <= in_hw[i] - 1 and
                (out_hw[i] - 1) * s[i] - pads[i] + t * d[i] >= 0]
        if not live:
            return None  # every tap reads padding: left to the kernels (an output of bias only)
        lo_hi.append((live[0], live[-1]))
    if all(lo == 0 and hi == k[i] - 1 for i, (lo, hi) in enumerate(lo_hi)):
        return None
    nk, nd, npad = [], [], [0, 0, 0, 0]
    for i, (lo, hi) in enumerate(lo_hi):
        nk.append(hi - lo + 1)
        nd.append(d[i] if hi > lo else 1)
        npad[i] = pads[i] - lo * d[i]
        # the end pad that keeps the output size (the kernel then reads no row past what the conv read)
        npad[i + 2] = (out_hw[i] - 1) * s[i] + (nk[i] - 1) * nd[i] + 1 - in_hw[i] - npad[i]
    if min(npad) < 0:
        return None  # the live taps start inside the image: a cropped input, which the kernels do not take
    w = np.ascontiguousarray(w[:, :, lo_hi[0][0]:lo_hi[0][1] + 1, lo_hi[1][0]:lo_hi[1][1] + 1])
    return w, nk, nd, npad
