"""Mutation fuzzer of qpi's model loading and execution.

Each case is a mutated copy of a seed model (the bundled RetinaFace, a small
model with one node of most op types qpi runs, and the asset models when
present): an input dropped, rewired or added, an attribute changed, dropped or
added, an op type swapped, an initializer's dims or data changed, a node or
output dropped, bytes flipped. Case i always gets the same mutations (seeded
by i). qpi loads and runs it; the case passes when it runs, or fails with one
of qpi's error classes (ValueError / NotImplementedError) whose message names
a node, tensor or the source. When onnxruntime runs the same model, outputs
are compared too.

Cases run in subprocess batches: a crash shows as a signal with its case
number, a hang as a timeout. Usage:

    python tests/fuzz/fuzz_models.py --cases 2000            # report, exit 1 on a bad case
    python tests/fuzz/fuzz_models.py --only 1234 -v          # rerun one case in this process
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUNDLED = REPO / "python" / "qpi" / "data" / "retinaface_mnet025_320.onnx"

OPS = ["Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Relu", "Clip", "LeakyRelu",
       "Sigmoid", "HardSwish", "HardSigmoid", "Add", "Sub", "Mul", "Div", "PRelu", "Max", "Min", "Sum", "Mean",
       "BatchNormalization", "Concat", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Gemm",
       "MatMul", "Transpose", "Softmax", "LogSoftmax", "ReduceMean", "ReduceMax", "Slice", "Split", "Pad",
       "Resize", "Upsample", "Dropout", "Cast", "Shape", "Gather", "NoSuchOp"]
ATTRS = {"kernel_shape": "ints", "strides": "ints", "pads": "ints", "dilations": "ints", "group": "int",
         "axis": "int", "axes": "ints", "perm": "ints", "mode": "str", "auto_pad": "str", "ceil_mode": "int",
         "count_include_pad": "int", "transA": "int", "transB": "int", "keepdims": "int", "epsilon": "float",
         "alpha": "float", "beta": "float", "coordinate_transformation_mode": "str", "nearest_mode": "str",
         "split": "ints", "storage_order": "int", "to": "int", "noop_with_empty_axes": "int"}
INTS = [-3, -1, 0, 1, 2, 3, 4, 7, 1000]
FLOATS = [-1.0, 0.0, 1e-5, 0.5, 2.0, 1e30, float("nan"), float("inf")]
STRS = ["constant", "edge", "reflect", "wrap", "nearest", "linear", "cubic", "SAME_UPPER", "SAME_LOWER", "VALID",
        "NOTSET", "align_corners", "asymmetric", "half_pixel", "floor", "ceil", "bogus", ""]
MUTATIONS = ["drop_input", "rewire_input", "add_input", "swap_inputs", "change_attr", "drop_attr", "add_attr",
             "change_op", "init_dims", "init_data", "init_shape", "drop_node", "drop_output", "flip_bytes"]


# --- seed models ------------------------------------------------------------------

def _shrink(m, hw):
    """The same graph at a smaller input size (runs in milliseconds)."""
    d = m.graph.input[0].type.tensor_type.shape.dim
    d[2].dim_value, d[3].dim_value = hw, hw
    del m.graph.value_info[:]
    for o in m.graph.output:
        for x in o.type.tensor_type.shape.dim:
            x.ClearField("dim_value")
    return m


def zoo_model():
    """One small graph holding most op types qpi lowers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(0)

    def f(*s):
        return r.standard_normal(s).astype(np.float32)

    inits = {"w1": f(8, 3, 3, 3), "b1": f(8), "wd": f(8, 1, 3, 3), "bn_s": f(8), "bn_b": f(8), "bn_m": f(8),
             "bn_v": np.abs(f(8)) + 0.5, "wg": f(10, 8), "bg": f(10), "mm": f(10, 6), "k": f(1, 8, 1, 1),
             "sl_st": np.array([0, 1], np.int64), "sl_en": np.array([8, 7], np.int64),
             "sl_ax": np.array([2, 3], np.int64), "pad": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
             "sc": np.array([1, 1, 2, 2], np.float32), "shp": np.array([1, -1], np.int64),
             "cl_lo": np.array(0, np.float32), "cl_hi": np.array(6, np.float32)}
    N = helper.make_node
    nodes = [
        N("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[1, 1]),
        N("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn"),
        N("Clip", ["bn", "cl_lo", "cl_hi"], ["r1"], name="clip"),
        N("Conv", ["r1", "wd"], ["dw"], name="dwconv", group=8, pads=[1, 1, 1, 1], dilations=[1, 1]),
        N("Mul", ["dw", "k"], ["mk"], name="mul_k"),
        N("Sub", ["k", "mk"], ["sk"], name="sub_k"),
        N("HardSwish", ["sk"], ["hs"], name="hswish"),
        N("MaxPool", ["hs"], ["mp"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        N("AveragePool", ["hs"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
          count_include_pad=1),
        N("Max", ["mp", "ap", "k"], ["mx"], name="max3"),
        N("Mean", ["mp", "ap", "mx", "k"], ["mn"], name="mean4"),
        N("Pad", ["mn", "pad"], ["pd"], name="pad", mode="reflect"),
        N("Slice", ["pd", "sl_st", "sl_en", "sl_ax"], ["sl"], name="slice"),
        N("Resize", ["sl", "", "sc"], ["rs"], name="resize", mode="linear"),
        N("Split", ["rs"], ["sp0", "sp1"], name="split", axis=1),
        N("Concat", ["sp1", "sp0"], ["cc"], name="concat", axis=1),
        N("Sigmoid", ["cc"], ["sg"], name="sigmoid"),
        N("ReduceMean", ["sg"], ["rm"], name="reducemean", axes=[1], keepdims=1),
        N("Softmax", ["sg"], ["sm"], name="softmax", axis=1),
        N("Add", ["sm", "rm"], ["ad"], name="add"),
        N("GlobalAveragePool", ["ad"], ["gp"], name="gap"),
        N("Reshape", ["gp", "shp"], ["fl"], name="reshape"),
        N("Gemm", ["fl", "wg", "bg"], ["gm"], name="gemm", transB=1),
        N("LeakyRelu", ["gm"], ["lr"], name="leaky", alpha=0.1),
        N("MatMul", ["lr", "mm"], ["mo"], name="matmul"),
        N("LogSoftmax", ["mo"], ["y"], name="logsoftmax", axis=-1),
        N("Transpose", ["ad"], ["y2"], name="transpose", perm=[0, 2, 3, 1]),
    ]
    g = helper.make_graph(nodes, "zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y2", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    inferred = {o.name: o for o in onnx.shape_inference.infer_shapes(m).graph.output}
    for o in m.graph.output:
        o.CopyFrom(inferred[o.name])
    return m


def seed_models(with_assets: bool):
    import onnx

    seeds = [("retinaface@64", _shrink(onnx.load(str(BUNDLED)), 64)), ("zoo", zoo_model())]
    if with_assets:
        sys.path.insert(0, str(REPO / "tests"))
        from conftest import assets_dir

        a = assets_dir()
        for name in ("mobilenet_v2_224.onnx", "mobilenet_v2_224_bn.onnx"):
            if a is not None and (a / "models" / name).is_file():
                seeds.append((name + "@32", _shrink(onnx.load(str(a / "models" / name)), 32)))
    return seeds


# --- mutations ----------------------------------------------------------------------

def _rand_attr_value(rng, kind):
    if kind == "int":
        return rng.choice(INTS)
    if kind == "float":
        return rng.choice(FLOATS)
    if kind == "str":
        return rng.choice(STRS)
    return [rng.choice(INTS) for _ in range(rng.choice([0, 1, 2, 3, 4, 6, 8]))]


def _set_attr(node, name, value):
    import onnx
    from onnx import helper

    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    if isinstance(value, list) and not value:
        node.attribute.append(helper.make_attribute(name, value, attr_type=onnx.AttributeProto.INTS))
    else:
        node.attribute.append(helper.make_attribute(name, value))


def _tensor_names(m):
    names = [i.name for i in m.graph.input] + [i.name for i in m.graph.initializer]
    for n in m.graph.node:
        names += [o for o in n.output if o]
    return names


def mutate_once(m, rng):
    """Apply one random mutation in place; returns its description, or bytes
    (flip_bytes: the model as damaged bytes)."""
    from onnx import helper, numpy_helper

    g = m.graph
    kind = rng.choice(MUTATIONS)
    nodes = [n for n in g.node if n.op_type != "Constant"] or list(g.node)
    node = rng.choice(nodes) if nodes else None
    if kind == "flip_bytes":
        data = bytearray(m.SerializeToString())
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        return bytes(data)
    if kind in ("init_dims", "init_data", "init_shape") and g.initializer:
        init = rng.choice(list(g.initializer))
        if kind == "init_dims":  # dims no longer match the stored data
            dims = list(init.dims)
            op = rng.choice(["grow", "drop", "add"]) if dims else "add"
            if op == "grow":
                j = rng.randrange(len(dims))
                dims[j] = max(0, dims[j] + rng.choice([-1, 1, 2]))
            elif op == "drop":
                dims.pop(rng.randrange(len(dims)))
            else:
                dims.append(rng.choice([2, 3]))
            del init.dims[:]
            init.dims.extend(dims)
            return f"init_dims {init.name} -> {dims}"
        a = numpy_helper.to_array(init)
        if kind == "init_data":  # consistent, but fewer values along axis 0 (a short bias)
            b = a[: max(0, a.shape[0] - rng.choice([1, 2, 3]))] if a.ndim else a.reshape(1)[:0]
        else:  # consistent, reshaped
            b = a.reshape(-1) if rng.random() < 0.5 else a.reshape((1,) + a.shape)
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(b), init.name))
        return f"{kind} {init.name} -> {list(b.shape)}"
    if node is None:
        return "noop"
    if kind == "drop_input" and node.input:
        j = rng.randrange(len(node.input))
        if rng.random() < 0.5:
            node.input[j] = ""
        else:
            del node.input[j]
        return f"drop_input {node.name}[{j}]"
    if kind == "rewire_input" and node.input:
        j = rng.randrange(len(node.input))
        node.input[j] = rng.choice(_tensor_names(m))
        return f"rewire_input {node.name}[{j}] -> {node.input[j]}"
    if kind == "add_input":
        node.input.append(rng.choice(_tensor_names(m)))
        return f"add_input {node.name}"
    if kind == "swap_inputs" and len(node.input) >= 2:
        i, j = rng.sample(range(len(node.input)), 2)
        node.input[i], node.input[j] = node.input[j], node.input[i]
        return f"swap_inputs {node.name}[{i},{j}]"
    if kind == "change_attr" and node.attribute:
        a = rng.choice(list(node.attribute))
        kind_of = {1: "float", 2: "int", 3: "str", 7: "ints"}.get(a.type)
        if kind_of is None:
            return "noop"
        if kind_of == "ints" and a.ints and rng.random() < 0.5:  # one element off
            v = list(a.ints)
            v[rng.randrange(len(v))] = rng.choice(INTS)
        else:
            v = _rand_attr_value(rng, kind_of)
        _set_attr(node, a.name, v)
        return f"change_attr {node.name}.{a.name} -> {v}"
    if kind == "drop_attr" and node.attribute:
        j = rng.randrange(len(node.attribute))
        name = node.attribute[j].name
        del node.attribute[j]
        return f"drop_attr {node.name}.{name}"
    if kind == "add_attr":
        name = rng.choice(sorted(ATTRS))
        v = _rand_attr_value(rng, ATTRS[name])
        _set_attr(node, name, v)
        return f"add_attr {node.name}.{name} -> {v}"
    if kind == "change_op":
        old, node.op_type = node.op_type, rng.choice(OPS)
        return f"change_op {node.name} {old} -> {node.op_type}"
    if kind == "drop_node":
        g.node.remove(node)
        return f"drop_node {node.name}"
    if kind == "drop_output" and len(node.output) > 1:
        del node.output[-1]
        return f"drop_output {node.name}"
    return "noop"


def make_case(seeds, case: int):
    """(seed name, model proto or bytes, mutation descriptions) for case number `case`."""
    import onnx

    rng = random.Random(case * 7919 + 17)
    seed_name, base = seeds[case % len(seeds)]
    m = onnx.ModelProto()
    m.CopyFrom(base)
    descs = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            d = mutate_once(m, rng)
        except Exception as e:  # noqa: BLE001 - e.g. an earlier mutation left an initializer unreadable
            d = f"noop ({type(e).__name__})"
        if isinstance(d, bytes):
            descs.append("flip_bytes")
            return seed_name, d, descs
        descs.append(d)
    return seed_name, m, descs


# --- one case ------------------------------------------------------------------------

def _names_in(model) -> set[str]:
    import onnx

    if isinstance(model, bytes):
        try:
            model = onnx.ModelProto.FromString(model)
        except Exception:
            return set()
    names = {n.name for n in model.graph.node} | {i.name for i in model.graph.initializer}
    names |= {t for n in model.graph.node for t in list(n.input) + list(n.output) if t}
    names |= {i.name for i in model.graph.input} | {o.name for o in model.graph.output}
    names |= {f"{n.op_type}_{i}" for i, n in enumerate(model.graph.node)}
    names.discard("")
    _ = onnx
    # protobuf hands back bytes for a string field whose flipped bytes are not UTF-8
    return {n for n in names if isinstance(n, str)}


def _ort_outputs(model, feeds):
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.intra_op_num_threads = 1
        data = model if isinstance(model, bytes) else model.SerializeToString()
        return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:
        return None


# Activation elements a mutant may have and still be run: 10x the largest
# seed (~150k); a mutant beyond it is only loaded and compiled.
MAX_RUN_ELEMENTS = 1_500_000


def _activation_elements(sess) -> int:
    g = sess.graph
    if g is None:
        return 0
    return sum(int(np.prod(g.shapes[o], dtype=np.float64)) for n in g.nodes for o in n.outputs if o in g.shapes)


# A mutated weight can make activations astronomically large (1e30 and more); then a softmax or a difference of
# outputs is decided by rounding (two logits near 1e35 that differ by a few units), which any two engines that sum
# in a different order give differently. Likewise when onnxruntime's own outputs hold inf or NaN (an attribute
# mutated to inf, e.g. a Gemm's alpha): whether a term comes out inf or NaN (inf * 0) depends on where the engine
# applies the factor. Such cases are run (they must not crash) but not compared; a NaN or inf of qpi's where
# onnxruntime's outputs are finite is still compared, and wrong.
ILL_CONDITIONED = 1e15


def _ill_conditioned(ours, ref) -> str | None:
    """why the outputs are not compared, or None"""
    big = any(a.dtype.kind == "f" and np.isfinite(a).any() and float(np.nanmax(np.abs(a[np.isfinite(a)]))) >
              ILL_CONDITIONED for a in list(ours) + list(ref) if a.size)
    if big:
        return f"outputs beyond {ILL_CONDITIONED:g}"
    if any(a.dtype.kind == "f" and not np.isfinite(a).all() for a in ref):
        return "onnxruntime's outputs are not finite"
    return None


def run_case(seeds, case: int, compare=True) -> dict:
    import qpi
    from qpi import errors

    seed_name, model, descs = make_case(seeds, case)
    res = {"case": case, "seed": seed_name, "mutations": descs}
    data = model if isinstance(model, bytes) else model.SerializeToString()
    try:
        s = qpi.Session(data, threads=1)
        rng = np.random.default_rng(case)
        shapes = getattr(s, "input_shapes", None) or {}
        feeds = {k: rng.standard_normal(shapes[k]).astype(np.float32) for k in s.input_names if k in shapes}
        if len(feeds) != len(s.input_names):
            res.update(result="ok", note="dynamic input, not run")
            return res
        size = _activation_elements(s)
        if size > MAX_RUN_ELEMENTS:  # valid but huge (pads=1000, ...): loads fine, runs for minutes
            res.update(result="ok", note=f"loaded; not run ({size} activation elements)")
            return res
        ours = s.run(feeds)
    except (ValueError, NotImplementedError) as e:
        msg = str(e)
        own = isinstance(e, errors.QpiError) or type(e).__module__.startswith("qpi")
        named = any(nm in msg for nm in _names_in(model)) or "<bytes>" in msg
        res.update(result="error" if own and named else "bad", cls=type(e).__name__, msg=msg[:300], named=named)
        return res
    except Exception as e:  # noqa: BLE001 - any other class is a finding
        res.update(result="bad", cls=type(e).__name__, msg=str(e)[:300], named=False)
        return res
    res["result"] = "ok"
    if compare:
        ref = _ort_outputs(data, feeds)
        why = None if ref is None else _ill_conditioned(ours, [np.asarray(r) for r in ref])
        if why:
            res["note"] = f"not compared: {why}"
            ref = None
        if ref is not None:
            if len(ref) != len(ours):
                res.update(result="wrong", msg=f"{len(ours)} outputs, onnxruntime {len(ref)}")
            else:
                for i, (a, b) in enumerate(zip(ours, ref)):
                    b = np.asarray(b)
                    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-3, atol=1e-3 * (1 + float(
                            np.nanmax(np.abs(b), initial=0) if np.isfinite(b).any() else 0)), equal_nan=True):
                        res.update(result="wrong", msg=f"output {i} differs from onnxruntime "
                                   f"(shapes {a.shape} {b.shape})")
                        break
            res["compared"] = True
    return res


# --- driver -------------------------------------------------------------------------------

def worker(args):
    import faulthandler

    seeds = seed_models(args.assets)
    for case in range(args.start, args.start + args.count):
        print(f"S {case}", flush=True)
        # a hang: the stacks go to stderr and the worker exits; the parent names the case
        faulthandler.dump_traceback_later(args.case_timeout, exit=True)
        r = run_case(seeds, case, compare=not args.no_compare)
        faulthandler.cancel_dump_traceback_later()
        print("R " + json.dumps(r), flush=True)


def run_batches(first: int, cases: int, batch: int, assets: bool, compare=True, case_timeout=30,
                python=None, log=None) -> list[dict]:
    """Run cases [first, first + cases) in subprocess batches; a batch that dies
    (signal) or hangs records the case it was in and resumes after it."""
    python = python or os.environ.get("QPI_TEST_PYTHON") or sys.executable
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    results, case, end = [], first, first + cases
    while case < end:
        n = min(batch, end - case)
        cmd = [python, "-X", "faulthandler", str(Path(__file__).resolve()), "--worker", "--start", str(case),
               "--count", str(n), "--case-timeout", str(case_timeout)] + (["--assets"] if assets else []) + ([] if compare else ["--no-compare"])
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60 + case_timeout * n)
            out, err, rc, hung = p.stdout, p.stderr, p.returncode, False
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            rc, hung = None, True
        started, done = None, set()
        for line in out.splitlines():
            if line.startswith("S "):
                started = int(line[2:])
            elif line.startswith("R "):
                r = json.loads(line[2:])
                done.add(r["case"])
                results.append(r)
        if started is not None and started not in done:  # died or hung inside this case
            why = "hang (batch timeout)" if hung else "hang (case timeout)" if "Timeout (" in err else (
                f"signal {signal.Signals(-rc).name}" if rc is not None and rc < 0 else f"exit {rc}")
            results.append({"case": started, "result": "crash", "cls": why, "msg": err[-2000:]})
            case = started + 1
        elif rc not in (0, None) or hung or (started is None and n):
            results.append({"case": case, "result": "crash", "cls": f"worker exit {rc}", "msg": err[-2000:]})
            case += n
        else:
            case += n
        if err.strip() and rc == 0 and "Fatal Python error" in err:  # faulthandler spoke
            results.append({"case": case - 1, "result": "crash", "cls": "faulthandler", "msg": err[-2000:]})
        if log:
            log(f"cases {case - n}..{case - 1}: {time.time() - t0:.1f}s")
    return results


def summarize(results) -> tuple[str, list[dict]]:
    by = collections.Counter()
    for r in results:
        by[(r["result"], r.get("cls", ""))] += 1
    bad = [r for r in results if r["result"] in ("bad", "crash", "wrong")]
    lines = [f"{len(results)} cases"] + [f"  {res:6s} {cls or '-':28s} {k}" for (res, cls), k in sorted(by.items())]
    compared = sum(1 for r in results if r.get("compared"))
    kinds = collections.Counter()
    for r in results:
        for d in r.get("mutations", []):
            kinds[(d.split()[0], r["result"])] += 1
    lines.append("  by mutation: " + ", ".join(f"{k}/{res}={v}" for (k, res), v in sorted(kinds.items())))
    lines.append(f"  ({compared} ran in both qpi and onnxruntime and were compared)")
    for r in bad[:50]:
        lines.append(f"  FAIL case {r['case']} {r.get('seed', '')} {r.get('mutations', '')}: {r['result']} "
                     f"{r.get('cls', '')}: {r.get('msg', '')[:400]}")
    return "\n".join(lines), bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--case-timeout", type=int, default=30, help="seconds before a case counts as a hang")
    ap.add_argument("--assets", action="store_true", help="also mutate the asset models (default: when present)")
    ap.add_argument("--no-assets", action="store_true")
    ap.add_argument("--no-compare", action="store_true", help="do not compare with onnxruntime")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", type=int, help="run one case in this process and print it")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if not args.no_assets and not args.assets:
        sys.path.insert(0, str(REPO / "tests"))
        from conftest import assets_dir

        args.assets = assets_dir() is not None
    if args.only is not None:
        seeds = seed_models(args.assets)
        print(make_case(seeds, args.only)[2])
        print(json.dumps(run_case(seeds, args.only, compare=not args.no_compare), indent=1))
        return 0
    t0 = time.time()
    results = run_batches(args.start, args.cases, args.batch, args.assets, compare=not args.no_compare,
                          case_timeout=args.case_timeout,
                          log=(lambda s: print(s, file=sys.stderr)) if args.v else None)
    text, bad = summarize(results)
    print(text)
    print(f"{time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
