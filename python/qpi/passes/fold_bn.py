"""Fold BatchNormalization (inference form) into the Conv, ConvTranspose or Gemm before it:
W' = W * g / sqrt(v + eps), b' = beta + (b - mu) * g / sqrt(v + eps)."""
import numpy as np


def _bn_affine(graph, bn):
    names = bn.inputs[1:5]
    if len(names) < 4 or not all(t in graph.consts for t in names):
        return None
    if graph.opset < 9 and bn.attrs.get("spatial", 1) != 1:
        return None
    if bn.attrs.get("training_mode", 0):
        return None
    return bn_scale_shift(graph, bn)


def bn_scale_shift(graph, bn):
    """Inference BatchNormalization as y = x * s + t per channel (float64):
    s = gamma / sqrt(var + eps), t = beta - mean * s. The one place this formula
    lives: the fold here and the standalone lowering both use it."""
    g, beta, mu, var = (graph.consts[t].astype(np.float64) for t in bn.inputs[1:5])
    s = g / np.sqrt(var + float(bn.attrs.get("epsilon", 1e-5)))
    return s, beta - mu * s


def _fresh(graph, base):
    name, i = base, 0
    while name in graph.consts or name in graph.shapes:
        i += 1
        name = f"{base}_{i}"
    return name


def fold_conv(graph, conv, scale, shift):
    """conv output becomes conv * scale[c] + shift[c]; new constants, since
    the old weights may be shared."""
    w = graph.consts[conv.inputs[1]].astype(np.float64)
    b = graph.consts[conv.input(2)].astype(np.float64) if conv.input(2) else np.zeros(w.shape[0])
    wn, bn_ = _fresh(graph, conv.name + "_W_folded"), _fresh(graph, conv.name + "_B_folded")
    graph.consts[wn] = (w * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
    graph.consts[bn_] = (b * scale + shift).astype(np.float32)
    graph.shapes[wn], graph.shapes[bn_] = graph.consts[wn].shape, graph.consts[bn_].shape
    conv.inputs = [conv.inputs[0], wn, bn_]


def fold_conv_transpose(graph, conv, scale, shift):
    """As fold_conv for ConvTranspose, whose weights are [C, OC/group, kh, kw]."""
    w = graph.consts[conv.inputs[1]].astype(np.float64)
    group = int(conv.attrs.get("group", 1))
    oc = w.shape[1] * group
    b = graph.consts[conv.input(2)].astype(np.float64) if conv.input(2) else np.zeros(oc)
    ws = w.reshape((group, w.shape[0] // group, w.shape[1]) + w.shape[2:])
    ws = ws * scale.reshape((group, 1, w.shape[1]) + (1,) * (w.ndim - 2))
    wn, bn_ = _fresh(graph, conv.name + "_W_folded"), _fresh(graph, conv.name + "_B_folded")
    graph.consts[wn] = ws.reshape(w.shape).astype(np.float32)
    graph.consts[bn_] = (b * scale + shift).astype(np.float32)
    graph.shapes[wn], graph.shapes[bn_] = graph.consts[wn].shape, graph.consts[bn_].shape
    conv.inputs = [conv.inputs[0], wn, bn_]


def fold_into(graph, p, scale, shift):
    """Fold a per-output-channel affine into the Conv / ConvTranspose / Gemm p."""
    {"Conv": fold_conv, "ConvTranspose": fold_conv_transpose, "Gemm": fold_gemm}[p.op](graph, p, scale, shift)


def fold_gemm(graph, gemm, scale, shift):
    """Y = alpha A B + beta C, scaled per column n."""
    bmat = graph.consts[gemm.inputs[1]].astype(np.float64)
    trans_b = gemm.attrs.get("transB", 0)
    bmat = bmat * (scale[:, None] if trans_b else scale[None, :])
    beta = float(gemm.attrs.get("beta", 1.0))
    c = graph.consts[gemm.input(2)].astype(np.float64) if gemm.input(2) else np.zeros(1)
    c = beta * c * scale + shift
    bn_, cn = _fresh(graph, gemm.name + "_B_folded"), _fresh(graph, gemm.name + "_C_folded")
    graph.consts[bn_], graph.consts[cn] = bmat.astype(np.float32), c.astype(np.float32)
    graph.shapes[bn_], graph.shapes[cn] = graph.consts[bn_].shape, graph.consts[cn].shape
    gemm.inputs = [gemm.inputs[0], bn_, cn]
    gemm.attrs["beta"] = 1.0


def foldable_producer(graph, tensor):
    """The Conv/Gemm producing `tensor` if per-channel folding into it is safe."""
    p = graph.producer(tensor)
    if p is None or p.op not in ("Conv", "ConvTranspose", "Gemm") or "_act" in p.attrs \
            or not graph.single_use(tensor) or p.input(3):  # a fused residual is not scaled with the conv
        return None
    if p.inputs[1] not in graph.consts or (p.input(2) and p.input(2) not in graph.consts):
        return None
    if p.op == "Gemm" and len(graph.shapes.get(tensor, ())) != 2:
        return None
    return p


def run(graph) -> int:
    n = 0
    for bn in [x for x in graph.nodes if x.op == "BatchNormalization"]:
        if any(o and (graph.consumers(o) or o in graph.outputs) for o in bn.outputs[1:]):
            continue
        p = foldable_producer(graph, bn.inputs[0])
        aff = _bn_affine(graph, bn) if p else None
        if aff is None:
            continue
        fold_into(graph, p, *aff)
        p.outputs[0] = bn.outputs[0]
        graph.remove_node(bn)
        n += 1
    return n
