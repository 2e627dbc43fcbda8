"""Resize and Upsample: ONNX's coordinate transforms, nearest / linear by
gather tables (an Add after it fuses in: passes/fuse_residual.py), cubic,
antialiased and cropping resizes by tap tables; qpi's int8 nearest resize
(QResize). The one place the ONNX Resize mathematics lives."""
from __future__ import annotations

import numpy as np

from . import _s8
from ._util import NC4, axes_list, input_nonneg, ints, norm_axis, rank
from .registry import QPI, register

ADDEND = 4  # input index of the addend of a fused Resize


class Unsupported(Exception):
    pass


def _check_resize(g, n):
    for key, ok in (("mode", ("nearest", "linear", "bilinear", "cubic")),
                    ("coordinate_transformation_mode", ("half_pixel", "pytorch_half_pixel", "align_corners",
                                                        "asymmetric", "tf_half_pixel_for_nearest",
                                                        "half_pixel_symmetric", "tf_crop_and_resize")),
                    ("nearest_mode", ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"))):
        v = n.attrs.get(key)
        if v is not None and v not in ok:
            yield f"{key} {v!r} is not one of {', '.join(ok)}"
    axes = ints(n, "axes")
    yield from axes_list(g, n, axes)
    for i, what in ((2, "scales"), (3, "sizes")):
        t = n.input(i) if n.op == "Resize" and g.opset >= 11 else ""
        if t and t in g.consts:
            v = np.asarray(g.consts[t]).reshape(-1)
            r = len(axes) if axes is not None else rank(g, n.inputs[0])
            if v.size and r is not None and v.size != r:
                yield f"{what} {t!r} has {v.size} values for {r} axes"
            elif v.size and np.any(~np.isfinite(v.astype(np.float64)) | (v <= 0)):
                yield f"{what} {t!r} {v.tolist()} must be positive"


def resize_spec(g, n):
    """dict(sh, sw, oh, ow, mode, ctm, nearest, cubic_a, exclude_outside, antialias, roi, extrapolation)
    or raise Unsupported. roi: ((h0, h1), (w0, w1)) for tf_crop_and_resize, else None."""
    x = n.inputs[0]
    shape = g.shapes.get(x)
    out = g.shapes.get(n.outputs[0])
    if shape is None or len(shape) != 4 or out is None:
        raise Unsupported("only rank-4 input")
    at = n.attrs
    mode = at.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear", "cubic", "bicubic"):
        raise Unsupported(f"mode {mode!r}")
    policy = at.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise Unsupported(f"keep_aspect_ratio_policy {policy!r}")
    axes = None
    if n.op == "Upsample" or g.opset < 11:
        ctm, nearest = "asymmetric", "floor"
        if g.opset < 9:
            scales = at["scales"]
        else:
            t = n.input(1)
            if t not in g.consts:
                raise Unsupported("scales must be constant")
            scales = np.asarray(g.consts[t]).reshape(-1)
        scales = [float(s) for s in scales]
        sizes = None
    else:
        ctm = at.get("coordinate_transformation_mode", "half_pixel")
        nearest = at.get("nearest_mode", "round_prefer_floor")
        sc_name, sz_name = n.input(2), n.input(3)
        for t in (sc_name, sz_name):
            if t and t not in g.consts:
                raise Unsupported("scales/sizes must be constant")
        axes = at.get("axes")
        scales = np.asarray(g.consts[sc_name]).reshape(-1).tolist() if sc_name else []
        sizes = np.asarray(g.consts[sz_name]).reshape(-1).tolist() if sz_name else []
        axes = [norm_axis(a, 4) for a in axes] if axes is not None else list(range(4))
        full_sc, full_sz = [1.0] * 4, list(shape)
        for i, a in enumerate(axes):
            if scales:
                full_sc[a] = scales[i]
            if sizes:
                full_sz[a] = sizes[i]
        scales = full_sc if scales else []
        sizes = full_sz if sizes else []
        if not scales:
            if not sizes:
                raise Unsupported("neither scales nor sizes")
            scales = [o / i if i else 1.0 for o, i in zip(sizes, shape)]
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                k = pick(scales[a] for a in axes)
                scales = [k if a in axes else 1.0 for a in range(4)]
    if ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                   "tf_half_pixel_for_nearest", "half_pixel_symmetric", "tf_crop_and_resize"):
        raise Unsupported(f"coordinate_transformation_mode {ctm!r}")
    if len(scales) != 4 or out[0] != shape[0] or out[1] != shape[1]:
        raise Unsupported("resizing N or C")
    roi = None
    if ctm == "tf_crop_and_resize":
        t = n.input(1)
        if not t or t not in g.consts:
            raise Unsupported("tf_crop_and_resize needs a constant roi")
        r = np.asarray(g.consts[t], np.float64).reshape(-1).tolist()
        full = [0.0] * 4 + [1.0] * 4
        if len(r) != 2 * len(axes):
            raise Unsupported("roi length does not match the axes")
        for i, a in enumerate(axes):
            full[a], full[4 + a] = r[i], r[len(axes) + i]
        if full[0] != 0 or full[4] != 1 or full[1] != 0 or full[5] != 1:
            raise Unsupported("cropping N or C")
        roi = ((full[2], full[6]), (full[3], full[7]))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    antialias = bool(at.get("antialias", 0)) and mode != "nearest"
    return dict(sh=scales[2], sw=scales[3], oh=out[2], ow=out[3], mode=mode, ctm=ctm, nearest=nearest,
                cubic_a=float(at.get("cubic_coeff_a", -0.75)), exclude_outside=bool(at.get("exclude_outside", 0)),
                antialias=antialias, roi=roi, extrapolation=float(at.get("extrapolation_value", 0.0)))


def _source_coord(in_len, out_len, scale, ctm, roi=None):
    """Source coordinate of every output index (ONNX Resize's coordinate
    transforms). align_corners divides by the integer output length - 1, as
    onnxruntime and PyTorch do (ONNX's reference uses in_len * scale - 1)."""
    x = np.arange(out_len, dtype=np.float64)
    if ctm == "align_corners":
        return np.zeros_like(x) if out_len == 1 else x * (in_len - 1) / (out_len - 1)
    if ctm == "tf_crop_and_resize":
        length = in_len * scale  # ONNX (and onnxruntime) measure it as a float here
        r0, r1 = roi
        xo = (np.full_like(x, (r1 - r0) * (in_len - 1) / 2) if length == 1
              else x * (r1 - r0) * (in_len - 1) / (length - 1))
        return xo + r0 * (in_len - 1)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.full_like(x, -0.5)
    if ctm == "tf_half_pixel_for_nearest":
        return (x + 0.5) / scale
    if ctm == "half_pixel_symmetric":
        adj = out_len / (in_len * scale)
        return in_len / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    return (x + 0.5) / scale - 0.5


def _cubic_w(t, a):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def resize_taps_axis(in_len, out_len, scale, mode, ctm, cubic_a=-0.75, exclude_outside=False, antialias=False,
                     nearest="round_prefer_floor", roi=None):
    """Tap table of one axis for cubic, antialiased and cropping resizes:
    (idx, w, k, source coordinates) with idx, w of shape [out_len, k],
    following ONNX's reference: the k
    source pixels nearest the source coordinate (ties to the left), weights
    from the cubic / triangle filter, stretched by 1/scale when downscaling
    with antialias, edge-clamped, renormalised over the inside taps when
    exclude_outside."""
    xo = _source_coord(in_len, out_len, scale, ctm, roi)
    if mode == "nearest":
        i, _, _ = _nearest_index(xo, in_len, nearest)
        return i[:, None], np.ones((out_len, 1), np.float32), 1, xo
    f = np.floor(xo)
    ratio = np.where(xo == f, 1.0, xo - f)  # in (0, 1]: the left pixel is preferred
    left = np.where(xo == f, f - 1, f).astype(np.int64)  # the pixel at distance `ratio` to the left
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "cubic":
        start = int(np.floor(-2 / s) + 1)
        offs = np.arange(start, 2 - start)
        w = _cubic_w(s * (offs[None, :] - ratio[:, None]), cubic_a)
    else:  # linear with antialias
        start = int(np.floor(-1 / s) + 1)
        offs = np.arange(start, 2 - start)
        w = np.clip(1 - np.abs(s * (offs[None, :] - ratio[:, None])), 0, 1)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    idx = left[:, None] + offs[None, :]
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= in_len), 0.0, w)
        tot = w.sum(axis=1, keepdims=True)
        w = w / np.where(tot == 0, 1.0, tot)
    idx = np.clip(idx, 0, in_len - 1)
    return idx.astype(np.int64), w.astype(np.float32), len(offs), xo


def _nearest_index(xo, in_len, nearest_mode):
    if nearest_mode == "round_prefer_ceil":
        i = np.floor(xo + 0.5)
    elif nearest_mode == "floor":
        i = np.floor(xo)
    elif nearest_mode == "ceil":
        i = np.ceil(xo)
    else:  # round_prefer_floor
        i = np.ceil(xo - 0.5)
    i = np.clip(i, 0, in_len - 1).astype(np.int64)
    return i, i, np.zeros(len(xo), np.float32)


def resize_axis(in_len, out_len, scale, mode, ctm, nearest_mode):
    """Gather table of one axis for nearest and linear: (idx0, idx1, lambda)
    per output index, following the ONNX Resize coordinate transforms."""
    xo = _source_coord(in_len, out_len, scale, ctm)
    if mode == "nearest":
        return _nearest_index(xo, in_len, nearest_mode)
    f = np.floor(xo)
    lam = (xo - f).astype(np.float32)
    i0 = np.clip(f, 0, in_len - 1).astype(np.int64)
    i1 = np.clip(f + 1, 0, in_len - 1).astype(np.int64)
    lam[i0 == i1] = 0.0
    return i0, i1, lam


def lower_resize(c, n):
    sp = resize_spec(c.g, n)
    _, _, h, w = c.shape(n.inputs[0])
    x, y = c.get(n.inputs[0]), c.new(n.outputs[0], NC4)
    if sp["mode"] == "cubic" or sp["antialias"] or sp["roi"] is not None:
        args = (sp["mode"], sp["ctm"], sp["cubic_a"], sp["exclude_outside"], sp["antialias"], sp["nearest"])
        roi = sp["roi"] or (None, None)
        hi, wh, kh, xh = resize_taps_axis(h, sp["oh"], sp["sh"], *args, roi=roi[0])
        wi, ww, kw, xw = resize_taps_axis(w, sp["ow"], sp["sw"], *args, roi=roi[1])
        ints = {"hi": hi.reshape(-1), "wi": wi.reshape(-1), "kh": [kh], "kw": [kw]}
        floats = {"wh": wh.reshape(-1), "ww": ww.reshape(-1)}
        if sp["roi"] is not None:
            ints.update(h_out=(xh < 0) | (xh > h - 1), w_out=(xw < 0) | (xw > w - 1))
            floats["extrapolation_value"] = [sp["extrapolation"]]
        c.emit("resize_taps", n.name, [x], [y], ints, floats)
        return
    h0, h1, lh = resize_axis(h, sp["oh"], sp["sh"], sp["mode"], sp["ctm"], sp["nearest"])
    w0, w1, lw = resize_axis(w, sp["ow"], sp["sw"], sp["mode"], sp["ctm"], sp["nearest"])
    ins = [x, c.get(n.input(ADDEND), NC4)] if n.input(ADDEND) else [x]  # a fused Add (passes/fuse_residual.py)
    c.emit("resize", n.name, ins, [y], {"h0": h0, "h1": h1, "w0": w0, "w1": w1}, {"lh": lh, "lw": lw})

def _support(g, n):
    try:
        resize_spec(g, n)
    except Unsupported as e:
        return str(e)
    return None


def table_resize(g, p) -> bool:
    """Runs by gather tables (nearest or linear, no antialias, no crop): can take a fused Add."""
    try:
        sp = resize_spec(g, p)
    except Exception:  # anything it does not run, the support check reports
        return False
    return sp["mode"] != "cubic" and not sp["antialias"] and sp["roi"] is None


def _residual_input(g, p):
    return ADDEND if table_resize(g, p) else None


def fold_resize(ctx, n, out, chain):
    """int8 nearest resize of an NHWC map with one scale in and out (QResize)."""
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    ctx.nhwc_only(x)
    g = ctx.g
    if (s_in, zp_in) != (s_out, zp_out) or n.attrs.get("mode", "nearest") != "nearest" or len(g.shapes[x]) != 4:
        raise _s8.NoFold
    try:
        sp = resize_spec(g, n)
    except Unsupported:
        raise _s8.NoFold from None
    if sp.get("roi") is not None or sp.get("antialias"):
        raise _s8.NoFold
    sh, sw, oh, ow, mode, ctm, nearest = (sp[k] for k in ("sh", "sw", "oh", "ow", "mode", "ctm", "nearest"))
    h, w = g.shapes[x][2:]
    return ctx.qnode("QResize", n, [x], [out], h0=resize_axis(h, oh, sh, mode, ctm, nearest)[0],
                     w0=resize_axis(w, ow, sw, mode, ctm, nearest)[0])


def lower_qresize(c, n):
    c.emit("resize_s8", n.name, [c.get_s8(n.inputs[0])], [c.new_s8(n.outputs[0])],
           {"h0": n.attrs["h0"], "w0": n.attrs["w0"]})


register("Resize", family="resize", inputs=(1, 4), check=_check_resize, const_inputs=(1, 2, 3), support=_support,
         lower=lower_resize, residual_input=_residual_input, fold_s8=fold_resize, calib_quantize=True,
         shares_scale=True, nonneg=input_nonneg)
register("Upsample", family="resize", inputs=(1, 2), check=_check_resize, const_inputs=(1,), support=_support,
         lower=lower_resize, residual_input=_residual_input, fold_s8=fold_resize)
register("QResize", domain=QPI, family="resize", lower=lower_qresize, extra={"engine_op": "resize_s8"})
