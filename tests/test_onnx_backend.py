"""ONNX's own node tests (onnx.backend.test) through qpi, for every op qpi
supports. INCLUDE lists the op families; EXCLUDE names each test group left
out and why (the reasons are the documented limits of the engine)."""
import importlib
import re
import unittest

import onnx.backend.test
import onnx.backend.test.case.base
import onnx.backend.test.runner

from qpi.backend import QpiBackend

INCLUDE = [
    "conv", "batchnorm", "relu", "clip", "leakyrelu", "prelu", "sigmoid", "hardsigmoid", "hardswish",
    "add", "sub", "mul", "div", "concat", "maxpool", "averagepool", "globalaveragepool", "globalmaxpool",
    "reduce_mean", "gemm", "matmul", "flatten", "reshape", "transpose", "squeeze", "unsqueeze", "softmax",
    "logsoftmax", "resize", "upsample", "pad", "constant_pad", "edge_pad", "reflect_pad", "wrap_pad", "slice",
    "split", "constant", "identity", "dropout", "shape", "gather", "cast", "max", "min", "sum", "mean",
    "convtranspose", "depthtospace", "spacetodepth", "mish", "softplus", "tanh", "erf", "gelu", "exp", "sqrt", "pow",
    "instancenorm", "reduce_max", "reduce_min", "reduce_sum", "reduce_sum_square", "reduce_l1", "reduce_l2",
]

EXCLUDE = {
    "the runtime is float32-only: tensors of other element types at run time": [
        r"(int8|int16|int32|int64|uint8|uint16|uint32|uint64|double|float64|float16|bfloat16|bool|string|float8|e4m3|e5m2"
        r"|int4|uint4|float4|FLOAT8|FLOAT16|BFLOAT16|DOUBLE|STRING|INT4|UINT4|INT2|UINT2|FLOAT4)",
        r"^test_(edge|reflect|wrap)_pad_cpu$",  # int32 data
        r"^test_shape_",  # int64 output (Shape folds to a constant when it feeds the graph)
        r"^test_cast_",   # every Cast test changes the element type
    ],
    "function-expanded variants are made of ops qpi does not run (CastLike, Where, Less, Exp, ReduceSum, ...)": [
        r"_expanded(_ver\d+)?_cpu$",
    ],
    "only 2-D pooling (rank-4 tensors)": [r"^test_(average|max)pool_(1d|3d)_"],
    "MaxPool's Indices output is not supported": [r"^test_maxpool_with_argmax_"],
    "training-mode BatchNormalization / Dropout mask outputs": [r"^test_batchnorm_.*training_mode",
                                                                  r"^test_dropout_default_mask"],
    "Gather runs with constant indices only (a Slice, or folded at load); these feed them as inputs":
        [r"^test_gather_"],
    "optional and sequence types": [r"^test_identity_(opt|sequence)_", r"^test_split_to_sequence_"],
    "align_corners with a non-integer scale: the reference divides by in*scale - 1, onnxruntime (and PyTorch)"
    " by the integer output size - 1; qpi matches onnxruntime (tests/test_kernels.py::test_resize)": [
        r"^test_resize_downsample_scales_(linear|cubic)_align_corners_cpu$"],
    "the test feeds a [1] array to a rank-0 input (qpi checks input ranks)": [r"^test_gemm_default_scalar_bias_",
                                                                            r"^test_pow_bcast_scalar_"],
    "only 2-D transposed convolution (rank-4 tensors)": [r"^test_convtranspose_(1d|3d)_"],
    "opset < 7 (pytorch-converted models at opset 6)": [r"^test_softmax_(functional_dim3|lastdim)_cpu$"],
}

# onnx builds its node tests by running every exporter of onnx.backend.test.case.node (no data files ship):
# 13 s here and over two minutes under qemu, most of the aarch64 leg's collection. Only the modules of the
# included ops run (a module is named for its op but for these), and of those not the exporters whose test an
# EXCLUDE pattern leaves out (the 1-D and 3-D pooling ones: their pure-Python reference took 115 of the 130 s
# under qemu). Against the full load: the same 271 tests run, onnx 1.23.
CASE_MODULE = {"batchnorm": "batch_normalization", "instancenorm": "instance_normalization", "constant_pad": "pad",
               "edge_pad": "pad", "reflect_pad": "pad", "wrap_pad": "pad"}


def _excluded(test_name):
    return any(re.search(p, test_name + "_cpu") for ps in EXCLUDE.values() for p in ps)


def _load_included(data_dir=None, kind=None):
    if kind != "node":
        return _load_model_tests(kind=kind)
    exporter = onnx.backend.test.case.base._Exporter
    run_all = exporter.__init__

    def run_included(cls, name, bases, dct):  # an exporter export_x makes the test test_x
        run_all(cls, name, bases, {k: v for k, v in dct.items()
                                   if not (k.startswith("export_") and _excluded("test_" + k[len("export_"):]))})

    exporter.__init__ = run_included
    try:
        for op in INCLUDE:
            importlib.import_module("onnx.backend.test.case.node." + CASE_MODULE.get(op, op.replace("_", "")))
    finally:
        exporter.__init__ = run_all
    from onnx.backend.test.case.node import _NodeTestCases
    return list(_NodeTestCases)


_load_model_tests = onnx.backend.test.runner.load_model_tests
onnx.backend.test.runner.load_model_tests = _load_included
try:
    backend_test = onnx.backend.test.BackendTest(QpiBackend, __name__)
finally:
    onnx.backend.test.runner.load_model_tests = _load_model_tests
for op in INCLUDE:
    backend_test.include(rf"^test_{op}(_.*)?_cpu$")
for patterns in EXCLUDE.values():
    for pattern in patterns:
        backend_test.exclude(pattern)

globals().update(backend_test.test_cases)

if __name__ == "__main__":
    unittest.main()
