"""The compiler's graph IR: ONNX nodes with Python attribute values, constants
as numpy arrays, and a static shape for every tensor."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper


# Every change to a node list or to a node's inputs/outputs bumps this counter;
# a graph's producer/reader index is rebuilt on the first query after a change,
# so passes may rewire nodes in place, and queries between changes cost O(1).
_generation = 0


def _bump() -> None:
    global _generation
    _generation += 1


class _Wiring(list):
    """A list that counts its changes (node lists, node inputs and outputs)."""


def _counting(name):
    base = getattr(list, name)

    def method(self, *args, **kwargs):
        _bump()
        return base(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove",
              "clear", "sort", "reverse"):
    setattr(_Wiring, _name, _counting(_name))


@dataclass(eq=False)  # a node is itself: list.remove / index / `in` by identity, not by comparing every field
class Node:
    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict = field(default_factory=dict)
    domain: str = ""

    def __setattr__(self, key, value):
        if key in ("inputs", "outputs"):
            value = _Wiring(value)
            _bump()
        object.__setattr__(self, key, value)

    def input(self, i: int) -> str:
        """Name of input i, '' when absent (ONNX optional inputs)."""
        return self.inputs[i] if i < len(self.inputs) else ""

    def __repr__(self):
        return f"{self.op}({self.name!r})"


class Uses:
    """Producer and readers of every tensor, from one scan of the nodes."""

    def __init__(self, nodes):
        self.producer: dict[str, Node] = {}
        self.readers: dict[str, list[Node]] = {}  # a node once per input slot that reads the tensor
        for n in nodes:
            for o in n.outputs:
                if o:
                    self.producer.setdefault(o, n)
            for t in n.inputs:
                if t:
                    self.readers.setdefault(t, []).append(n)


class Graph:
    def __init__(self, nodes, inputs, outputs, consts, opset, shapes=None, dtypes=None, name="graph"):
        self._uses: Uses | None = None
        self._uses_gen = -1
        self.nodes: list[Node] = nodes
        self.inputs: list[str] = inputs
        self.outputs: list[str] = outputs
        self.consts: dict[str, np.ndarray] = consts
        self.opset: int = opset
        self.shapes: dict[str, tuple] = shapes or {}
        self.dtypes: dict[str, np.dtype] = dtypes or {}
        self.name = name
        # int8 path: the scale and int8 zero point of every int8 tensor, and
        # whether const folding keeps Quantize/DequantizeLinear of constants
        # (the int8 import reads weights and their scales from them).
        self.qparams: dict[str, tuple[float, int]] = {}
        self.s8_plain: set[str] = set()  # rank-4 int8 tensors kept in plain order (qpi.qdq)
        self.keep_qdq = False
        # constants computed from static shapes (Shape / Size and what folds from them): a Q / DQ pair on one
        # (a pad size some tool quantized) folds even when keep_qdq keeps the others
        self.shape_consts: set[str] = set()
        self.s8_fallback: dict[str, tuple[str, str]] = {}  # int8 path: node -> (op, why it runs in fp32)
        self.plan = None  # plan.Planning: layout and planning decisions (stage 4), read by the lowering

    # --- queries -------------------------------------------------------
    # Producers and readers come from an index built on the first query after
    # any change to the node list or to a node's wiring (see _generation).
    @property
    def nodes(self) -> list[Node]:
        return self._nodes

    @nodes.setter
    def nodes(self, value: list[Node]) -> None:
        self._nodes = _Wiring(value)
        _bump()

    def changed(self) -> None:
        _bump()

    def uses(self) -> Uses:
        if self._uses is None or self._uses_gen != _generation:
            self._uses = Uses(self._nodes)
            self._uses_gen = _generation
        return self._uses

    def remove_node(self, node: Node) -> None:
        self._nodes.remove(node)

    def consumers(self, tensor: str) -> list[Node]:
        out: list[Node] = []
        for n in self.uses().readers.get(tensor, ()):
            if not any(m is n for m in out):
                out.append(n)
        return out

    def producer(self, tensor: str) -> Node | None:
        return self.uses().producer.get(tensor)

    def single_use(self, tensor: str) -> bool:
        """Read by exactly one node input and not a graph output."""
        return len(self.uses().readers.get(tensor, ())) == 1 and tensor not in self.outputs

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def replace_uses(self, old: str, new: str) -> None:
        for n in self.uses().readers.get(old, ()):
            n.inputs = [new if t == old else t for t in n.inputs]

    def copy(self) -> "Graph":
        nodes = [Node(n.op, n.name, list(n.inputs), list(n.outputs), dict(n.attrs), n.domain) for n in self.nodes]
        g = Graph(nodes, list(self.inputs), list(self.outputs), dict(self.consts), self.opset,
                  dict(self.shapes), dict(self.dtypes), self.name)
        g.qparams, g.keep_qdq, g.s8_plain = dict(self.qparams), self.keep_qdq, set(self.s8_plain)
        g.shape_consts = set(self.shape_consts)
        return g

    # --- ONNX round trip (used for ONNX's shape inference) ----------------
    def to_onnx(self, weights: bool = True) -> onnx.ModelProto:
        """The graph as an ONNX model. weights=False: float constants of more
        than 64 elements become typed graph inputs without data (what shape
        inference needs of them), so inferring shapes does not copy the model's
        weights through protobuf twice (it was the peak of a load's memory)."""
        def vi(name):
            shape = self.shapes.get(name)
            dt = self.dtypes.get(name, np.dtype(np.float32))
            return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dt),
                                                 list(shape) if shape is not None else None)

        nodes = []
        for n in self.nodes:
            attrs = {k: v for k, v in n.attrs.items() if not k.startswith("_")}
            node = helper.make_node(n.op, n.inputs, n.outputs, name=n.name, domain=n.domain or None)
            node.attribute.extend(_make_attr(k, v) for k, v in attrs.items())
            nodes.append(node)
        def as_input(v):
            return not weights and v.size > 64 and v.dtype.kind == "f"

        inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in self.consts.items() if not as_input(v)]
        shells = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
                  for k, v in self.consts.items() if as_input(v)]
        g = helper.make_graph(nodes, self.name, [vi(i) for i in self.inputs] + shells,
                              [vi(o) for o in self.outputs], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)])


def _make_attr(key, v):
    if isinstance(v, np.ndarray):
        return helper.make_attribute(key, numpy_helper.from_array(v))
    if isinstance(v, (list, tuple)) and not v:  # an empty list has no element to tell its type
        return helper.make_attribute(key, [], attr_type=onnx.AttributeProto.INTS)
    return helper.make_attribute(key, v)


def attr_value(a: onnx.AttributeProto):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):  # undecodable bytes become U+FFFD and fail validation as an unknown mode
        return v.decode("utf-8", errors="replace")
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8", errors="replace") for s in v]
    return v
