"""Image loading and the preprocessing presets of the bundled model families."""
from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")
PRESETS = ("imagenet", "retinaface")


def load_rgb(path):
    """PIL RGB image; ValueError naming the file when it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such image file")
    try:
        with Image.open(p) as im:
            im.load()
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise ValueError(f"{p}: not a readable image ({e})") from None


def imagenet(path, size: int = 224) -> np.ndarray:
    """RGB, shorter side -> size*256/224 (bilinear), center crop, /255,
    ImageNet mean/std, NCHW float32 (torchvision's eval transform)."""
    from PIL import Image

    im = load_rgb(path)
    short = round(size * 256 / 224)
    w, h = im.size
    if w < h:
        nw, nh = short, int(short * h / w)
    else:
        nw, nh = int(short * w / h), short
    im = im.resize((nw, nh), Image.BILINEAR)
    left, top = int(round((nw - size) / 2.0)), int(round((nh - size) / 2.0))
    im = im.crop((left, top, left + size, top + size))
    x = np.asarray(im, dtype=np.float32) / 255.0
    x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def retinaface(path, size=(640, 640)) -> np.ndarray:
    """RGB -> BGR, resize to (H, W) (bilinear), minus (104, 117, 123), no
    scaling, NCHW float32 (biubug6/Pytorch_Retinaface)."""
    from PIL import Image

    h, w = size
    im = load_rgb(path).resize((w, h), Image.BILINEAR)
    x = np.asarray(im, dtype=np.float32)[:, :, ::-1] - np.array([104, 117, 123], np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def preprocess(path, preset: str, shape) -> np.ndarray:
    """shape: the model's NCHW input shape (H, W taken from it)."""
    if preset == "imagenet":
        return imagenet(path, int(shape[2]))
    if preset == "retinaface":
        return retinaface(path, (int(shape[2]), int(shape[3])))
    raise ValueError(f"unknown preset {preset!r}; presets are {PRESETS}")


def guess_preset(outputs: dict) -> str | None:
    """The preprocessing preset a model's outputs suggest ({name: shape or
    None}): RetinaFace heads are named loc and conf; one output of 1000 values
    is an ImageNet classifier. None when neither fits."""
    if {"loc", "conf"} <= set(outputs):
        return "retinaface"
    if len(outputs) == 1:
        shape = next(iter(outputs.values()))
        if shape and shape[-1] == 1000:
            return "imagenet"
    return None


def list_images(directory) -> list[Path]:
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"{d}: not a directory")
    files = sorted(p for p in d.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(f"{d}: no images ({', '.join(IMAGE_SUFFIXES)})")
    return files


def imagenet_labels() -> list[str]:
    path = Path(__file__).with_name("data") / "imagenet1k_classes.txt"
    labels = []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        labels.append(parts[2].split(",")[0].strip() if len(parts) >= 3 else line)
    return labels
