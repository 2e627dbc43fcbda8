"""Validation of an imported graph before any pass or lowering sees it.

Every node of a registered op is checked against its registry entry: how
many inputs and outputs it takes, its attributes (lengths and ranges), and
its constant operands (weights, biases, axes tables) against the static
shapes (the entry's `check`). A malformed node is an InvalidNodeError (a
ValueError) naming the node and what is wrong; passes and lowerings may then
index attributes and constants without checking. Ops without an arity in the
registry are left to the support check."""
from __future__ import annotations

import numpy as np

from ..errors import InvalidNodeError
from ..ops import of

MAX_ELEMENTS = 1 << 31  # per tensor: 8 GiB of float32, beyond any model qpi targets


def validate(graph) -> None:
    """Raise InvalidNodeError listing every malformed node of `graph`."""
    problems = []
    for n in graph.nodes:
        spec = of(n)
        if spec.inputs is None or spec.domain:
            continue
        whys = list(_arity(graph, n, spec))
        for t in n.outputs:
            s = graph.shapes.get(t) if t else None
            if s is not None and int(np.prod(s, dtype=np.float64)) > MAX_ELEMENTS:
                whys.append(f"output {t!r} of shape {list(s)} has over {MAX_ELEMENTS} elements")
        if not whys and spec.check is not None:
            whys = list(spec.check(graph, n))
        problems += [(n.op, n.name, w) for w in whys]
    if problems:
        raise InvalidNodeError(problems)


def check_initializers(proto_graph) -> dict[str, np.ndarray]:
    """Initializers as arrays; dims that disagree with the stored data are an
    InvalidNodeError naming the initializer."""
    from onnx import numpy_helper

    consts = {}
    for init in proto_graph.initializer:
        try:
            a = numpy_helper.to_array(init)
        except Exception as e:  # data of the wrong length for the dims, unknown dtype, ...
            raise InvalidNodeError([("(initializer)", init.name,
                                     f"dims {list(init.dims)} do not match its data ({type(e).__name__}: {e})")]) from None
        if any(d < 0 for d in init.dims):
            raise InvalidNodeError([("(initializer)", init.name, f"negative dims {list(init.dims)}")])
        consts[init.name] = a
    return consts


def _arity(g, n, spec):
    lo, hi = spec.inputs(g) if callable(spec.inputs) else spec.inputs
    k = len(n.inputs)
    if k < lo or (hi is not None and k > hi):
        yield f"takes {_range(lo, hi)} inputs, has {k}"
        return
    need = lo if spec.required_inputs is None else spec.required_inputs
    if hi is None:
        need = k  # variadic inputs are never optional
    for i in range(need):
        if not n.inputs[i]:
            yield f"required input {i} is missing"
    olo, ohi = spec.outputs
    if len(n.outputs) < olo or (ohi is not None and len(n.outputs) > ohi):
        yield f"has {_range(olo, ohi)} outputs, has {len(n.outputs)}"
    elif not n.outputs[0]:
        yield "output 0 has no name"


def _range(lo, hi):
    return f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo}..{hi}")
