"""RetinaFace (biubug6/Pytorch_Retinaface) output decoding: priors, box and
landmark decoding, NMS."""
from __future__ import annotations

import math

import numpy as np

STEPS = (8, 16, 32)
MIN_SIZES = ((16, 32), (64, 128), (256, 512))
VARIANCE = (0.1, 0.2)


def priors(h: int, w: int) -> np.ndarray:
    """[N, 4] (cx, cy, sx, sy), normalised, in the (y, x, anchor) order of the heads."""
    out = []
    for step, sizes in zip(STEPS, MIN_SIZES):
        fh, fw = math.ceil(h / step), math.ceil(w / step)
        ys, xs = np.meshgrid(np.arange(fh), np.arange(fw), indexing="ij")
        cx = (xs + 0.5) * step / w
        cy = (ys + 0.5) * step / h
        for_anchor = [np.stack([cx, cy, np.full_like(cx, s / w), np.full_like(cy, s / h)], -1) for s in sizes]
        out.append(np.stack(for_anchor, 2).reshape(-1, 4))
    return np.concatenate(out).astype(np.float32)


def nms(boxes: np.ndarray, scores: np.ndarray, thresh: float) -> list[int]:
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)  # continuous coordinates, as iou() measures them
    order = scores.argsort()[::-1]
    keep = []
    while order.size:
        i = order[0]
        keep.append(int(i))
        xx1, yy1 = np.maximum(x1[i], x1[order[1:]]), np.maximum(y1[i], y1[order[1:]])
        xx2, yy2 = np.minimum(x2[i], x2[order[1:]]), np.minimum(y2[i], y2[order[1:]])
        inter = np.maximum(0.0, xx2 - xx1) * np.maximum(0.0, yy2 - yy1)
        union = areas[i] + areas[order[1:]] - inter
        iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        order = order[1:][iou <= thresh]
    return keep


def detect(loc, conf, landmarks, h: int, w: int, conf_thresh=0.9, nms_thresh=0.4):
    """Faces in one image as a list of dicts (score, box [x1,y1,x2,y2],
    landmarks [[x,y] x5]) in input-pixel coordinates, best first."""
    loc, conf, landmarks = loc[0], conf[0], landmarks[0]
    pr = priors(h, w)
    if pr.shape[0] != loc.shape[0]:
        raise ValueError(f"RetinaFace output has {loc.shape[0]} anchors, expected {pr.shape[0]} for {h}x{w}")
    v0, v1 = VARIANCE
    ctr = pr[:, :2] + loc[:, :2] * v0 * pr[:, 2:]
    wh = pr[:, 2:] * np.exp(loc[:, 2:] * v1)
    boxes = np.concatenate([ctr - wh / 2, ctr + wh / 2], 1) * np.array([w, h, w, h], np.float32)
    lms = np.concatenate([pr[:, :2] + landmarks[:, 2 * i:2 * i + 2] * v0 * pr[:, 2:] for i in range(5)], 1)
    lms = lms * np.array([w, h] * 5, np.float32)
    scores = conf[:, 1]
    idx = np.where(scores > conf_thresh)[0]
    keep = idx[nms(boxes[idx], scores[idx], nms_thresh)] if idx.size else []
    return [{"score": float(scores[i]), "box": boxes[i].tolist(), "landmarks": lms[i].reshape(5, 2).tolist()}
            for i in keep]


def iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0
