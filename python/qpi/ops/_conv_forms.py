"""Conv forms the lowering and the passes rewrite (ops/conv.py): kernel taps that read only padding (cut, fp32
and int8), depthwise convs with a channel multiplier (a channel repeat, then the depthwise kernels), and a zero
Pad before the conv (passes/fold_pad.py: taken into the conv's pads)."""
import numpy as np

from ._util import NC4, fresh_tensor


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


def repeat_for_multiplier(c, n, x, w, ints_, ins):
    """A depthwise conv with a channel multiplier (group = C > 1, OC = m C: FastViT's and MobileOne's downsampling
    7x7 / 3x3, TF's depth_multiplier): output channel o reads input channel o // m. The input is repeated to OC
    channels (one channel gather) and the conv runs as depthwise at group OC (the conv2d_generic kernel it
    would otherwise get is the only one taking m > 1). Returns the conv's inputs (ints_ updated)."""
    cin, group, oc = c.shape(x)[1], int(n.attrs.get("group", 1)), w.shape[0]
    if not (group > 1 and group == cin and w.shape[1] == 1 and oc % cin == 0 and oc > cin):
        return ins
    m, xs = oc // cin, c.shape(x)
    rep = fresh_tensor(c.g, f"{x}@x{m}", (xs[0], oc, xs[2], xs[3]))
    c.emit("channel_gather", f"{n.name}/repeat", [c.get(x, NC4)], [c.new(rep, NC4)],
           {"src_t": [0] * oc, "src_c": [o // m for o in range(oc)]})
    ints_["group"] = [oc]
    return [c.get(rep, NC4)] + ins[1:]


def absorb_pad(graph, conv, pads) -> bool:
    """Conv reads its input's producer's input with (top, left, bottom, right) more zero padding: TF's explicit
    'SAME' Pad, HGNet's stem. Not under auto_pad (its pads follow from the shapes)."""
    if conv.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return False
    p = graph.producer(conv.inputs[0])
    own = list(conv.attrs.get("pads", [0, 0, 0, 0]))
    conv.attrs["pads"] = [a + b for a, b in zip(own, pads)]
    conv.inputs[0] = p.inputs[0]
    return True
