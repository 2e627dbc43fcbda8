"""Results drawn on the input image (qpi run --save): detector boxes and
scores, or a classifier's top-k labels."""
from __future__ import annotations

from pathlib import Path

from .images import load_rgb


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1: a scalable default font
    except TypeError:
        return ImageFont.load_default()


def _label(draw, xy, text, font, fill):
    x, y = xy
    l, t, r, b = draw.textbbox((x, y), text, font=font)
    draw.rectangle((l - 2, t - 1, r + 2, b + 1), fill=fill)
    draw.text((x, y), text, fill="black", font=font)


def draw_faces(image_path, faces, frame_hw, out_path) -> Path:
    """faces: retinaface.detect() output in the coordinates of the model's
    (frame_h, frame_w) input, which the preprocessing stretched the image to;
    drawn back on the original image."""
    from PIL import ImageDraw

    im = load_rgb(image_path)
    sx, sy = im.width / frame_hw[1], im.height / frame_hw[0]
    d = ImageDraw.Draw(im)
    lw = max(2, round(min(im.size) / 200))
    font = _font(max(12, round(min(im.size) / 40)))
    for f in faces:
        x1, y1, x2, y2 = f["box"]
        box = (x1 * sx, y1 * sy, x2 * sx, y2 * sy)
        d.rectangle(box, outline=(0, 255, 0), width=lw)
        for lx, ly in f.get("landmarks", []):
            r = lw + 1
            d.ellipse((lx * sx - r, ly * sy - r, lx * sx + r, ly * sy + r), fill=(255, 64, 64))
        _label(d, (box[0], max(0, box[1] - font.size - 4) if hasattr(font, "size") else box[1]),
               f"{f['score']:.2f}", font, (0, 255, 0))
    return _save(im, out_path)


def draw_labels(image_path, labels, out_path) -> Path:
    """labels: (name, probability) pairs, best first, written top-left."""
    from PIL import ImageDraw

    im = load_rgb(image_path)
    d = ImageDraw.Draw(im)
    size = max(12, round(min(im.size) / 25))
    font = _font(size)
    y = 4
    for name, p in labels:
        _label(d, (6, y), f"{name} {p:.2f}", font, (255, 255, 255))
        y += size + 8
    return _save(im, out_path)


def _save(im, out_path) -> Path:
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    im.save(out)
    return out
