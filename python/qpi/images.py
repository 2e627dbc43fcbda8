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


# --- explicit preprocessing (carried in a calibrated model's metadata) ---------
PREPROCESS_KEY = "qpi.preprocess"
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class Preprocess:
    """image file -> NCHW float32: optional resize of the shorter side then
    center crop, or a plain resize to (H, W); RGB or BGR channel order;
    x * scale, minus mean, over std (mean/std in the model's channel order)."""

    FIELDS = ("preset", "size", "resize_shorter", "center_crop", "mean", "std", "bgr", "scale")

    def __init__(self, preset="none", size=None, resize_shorter=None, center_crop=False, mean=(0.0, 0.0, 0.0),
                 std=(1.0, 1.0, 1.0), bgr=False, scale=1.0):
        self.preset = preset
        self.size = None if size is None else (int(size[0]), int(size[1]))
        self.resize_shorter = None if resize_shorter is None else int(resize_shorter)
        self.center_crop = bool(center_crop)
        self.mean = tuple(float(v) for v in mean)
        self.std = tuple(float(v) for v in std)
        self.bgr = bool(bgr)
        self.scale = float(scale)
        if len(self.mean) != 3 or len(self.std) != 3:
            raise ValueError(f"mean and std take 3 values (one per channel), given {self.mean} / {self.std}")
        if any(s == 0 for s in self.std):
            raise ValueError(f"std must not contain 0: {self.std}")

    @classmethod
    def from_preset(cls, preset: str, size=None, **overrides) -> "Preprocess":
        """Presets: imagenet (torchvision eval: shorter side -> size*256/224,
        center crop, /255, ImageNet mean/std), retinaface (resize, BGR, minus
        104/117/123), none (resize, /255)."""
        if preset == "imagenet":
            h = int(size[0]) if size else 224
            kw = dict(size=size or (224, 224), resize_shorter=round(h * 256 / 224), center_crop=True,
                      mean=IMAGENET_MEAN, std=IMAGENET_STD, scale=1 / 255)
        elif preset == "retinaface":
            kw = dict(size=size or (640, 640), mean=(104.0, 117.0, 123.0), bgr=True, scale=1.0)
        elif preset == "none":
            kw = dict(size=size, scale=1 / 255)
        else:
            raise ValueError(f"unknown preset {preset!r}; presets are imagenet, retinaface, none")
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return cls(preset=preset, **kw)

    def with_size(self, size) -> "Preprocess":
        d = self.to_dict()
        d["size"] = size
        if self.preset == "imagenet" and self.size and self.resize_shorter == round(self.size[0] * 256 / 224):
            d["resize_shorter"] = round(int(size[0]) * 256 / 224)
        return Preprocess(**d)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.FIELDS}

    def to_json(self) -> str:
        import json

        d = self.to_dict()
        d["size"] = list(self.size) if self.size else None
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> "Preprocess":
        import json

        d = json.loads(text)
        unknown = set(d) - set(cls.FIELDS)
        if unknown:
            raise ValueError(f"model metadata {PREPROCESS_KEY}: unknown fields {sorted(unknown)}")
        return cls(**d)

    def describe(self) -> str:
        h, w = self.size if self.size else ("?", "?")
        steps = ["RGB->BGR" if self.bgr else "RGB"]
        if self.resize_shorter:
            steps.append(f"shorter side -> {self.resize_shorter} (bilinear)")
            steps.append(f"center crop {h}x{w}" if self.center_crop else f"resize {h}x{w}")
        else:
            steps.append(f"resize {h}x{w} (bilinear)")
        steps.append(f"x*{self.scale:.6g}")
        steps.append(f"-mean {list(self.mean)}")
        steps.append(f"/std {list(self.std)}")
        return f"preset {self.preset}: " + ", ".join(steps) + ", NCHW float32"

    def __eq__(self, other):
        return isinstance(other, Preprocess) and self.to_dict() == other.to_dict()

    def __call__(self, path, image=None) -> np.ndarray:
        """image: an already decoded PIL image (else `path` is read)."""
        from PIL import Image

        if self.size is None:
            raise ValueError("preprocessing has no input size: give --size HxW")
        h, w = self.size
        im = image if image is not None else load_rgb(path)
        if self.resize_shorter:
            s = self.resize_shorter
            iw, ih = im.size
            nw, nh = (s, int(s * ih / iw)) if iw < ih else (int(s * iw / ih), s)
            im = im.resize((nw, nh), Image.BILINEAR)
            if self.center_crop:
                left, top = int(round((nw - w) / 2.0)), int(round((nh - h) / 2.0))
                im = im.crop((left, top, left + w, top + h))
            else:
                im = im.resize((w, h), Image.BILINEAR)
        else:
            im = im.resize((w, h), Image.BILINEAR)
        x = np.asarray(im, dtype=np.float32)
        if self.bgr:
            x = x[:, :, ::-1]
        if self.scale != 1.0:
            x = x * np.float32(self.scale)
        x = (x - np.array(self.mean, np.float32)) / np.array(self.std, np.float32)
        return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def model_preprocess(proto) -> Preprocess | None:
    """The preprocessing a calibrated model carries in its metadata, if any."""
    for p in proto.metadata_props:
        if p.key == PREPROCESS_KEY:
            return Preprocess.from_json(p.value)
    return None
