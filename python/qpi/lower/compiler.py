"""Lowering of the optimized, planned IR to an engine Plan: each node's
registry entry lowers it (`lower`), a merged sibling group its first
member's entry (`extra["lower_group"]`). The Compiler keeps the engine
tensor of every (tensor, layout) and inserts reorders where a consumer needs
the other layout.

Layouts: rank-4 tensors produced by convolution, pooling, resize, per-channel
and elementwise ops are NC4HW4; shape-moving ops (Reshape, Transpose, Gemm,
Softmax, ...) work on plain NCHW; int8 rank-4 tensors are NHWC. Graph inputs
and outputs are plain."""
from __future__ import annotations

import numpy as np

from .. import _engine
from ..errors import InvalidNodeError, UnsupportedModelError
from ..frontend.onnx_import import unsupported_reason
from ..ops import of
from ..ops._util import NC4, NHWC, PLAIN, S8


def to_nc4(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    cb = (c + 3) // 4
    p = np.zeros((n, cb * 4, h, w), np.float32)
    p[:, :c] = a
    return np.ascontiguousarray(p.reshape(n, cb, 4, h, w).transpose(0, 1, 3, 4, 2))


class Compiler:
    def __init__(self, graph, threads: int):
        self.g = graph
        self.plan = _engine.Plan(threads)
        self.ids: dict[tuple, int] = {}
        self.produced: dict = {}  # tensor -> layout it was produced in
        self.n_reorders = 0
        self.in_place: set[str] = set()  # tensors written in place in a Concat's output (plan/inplace_concat.py)
        self.view_root: dict[int, tuple[int, int]] = {}  # view tensor -> (its base, element offset): views of views

    # --- tensors ---------------------------------------------------------
    def shape(self, name):
        return tuple(int(d) for d in self.g.shapes[name])

    def layout_of(self, name):
        return PLAIN if name in self.g.consts else self.produced[name]

    def const(self, name, layout=PLAIN) -> int:
        key = (name, layout)
        if key not in self.ids:
            a = np.asarray(self.g.consts[name])
            if a.dtype.kind not in "fiub":
                raise UnsupportedModelError([("(constant)", name, f"dtype {a.dtype} used as data")])
            a = np.ascontiguousarray(a, dtype=np.float32)
            data = to_nc4(a) if layout == NC4 else a
            self.ids[key] = self.plan.add_tensor(name, list(a.shape), layout, data.reshape(-1))
        return self.ids[key]

    def get(self, name, layout=None) -> int:
        """Engine tensor for `name` in `layout` (None: as produced)."""
        if name in self.g.consts:
            return self.const(name, PLAIN if layout is None else layout)
        have = self.produced[name]
        if layout is None or layout == have:
            return self.ids[(name, have)]
        if (name, layout) not in self.ids:
            if len(self.shape(name)) != 4:
                raise AssertionError(f"reorder of non-4D tensor {name}")
            tid = self.plan.add_tensor(f"{name}@{'nc4' if layout == NC4 else 'nchw'}", list(self.shape(name)),
                                       layout, None)
            self.emit("reorder", f"reorder_{name}", [self.ids[(name, have)]], [tid])
            self.ids[(name, layout)] = tid
            self.n_reorders += 1
        return self.ids[(name, layout)]

    def new(self, name, layout=PLAIN, shape=None) -> int:
        shape = self.shape(name) if shape is None else tuple(shape)
        if len(shape) != 4:
            layout = PLAIN
        dest = self.g.plan.dest
        if name in dest and layout == PLAIN:  # its part of an in-place Concat
            base, off = dest[name]
            tid = self.plan.add_view(name, self.concat_base(base), off, list(shape), writable=True)
            self.in_place.add(name)
        else:
            tid = self.plan.add_tensor(name, list(shape), layout, None)
        self.ids[(name, layout)] = tid
        self.produced[name] = layout
        return tid

    def view(self, name, base, offset, layout, writable=False) -> int:
        """`name` as a view of engine tensor `base` from element `offset` (batch 1 channel ranges)."""
        base, off0 = self.view_root.get(base, (base, 0))  # the engine views a computed tensor, not a view
        offset += off0
        tid = self.plan.add_view(name, base, offset, list(self.shape(name)), writable=writable)
        self.view_root[tid] = (base, offset)
        self.ids[(name, layout)] = tid
        self.produced[name] = layout
        return tid

    def concat_base(self, y) -> int:
        """The plain tensor of an in-place Concat's output, made by its first writer."""
        if (y, PLAIN) not in self.ids:
            self.new(y, PLAIN)
        return self.ids[(y, PLAIN)]

    def new_s8(self, name) -> int:
        """An int8 tensor: NHWC when rank 4 (unless graph.s8_plain), plain otherwise."""
        shape = self.shape(name)
        layout = NHWC if len(shape) == 4 and name not in self.g.s8_plain else PLAIN
        tid = self.plan.add_tensor(name, list(shape), layout, None, S8)
        self.ids[(name, layout)] = tid
        self.produced[name] = layout
        return tid

    def get_s8(self, name) -> int:
        return self.ids[(name, self.produced[name])]

    def emit(self, type_, node, ins, outs, ints=None, floats=None, blobs=()):
        try:
            self.plan.add_op(type_, node, list(ins), list(outs),
                             {k: [int(x) for x in v] for k, v in (ints or {}).items()},
                             {k: [float(x) for x in v] for k, v in (floats or {}).items()},
                             [np.ascontiguousarray(b).reshape(-1) if np.asarray(b).dtype == np.int8 else
                              np.ascontiguousarray(b, dtype=np.float32).reshape(-1) for b in blobs])
        except ValueError as e:  # the engine's own checks (std::invalid_argument)
            raise InvalidNodeError([(type_, node, f"rejected by the engine: {e}")]) from None

    # --- driver ------------------------------------------------------------
    def compile(self):
        g = self.g
        for name in g.inputs:
            dt = g.dtypes.get(name, np.dtype(np.float32))
            if dt != np.float32:
                raise UnsupportedModelError([("(input)", name, f"input dtype {dt}; qpi runs float32 inputs")])
            self.new(name, PLAIN)
        siblings = g.plan.siblings
        for node in g.nodes:
            group = siblings.get(node.name)
            if group:
                if node is group[0]:
                    of(node).extra["lower_group"](self, group)
                continue
            of(node).lower(self, node)
        outs = []
        for name in g.outputs:
            if name in g.consts or name in g.inputs or self.get(name, PLAIN) in outs:
                src = self.get(name, PLAIN)
                tid = self.plan.add_tensor(f"{name}@out{len(outs)}", list(self.shape(name)), PLAIN, None)
                self.emit("copy", f"output_{name}", [src], [tid])
                outs.append(tid)
            else:
                outs.append(self.get(name, PLAIN))
        self.plan.set_io([self.ids[(n, PLAIN)] for n in g.inputs], outs)
        self.plan.finalize()
        return self.plan


def compile_graph(graph, threads: int):
    """(engine Plan, reorders inserted) of a graph after its passes (planned here unless plan.run has run)."""
    if graph.plan is None:
        from .. import plan as planning

        planning.run(graph)
    problems = [(n.op, n.name, r) for n in graph.nodes if (r := unsupported_reason(graph, n))]
    if problems:
        raise UnsupportedModelError(problems)
    c = Compiler(graph, threads)
    return c.compile(), c.n_reorders
