"""bench/arm_icount.py end to end on one tiny shape: cross-builds the kernel
harness, counts a NEON variant and the generic kernel under qemu as a
Cortex-A72, and checks the records' form and that the counts are sane (the
NEON kernel's fmla share is a fraction in (0, 1]; it needs fewer instructions
per output than the generic one). Skipped without the cross toolchain, qemu
or plugin support."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, arm_tools_missing


def _why_not():
    if os.environ.get("QPI_MAX_ISA"):
        return "the host's ISA level plays no part (it drives qemu itself): runs at the native level only"
    why = arm_tools_missing("aarch64-linux-gnu-g++", "qemu-aarch64", "g++")
    if why:
        return why
    r = subprocess.run(["qemu-aarch64", "-plugin", "help"], capture_output=True, text=True)
    if "plugin" in (r.stderr + r.stdout).lower() and "not" in (r.stderr + r.stdout).lower():
        return "qemu built without plugin support"
    return None


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_arm_icount_tiny_dwconv(tmp_path):
    out = tmp_path / "icount.json"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "arm_icount.py"), "--families", "dwconv3x3",
                        "--shape", "1,8,9,10,8,3,3,1,1,8,1", "--json", str(out),
                        "--work", str(REPO / "build" / "arm_icount")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    assert len(recs) == 2
    by = {x["variant"]: x for x in recs}
    assert set(by) == {"generic", "neon"}
    for x in recs:
        assert x["family"] == "dwconv3x3" and x["cpu"] == "cortex-a72" and x["shape"].startswith("1x8x9x10")
        assert x["instructions_per_output"] > 0
        assert set(x["class_share"]) >= {"fmla", "load", "store"}
        assert all(0 <= v <= 1 for v in x["class_share"].values())
    assert 0 < by["neon"]["class_share"]["fmla"] <= 1
    assert by["neon"]["instructions_per_output"] < by["generic"]["instructions_per_output"]


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_arm_layers_s8_picks_per_cpu(tmp_path):
    """bench/arm_layers_s8.py on a two-conv model: each layer runs through the kernel the dispatcher picks under
    the emulated CPU (the dot-product ones only as cortex-a76), and the records add up."""
    from onnx import helper

    from conftest import make_model, rand

    nodes = [helper.make_node("Conv", ["x", "w1"], ["t"], name="pw"),
             helper.make_node("Conv", ["t", "w2"], ["y"], pads=[1, 1, 1, 1], group=16, name="dw")]
    model = make_model(nodes, [("x", [1, 8, 6, 7])], [("y", [1, 16, 6, 7])],
                       [("w1", rand((16, 8, 1, 1))), ("w2", rand((16, 1, 3, 3), 1))])
    path = tmp_path / "two.onnx"
    path.write_bytes(model.SerializeToString())
    out = tmp_path / "layers.json"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "arm_layers_s8.py"), str(path), "--json", str(out),
                        "--work", str(REPO / "build" / "arm_icount")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    assert len(recs) == 4
    got = {(x["cpu"], x["nodes"][0]): x["kernel"] for x in recs}
    assert got == {("cortex-a72", "pw"): "conv_s8_gemm_smlal_neon", ("cortex-a72", "dw"): "conv_s8_dw3x3_c16_neon",
                   ("cortex-a76", "pw"): "conv_s8_gemm_sdot_neon_dotprod",
                   ("cortex-a76", "dw"): "conv_s8_dw3x3_sdot_neon_dotprod"}
    for x in recs:
        assert x["layers"] == 1 and x["instructions"] > 0 and 0 < x["mac_share"] <= 1
    assert "two.onnx, cortex-a76: 2 convolutions" in r.stdout


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_harness_s8_pool_and_conv_transpose():
    """bench/arm_icount/harness_s8.cc's pool, ConvTranspose, resize and broadcast Mul commands (the pool_s8 /
    gap_s8 / conv_transpose_s8 / resize_s8 / bcast_mul_s8 records of bench/arm_icount_s8.py): each table is listed,
    and on the harness's inputs the NEON pools, the ConvTranspose drivers (their phases on the conv_s8 NEON
    kernels), the NEON resize and the NEON broadcast Mul give the generic kernel's checksum."""
    sys.path.insert(0, str(REPO / "bench"))
    import arm_icount as base
    import arm_icount_s8 as s8

    harness, _ = base.build(REPO / "build" / "arm_icount", s8.HARNESS_SRC)

    def run(*args):
        r = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a72", str(harness), *map(str, args)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    listed = {line.split()[0] for line in run("--list").splitlines() if line.strip()}
    assert {"pool2d_s8_neon", "pool2d_s8_generic", "conv_transpose_s8_gemm", "conv_transpose_s8_phase",
            "conv_transpose_s8_generic"} <= listed

    def checksum(name, *shape):
        out = run(name, 1, *shape)
        assert out.startswith(f"{name} checksum "), out
        return int(out.split()[2])

    for kind, k, st, pad in [(0, 3, 2, 1), (1, 3, 1, 1), (1, 5, 1, 0)]:  # MaxPool, AveragePool, k = H
        shape = (1, 24, 5, 7, kind, k, k, st, pad, 1)
        assert checksum("pool2d_s8_neon", *shape) == checksum("pool2d_s8_generic", *shape), shape
    assert "gap_s8_neon" in listed
    # the global average pool's kernel: C <= 64 flat with a tail of pixels, wider C in blocks (the last one
    # narrower) over more than 256 pixels
    for n, c, h, w in [(1, 24, 5, 7), (1, 3, 20, 20), (2, 200, 2, 96), (1, 130, 17, 19)]:
        shape = (n, c, h, w, 1, h, w, 1, 0, 1)
        assert checksum("gap_s8_neon", *shape) == checksum("pool2d_s8_generic", *shape), shape
    for shape in [(1, 8, 5, 6, 16, 2, 2, 2, 0, 1), (1, 16, 4, 5, 8, 4, 4, 2, 1, 1), (1, 16, 4, 5, 16, 4, 4, 2, 1, 16)]:
        ref = checksum("conv_transpose_s8_generic", *shape)
        assert checksum("conv_transpose_s8_phase", *shape) == ref, shape
        if shape[5] == 2:
            assert checksum("conv_transpose_s8_gemm", *shape) == ref, shape
    assert {"resize_nearest_s8_neon", "resize_nearest_s8_generic"} <= listed
    for shape in [(1, 3, 5, 7, 2), (1, 24, 4, 3, 4), (2, 33, 3, 5, 3)]:  # N C H W F: an F x F upsample
        args = shape + (0, 0, 0, 0, 0)
        assert checksum("resize_nearest_s8_neon", *args) == checksum("resize_nearest_s8_generic", *args), shape
    # the squeeze-excite gate's broadcast Mul (int16 fixed point), channel counts around the 8-lane steps
    assert {"binary_bcast_s8_neon", "binary_bcast_s8_generic"} <= listed
    for n, c, h, w in [(1, 96, 3, 5), (2, 13, 4, 4), (1, 200, 2, 9)]:
        args = (n, c, h, w, 1, 1, 1, 1, 0, 1)
        assert checksum("binary_bcast_s8_neon", *args) == checksum("binary_bcast_s8_generic", *args), (n, c, h, w)
