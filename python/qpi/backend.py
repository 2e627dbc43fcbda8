"""onnx.backend interface over qpi, for ONNX's own node tests.

Inputs of a non-float32 type (shape tensors, pads, axes, indices) and inputs
in parameter positions (weights, scales, clip bounds: the registry entry's const_inputs) are bound
as constants of the model when the test runs: qpi compiles static graphs, and
an exporter writes those as initializers."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep, namedtupledict

from .ops import of_proto
from .session import Session


def _param_names(model: onnx.ModelProto) -> set[str]:
    names = set()
    for n in model.graph.node:
        for i in of_proto(n).const_inputs:
            if i < len(n.input) and n.input[i]:
                names.add(n.input[i])
    return names


class QpiRep(BackendRep):
    def __init__(self, model: onnx.ModelProto):
        self.model = model

    def run(self, inputs, **kwargs):
        graph_inputs = [i.name for i in self.model.graph.input
                        if i.name not in {t.name for t in self.model.graph.initializer}]
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            feeds = dict(zip(graph_inputs, inputs if isinstance(inputs, (list, tuple)) else [inputs]))
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        data = {}
        params = _param_names(model)
        for name, v in feeds.items():
            v = np.asarray(v)
            if v.dtype == np.float32 and name not in params:
                data[name] = v
            else:
                model.graph.initializer.append(numpy_helper.from_array(v, name))
                kept = [i for i in model.graph.input if i.name != name]
                del model.graph.input[:]
                model.graph.input.extend(kept)
        sess = Session(model, shapes={k: v.shape for k, v in data.items()})
        outs = sess.run([data[n] for n in sess.input_names])
        return namedtupledict("Outputs", sess.output_names)(*outs)


class QpiBackend(Backend):
    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return QpiRep(model)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


prepare = QpiBackend.prepare
run_model = QpiBackend.run_model
supports_device = QpiBackend.supports_device
