"""Post-training calibration: `qpi calibrate MODEL --images DIR` / qpi.calibrate().

Runs qpi's fp32 plan over the images with the tensors to be quantized exposed
(a fused activation's output is the tensor the plan keeps, and the one that is
quantized), folds each tensor into a bounded histogram (quant/histograms.py),
picks a range per tensor (minmax, percentile, KL, MSE), optionally refines
those ranges against the model's output (quant/search.py, scored by qpi's own
int8 plan), and writes a standard
QDQ model on the original graph (quant/qdq_writer.py) that onnxruntime,
OpenVINO and qpi's int8 path run. The preprocessing is written into the
model's metadata (key qpi.preprocess) so `qpi run OUT.onnx --input img.jpg`
feeds the model exactly what calibration saw.

Evaluation for --report and --keep-fp32 runs onnxruntime (the fp32 original
against the QDQ file), which is also how the file is checked before qpi's own
int8 plan exists.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import ModelLoadError, QpiError
from .images import PREPROCESS_KEY, Preprocess
from .model_file import INT8_SUFFIX, int8_model_for, kind_of, sibling_path  # noqa: F401 (the CLI's names)
from .ops import of_proto
from .quant.histograms import METHODS, TensorStats
from .quant import search as range_search
from .quant.search import group_qparams, merged_stats
from .quant.evaluate import Evaluator, auto_keep, image_input
from .quant.image_input import image_qparams
from .quant.prepare import prepare
from .quant.qdq_writer import analyze, write_qdq

log = logging.getLogger("qpi")
CALIBRATION_KEY = "qpi.calibration"
EVAL_IMAGES = 16  # images kept (preprocessed) for --report / --keep-fp32 / the range search
DEFAULT_TARGET_DB = 30.0


class CalibrationError(QpiError, ValueError):
    """Calibration cannot start or finish (no usable image, contradicting size...)."""


# --- images --------------------------------------------------------------------------
def find_images(directory, warn=None) -> tuple[list[Path], list[str]]:
    """Every file under `directory` (recursive, sorted) that Pillow identifies;
    the others, and empty subfolders, give one warning line each.
    Returns (files, warnings). Files that identify but fail to decode are
    caught later, when read."""
    from PIL import Image, UnidentifiedImageError

    d = Path(directory)
    if not d.is_dir():
        raise CalibrationError(f"--images {d}: not a directory")
    warnings: list[str] = []
    say = warn or (lambda s: None)
    files = []
    for p in sorted(d.rglob("*")):
        if p.is_dir():
            if not any(p.iterdir()):
                warnings.append(f"{p}: empty folder")
                say(warnings[-1])
            continue
        try:
            with Image.open(p) as im:
                im.size  # noqa: B018 - header only
            files.append(p)
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
            warnings.append(f"{p}: skipped, not an image Pillow reads ({type(e).__name__})")
            say(warnings[-1])
    return files, warnings


# --- report -------------------------------------------------------------------------------
@dataclass
class CalibrationReport:
    model: str
    output: str
    method: str
    preprocess: Preprocess
    images_used: int = 0
    images_skipped: list[str] = field(default_factory=list)
    tensors: int = 0
    nodes_quantized: int = 0
    seconds_collect: float = 0.0
    seconds_histograms: float = 0.0
    output_sqnr_db: float | None = None        # onnxruntime QDQ vs fp32, all outputs, eval images
    per_node: list[tuple[str, str, str, float]] = field(default_factory=list)  # (node, op, tensor, SQNR dB)
    kept_fp32: list[str] = field(default_factory=list)
    keep_fp32_target_db: float | None = None
    sqnr_before_keep_db: float | None = None
    equalize: dict | None = None
    bias_corrected: int = 0
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    search: str = ""                           # what the range search did (or why it did not run)
    search_changed: dict[str, tuple] = field(default_factory=dict)  # group tensor -> (method, percentile) taken

    @property
    def seconds_per_image(self) -> float:
        return self.seconds_collect / max(1, self.images_used)

    def __str__(self) -> str:
        lines = [f"calibrated {self.model} -> {self.output}",
                 f"method {self.method}; {self.images_used} image(s) used, {len(self.images_skipped)} skipped; "
                 f"{self.nodes_quantized} nodes quantized, {self.tensors} activation tensors; collection "
                 f"{self.seconds_collect:.1f} s ({self.seconds_per_image:.2f} s/image, of which histograms "
                 f"{self.seconds_histograms / max(1, self.images_used):.2f} s)"]
        if self.equalize:
            e = self.equalize
            lines.append(f"equalize: {e['pairs']} depthwise-separable pair(s) and {e.get('streams', 0)} residual "
                         f"stream(s) equalized, {e['skipped']} pair(s) skipped")
        lines.append(f"bias correction: {self.bias_corrected} Conv/Gemm bias(es) corrected")
        if self.search:
            lines.append(f"range search: {self.search}")
            lines += [f"  {t}: {m if m != 'percentile' else f'percentile {p:g}'}"
                      for t, (m, p) in self.search_changed.items()]
        if self.kept_fp32 or self.keep_fp32_target_db is not None:
            kept = ", ".join(self.kept_fp32) or "none"
            lines.append(f"keep-fp32 auto (target {self.keep_fp32_target_db:.1f} dB): output SQNR "
                         f"{self.sqnr_before_keep_db:.1f} dB with every node int8; kept fp32: {kept}")
        if self.output_sqnr_db is not None:
            lines.append(f"output SQNR (onnxruntime on the QDQ file vs fp32): {self.output_sqnr_db:.1f} dB")
        if self.per_node:
            lines.append("per-node SQNR at each quantized node's output, worst first:")
            w = max(len(n) for n, *_ in self.per_node)
            lines += [f"  {n:{w}s}  {op:18s} {s:6.1f} dB" for n, op, _, s in self.per_node]
        return "\n".join(lines)


# --- the calibration ------------------------------------------------------------------------
def _parse_size(size):
    if size is None:
        return None
    if isinstance(size, str):
        parts = size.lower().replace(",", "x").split("x")
        try:
            vals = [int(p) for p in parts]
        except ValueError:
            raise CalibrationError(f"--size {size!r}: expected HxW, e.g. 224x224") from None
        if len(vals) == 1:
            vals = vals * 2
        if len(vals) != 2 or min(vals) < 1:
            raise CalibrationError(f"--size {size!r}: expected HxW, e.g. 224x224")
        return tuple(vals)
    return (int(size[0]), int(size[1]))


def _guess_preset(proto) -> str:
    outs = [o.name for o in proto.graph.output]
    if {"loc", "conf", "landmarks"} <= set(outs):
        return "retinaface"
    if len(outs) == 1:
        dims = [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
        if dims and dims[-1] == 1000:
            return "imagenet"
    return "none"


def build_preprocess(proto, preset=None, size=None, resize_shorter=None, center_crop=None, mean=None, std=None,
                     bgr=None, scale=None) -> Preprocess:
    """Preprocessing from a preset (guessed from the outputs when None) and
    overrides; checks --size against a static input shape."""
    name, dims = image_input(proto)
    size = _parse_size(size)
    static = (dims[2], dims[3]) if dims[2] and dims[3] else None
    if size and static and tuple(size) != static:
        raise CalibrationError(f"--size {size[0]}x{size[1]} contradicts the static input shape of {name!r} "
                               f"{[dims[0] or 'N', 3, static[0], static[1]]}")
    preset = preset or _guess_preset(proto)
    pp = Preprocess.from_preset(preset, size=size or static, resize_shorter=resize_shorter,
                                center_crop=center_crop or None, mean=mean, std=std, bgr=bgr or None, scale=scale)
    if pp.size is None:
        raise CalibrationError(f"input {name!r} has dynamic height/width and preset {preset!r} has no default "
                               "size: give --size HxW")
    return pp


def _read_model(model):
    import onnx

    try:
        if isinstance(model, (str, Path)):
            if not Path(model).is_file():
                raise ModelLoadError(f"{model}: no such model file")
            proto = onnx.load(str(model))
        elif isinstance(model, (bytes, bytearray)):
            proto = onnx.load_from_string(bytes(model))
        else:
            proto = model
    except ModelLoadError:
        raise
    except Exception as e:
        raise ModelLoadError(f"{model}: not a readable ONNX model ({e})") from None
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:
        # per-axis DequantizeLinear needs opset 13
        proto = onnx.version_converter.convert_version(proto, 13)
    return proto


def _progress(iterable, total, desc, enabled):
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="img", disable=not enabled, file=sys.stderr)


def calibrate(model, images, output=None, method="percentile", percentile=99.99, num_images=None, preset=None,
              size=None, resize_shorter=None, center_crop=None, mean=None, std=None, bgr=None, scale=None,
              exclude=(), keep_fp32=None, keep_fp32_target=DEFAULT_TARGET_DB, equalize=True, report=False,
              bias_correction=True, search="auto", threads=None, progress=True, echo=None):
    """Calibrate `model` (path) on the images under `images` and write a QDQ model.

    method: minmax | percentile | kl | mse;  percentile: for method="percentile"
    preset: imagenet | retinaface | none (default: guessed from the outputs);
    size/resize_shorter/center_crop/mean/std/bgr/scale override the preset.
    exclude: node names left in fp32.  keep_fp32="auto": fewest extra nodes kept
    fp32 to lift the output SQNR above keep_fp32_target dB.
    equalize: cross-layer equalization (default) of depthwise-separable pairs and
    residual streams before collection (quant/equalize.py).
    bias_correction: each Conv/Gemm bias absorbs the mean shift of its weight quantization.
    search: output-aware range search (quant/search.py): each shared-scale group
    tries the other methods' ranges and keeps the one that raises the SQNR at the
    logits on the first 16 images, scored by qpi's int8 plan. "auto" (default):
    only when its estimate is under quant.search.BUDGET_S seconds; True: always;
    False: never.
    report: per-node SQNR (worst first) in the returned report.
    echo: callable for the lines printed along the way (default: stderr).
    Returns (output path, CalibrationReport).
    """
    if method not in METHODS:
        raise CalibrationError(f"unknown method {method!r}; methods are {', '.join(METHODS)}")
    if keep_fp32 not in (None, "auto"):
        raise CalibrationError(f"keep_fp32 takes 'auto', not {keep_fp32!r} (use exclude= for named nodes)")
    if not (0 < float(percentile) <= 100):
        raise CalibrationError(f"--percentile {percentile}: must be in (0, 100]")
    if output is None and not isinstance(model, (str, Path)):
        raise CalibrationError("output= is required when the model is not a path")
    cal = Calibration(model, images, num_images=num_images, preset=preset, size=size, resize_shorter=resize_shorter,
                      center_crop=center_crop, mean=mean, std=std, bgr=bgr, scale=scale, exclude=exclude,
                      equalize=equalize, threads=threads, progress=progress, echo=echo,
                      evaluate=bool(report or keep_fp32), search=search)
    return cal.write(output, method, percentile, keep_fp32=keep_fp32, keep_fp32_target=keep_fp32_target,
                     report=report, bias_correction=bias_correction)


class Calibration:
    """The statistics of one model over one image folder (collected once), from
    which QDQ files are written with any method."""

    def __init__(self, model, images, num_images=None, preset=None, size=None, resize_shorter=None,
                 center_crop=None, mean=None, std=None, bgr=None, scale=None, exclude=(), equalize=True,
                 threads=None, progress=True, echo=None, evaluate=True, search="auto"):
        """evaluate: keep the first EVAL_IMAGES preprocessed inputs for --report /
        --keep-fp32 (the only inputs held in memory); the range search keeps them
        too unless search=False. search: the default of write()."""
        if search not in ("auto", True, False):
            raise CalibrationError(f"search takes 'auto', True or False, not {search!r}")
        self.search = search
        self.threads, self.progress = threads, progress
        self.say = say = echo or (lambda s: print(s, file=sys.stderr))
        self.src = str(model) if isinstance(model, (str, Path)) else "<model>"
        self.model_path = model if isinstance(model, (str, Path)) else None
        self.images = images
        self.exclude = list(exclude or [])
        self.equalize = bool(equalize)
        proto, prep = prepare(_read_model(model))
        if any(prep.values()):
            say(f"prepare: {prep['fold_bn']} BatchNormalization and {prep['fold_affine']} per-channel affine node(s) "
                f"folded into the convs, {prep['activations']} decomposed activation(s) made one node")
        pp = build_preprocess(proto, preset, size, resize_shorter, center_crop, mean, std, bgr, scale)
        in_name, _ = image_input(proto)
        plan = analyze(proto, self.exclude)  # names in --exclude are checked before any image is read
        files, skipped = find_images(images, warn=lambda s: say(f"warning: {s}"))
        if not files:
            raise CalibrationError(f"--images {images}: no image Pillow can read"
                                   + (f" ({len(skipped)} file(s) skipped)" if skipped else " (empty folder)"))
        say(f"preprocessing: {pp.describe()}")
        self.pp, self.in_name = pp, in_name
        self.eq_info = None
        work = proto
        if equalize:
            from .quant.equalize import equalize as cle

            work, self.eq_info = cle(proto, in_name, pp.size,
                                     lambda: _inputs(files, pp, num_images, [], say, collect_skips=False),
                                     threads=threads, correct_bias=False)
            say(f"equalize: {self.eq_info['pairs']} depthwise-separable pair(s) and "
                f"{self.eq_info['streams']} residual stream(s) equalized, {self.eq_info['skipped']} pair(s) skipped")
            plan = analyze(work, self.exclude)
        image = image_qparams(pp)
        if image is not None and in_name in plan.tensors:
            plan.image_q = (in_name, *image)
            say(f"input {in_name}: one int8 scale {image[0]:.6g} for its channels, a zero point each {image[1]} "
                "(where every reader is an int8 Conv)")
        self.work, self.plan = work, plan

        import qpi

        h, w = pp.size
        graph_outs = [o.name for o in work.graph.output]
        collect = [t for t in plan.collect if t != in_name and t not in graph_outs]
        sess = qpi.load(work, threads=threads, shapes={in_name: (1, 3, h, w)}, outputs=collect)
        stats = {t: TensorStats() for t in plan.collect}
        # per-channel means of the Conv / Gemm inputs, for bias correction
        g = work.graph
        conv_inputs = {g.node[i].input[0] for i in plan.quantized if of_proto(g.node[i]).bias_shift}
        sums: dict[str, np.ndarray] = {}
        self.eval_inputs = []
        total = min(len(files), num_images) if num_images else len(files)
        t0 = time.perf_counter()
        n_used = 0
        t_stats = 0.0
        for x in _progress(_inputs(files, pp, num_images, skipped, say), total, "qpi calibrate", progress):
            outs = sess.run_dict(x)
            outs[in_name] = x
            t1 = time.perf_counter()
            for t, st in stats.items():
                st.update(outs[t])
            for t in conv_inputs:
                v = outs.get(t)
                if v is not None and v.ndim in (2, 4):
                    m = v.mean(axis=(0, 2, 3) if v.ndim == 4 else 0, dtype=np.float64)
                    sums[t] = m if t not in sums else sums[t] + m
            t_stats += time.perf_counter() - t1
            del outs
            if (evaluate or search) and len(self.eval_inputs) < EVAL_IMAGES:
                self.eval_inputs.append(x)
            n_used += 1
        self.seconds = time.perf_counter() - t0
        self.seconds_stats = t_stats  # histogram updates (the rest: decoding, preprocessing, fp32 runs)
        self.n_used, self.skipped, self.stats = n_used, skipped, stats
        self.input_means = {t: v / max(1, n_used) for t, v in sums.items()}
        if n_used == 0:
            raise CalibrationError(f"--images {images}: no image Pillow can read ({len(skipped)} file(s) skipped)")
        n_skipped = sum(1 for w in skipped if not w.endswith(": empty folder"))
        if skipped:
            say(f"{n_skipped} file(s) skipped, {n_used} image(s) used")
        self._ev = None

    def _search(self, qp, method, percentile, means, mode):
        """The range search (quant/search.py) from `qp`. Returns (qp, summary line,
        {group: (method, percentile)} of the changes, what the file's metadata records)."""
        if not self.eval_inputs:
            msg = "not run: no images kept (Calibration made with search=False)"
            return qp, msg, {}, msg
        plan = self.plan
        self._merged = merged = merged_stats(plan, self.stats)
        opts = range_search.options(plan, merged, qp, method, percentile)
        n = sum(len(o) for o in opts.values())
        if n == 0:
            msg = "nothing to try (every group's ranges coincide)"
            return qp, msg, {}, msg

        def write(q):
            mark_removed(plan, q)
            return write_qdq(plan, q, input_means=means, warn=False)

        scorer = range_search.Scorer(self.work, self.in_name, self.eval_inputs, threads=self.threads)
        where = "logits (the final Softmax's input)" if scorer.at_logits else "outputs"
        estimate = scorer.estimate_s(n)
        if mode == "auto" and estimate > range_search.BUDGET_S:
            msg = (f"skipped: {n} candidate files, estimated ~{estimate:.0f} s, over the "
                   f"{range_search.BUDGET_S:.0f} s the default allows (--search runs it)")
            self.say(f"range search: {msg}")
            mark_removed(plan, qp)
            return qp, msg, {}, "skipped (over the time budget)"
        base = scorer(write(qp))
        self.say(f"range search: {n} candidate files over {len(opts)} groups, ~{estimate:.0f} s; SQNR at the "
                 f"{where} on {len(self.eval_inputs)} image(s), start {base:.2f} dB")
        t0 = time.perf_counter()
        qp2, best, changed = range_search.search(plan, qp, opts, write, scorer, base, progress=self.progress,
                                                 say=lambda s: log.info(s))
        done = (f"{len(changed)} of {len(opts)} groups changed, SQNR at the {where} on {len(self.eval_inputs)} "
                f"image(s) {base:.2f} -> {best:.2f} dB")
        msg = f"{done} ({n} files, {time.perf_counter() - t0:.0f} s)"
        self.say(f"range search: {msg}")
        return qp2, msg, changed, done

    def evaluator(self):
        if not self.eval_inputs:
            raise CalibrationError("this Calibration kept no images for evaluation (made with evaluate=False)")
        if self._ev is None:
            self._ev = Evaluator(self.work, self.eval_inputs)
        return self._ev

    def write(self, output=None, method="percentile", percentile=99.99, keep_fp32=None,
              keep_fp32_target=DEFAULT_TARGET_DB, report=False, bias_correction=True, search=None):
        """search: "auto" | True | False (None: the Calibration's own)."""
        import onnx

        if output is None:
            output = sibling_path(self.model_path)
        plan = self.plan
        rep = CalibrationReport(self.src, str(output), method, self.pp, images_used=self.n_used,
                                images_skipped=list(self.skipped), seconds_collect=self.seconds,
                                seconds_histograms=self.seconds_stats,
                                equalize=self.eq_info)
        qp = choose_qparams(plan, self.stats, method, percentile)
        rep.ranges = {t: self.stats[t].range(method, percentile) for t in plan.tensors}
        rep.tensors = len(plan.tensors)
        info = {"method": method, "percentile": percentile if method == "percentile" else None,
                "images": self.n_used, "images_dir": Path(self.images).name, "exclude": self.exclude,
                "equalize": self.equalize, "source_model": Path(self.src).name,
                "activations": "s8 per tensor", "weights": "s8 per channel symmetric"}
        info["bias_correction"] = bool(bias_correction)
        means = self.input_means if bias_correction else None
        search = self.search if search is None else search
        if search not in ("auto", True, False):
            raise CalibrationError(f"search takes 'auto', True or False, not {search!r}")
        if search:
            qp, rep.search, rep.search_changed, info["search"] = self._search(qp, method, percentile, means, search)
            info["search_changed"] = {r: range_search.label(m, p) for r, (m, p) in rep.search_changed.items()}
            for t in plan.tensors:
                mp = rep.search_changed.get(plan.group[t])
                if mp:
                    rep.ranges[t] = self._merged[plan.group[t]].range(mp[0], mp[1] or percentile)
            mark_removed(plan, qp)
        rep.nodes_quantized = len(plan.quantized) - len(plan.removed)
        keep_idx: list[int] = []
        if keep_fp32 == "auto" or report:
            ev = self.evaluator()
            if keep_fp32 == "auto":
                keep_idx, before = auto_keep(plan, qp, ev, keep_fp32_target, self.say, means)
                rep.sqnr_before_keep_db = before
                rep.keep_fp32_target_db = keep_fp32_target
                rep.kept_fp32 = [plan.node_name(i) for i in keep_idx if i not in plan.fused]
                info["kept_fp32"] = rep.kept_fp32
        meta = {PREPROCESS_KEY: self.pp.to_json(), CALIBRATION_KEY: json.dumps(info)}
        corrected: list[int] = []
        q = write_qdq(plan, qp, meta, keep_fp32=keep_idx, input_means=means, corrected=corrected)
        rep.bias_corrected = len(corrected)
        if report:
            rep.output_sqnr_db, rep.per_node = self.evaluator().per_node(plan, q, keep_idx)
        elif keep_fp32 == "auto":
            rep.output_sqnr_db = self.evaluator().output_sqnr(q)
        out = Path(output)
        out.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(q, str(out))
        return str(out), rep


def _inputs(files, pp, num_images, skipped, say, collect_skips=True):
    """Preprocessed inputs, one at a time; a file that fails to decode is
    skipped with one warning line."""
    n = 0
    for f in files:
        if num_images and n >= num_images:
            return
        try:
            x = pp(f)
        except ValueError as e:
            if collect_skips:
                skipped.append(str(e))
                say(f"warning: {e}; skipped")
            continue
        n += 1
        yield x


def choose_qparams(plan, stats, method, percentile) -> dict[str, tuple[float, int]]:
    """(scale, zero point) per shared-scale group; marks the fused Relu/Clip
    nodes the QDQ file can drop."""
    qp = {r: group_qparams(plan, r, st, method, percentile) for r, st in merged_stats(plan, stats).items()}
    mark_removed(plan, qp)
    return qp


def mark_removed(plan, qp) -> None:
    """plan.removed: the fused Relu / Clip nodes whose output range `qp` already clamps."""
    plan.removed = set()
    g = plan.model.graph
    for a, _p in plan.fused.items():
        r = plan.group[g.node[a].output[0]]
        scale, zp = qp[r]
        # the Q/DQ pair itself clamps to [0, clip max]: the activation node is redundant
        if r in plan.nonneg and zp == -128 and 255 * scale <= plan.clip_max[a] * (1 + 1e-6):
            plan.removed.add(a)
