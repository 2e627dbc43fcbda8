"""Exceptions qpi raises for bad models and bad inputs. Each message names the
file, node, op or input concerned."""


class QpiError(Exception):
    """Base class."""


class ModelLoadError(QpiError, ValueError):
    """The model file or bytes could not be read or parsed as ONNX."""


class QuantizationError(QpiError, ValueError):
    """A quantized model carries bad quantization parameters (scale zero,
    negative or not finite, a per-channel count that is not the channel
    count, a zero point outside its type); the message names the node."""


class NotQuantizedError(QpiError, ValueError):
    """precision="int8" on a model that carries no quantization (no
    QuantizeLinear / DequantizeLinear): it must be calibrated first."""


class UnsupportedModelError(QpiError, NotImplementedError):
    """The model uses ops, attributes or opsets this engine does not run."""

    def __init__(self, problems: list[tuple[str, str, str]]):
        # problems: (op type, node name, why)
        self.problems = problems
        by_op: dict[str, list[str]] = {}
        for op, node, why in problems:
            by_op.setdefault(op, []).append(f"{node!r}" + (f" ({why})" if why else ""))
        lines = [f"  {op}: " + ", ".join(nodes) for op, nodes in sorted(by_op.items())]
        super().__init__(f"model has {len(problems)} unsupported node(s), "
                         f"op types {sorted(by_op)}:\n" + "\n".join(lines))


class InvalidNodeError(QpiError, ValueError):
    """A node breaks the ONNX spec: wrong number of inputs or outputs, an
    attribute of the wrong length or out of range, a weight or bias whose
    shape does not fit, an initializer whose dims do not match its data."""

    def __init__(self, problems: list[tuple[str, str, str]]):
        # problems: (op type, node name, what is wrong)
        self.problems = problems
        lines = [f"  {op} node {node!r}: {why}" for op, node, why in problems]
        head = lines[0].strip() if len(lines) == 1 else f"model has {len(problems)} invalid node(s):"
        super().__init__(head if len(lines) == 1 else head + "\n" + "\n".join(lines))
