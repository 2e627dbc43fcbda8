"""The per-function side of the ARM instruction counts (bench/arm_icount/plugin.cpp's tbs= and marks=,
bench/arm_model_icount_s8.py's generic classification) and bench/arm_icount.py's asymmetric strides.

Expected values come from the program under the plugin (loops of known trip counts) and from the plugin's own
total, never from the per-block profile being checked. Skipped without the cross toolchain, qemu or plugin
support."""
import json
import subprocess
import sys

import pytest

from conftest import REPO
from test_arm_icount import _why_not

sys.path.insert(0, str(REPO / "bench"))

PROG = r"""
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
static volatile long sink;
__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; ++i) sink += i; }
int main(void) {
  syscall(0x5150, 0);
  spin(1000);
  syscall(0x5150, 1);
  spin(3000);
  syscall(0x5150, 2);
  printf("%ld\n", (long)sink);
  return 0;
}
"""


def _counts(path):
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


def _tb_total(path):
    tot = 0
    for line in path.read_text().splitlines():
        _, n, c = line.split()
        tot += int(n) * int(c)
    return tot


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_plugin_marks_and_blocks(tmp_path):
    import arm_icount

    plugin = arm_icount.build_plugin(REPO / "build" / "arm_icount")
    src, exe = tmp_path / "p.c", tmp_path / "p"
    src.write_text(PROG)
    subprocess.run(["aarch64-linux-gnu-gcc", "-O1", "-static", "-o", str(exe), str(src)], check=True)
    out, tbs, marks = tmp_path / "c.txt", tmp_path / "t.txt", tmp_path / "mk"
    r = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a72", "-plugin", f"{plugin},out={out},tbs={tbs},marks={marks}",
                        str(exe)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sum(range(1000)) + sum(range(3000)))
    # the per-block profile adds up to the per-instruction total, at every mark and at exit
    assert _tb_total(tbs) == _counts(out)["total"]
    m = [_counts(tmp_path / f"mk.{k}.counts")["total"] for k in range(3)]
    for k in range(3):
        assert _tb_total(tmp_path / f"mk.{k}.tbs") == m[k]
    assert m[0] < m[1] < m[2] < _counts(out)["total"]
    # 3000 iterations against 1000: the same loop, so 3x up to the call and mark overhead (a few dozen)
    d1, d2 = m[1] - m[0], m[2] - m[1]
    assert d1 > 1000 and abs(d2 - 3 * d1) < 200, (d1, d2)


def test_generic_classification():
    import arm_model_icount_s8 as m

    assert m._base("void qpi::dequantize_bound_generic<(qpi::QBound)0>(qpi::X const&)") == "dequantize_bound_generic"
    assert m._base("qpi::(anonymous namespace)::tile(int) [clone ._omp_fn.0]") == "tile"
    # named generic; an entry named *generic* that runs a function without the word; a generic.cc helper
    assert m.is_generic("qpi::conv2d_generic(qpi::Conv2dParams const&)", ["kernels/conv2d/generic.cc"])
    assert m.is_generic("qpi::global_pool_nc4(qpi::GlobalPoolParams const&, float const*, float*, int)",
                        ["kernels/pool2d/global_nc4.cc"])
    assert m.is_generic("qpi::(anonymous namespace)::helper(int)", ["kernels/conv2d/generic.cc"])
    # NEON code, and a generic.cc entry of another name (slice_runs runs its own baseline memcpy runs)
    assert not m.is_generic("void qpi::(anonymous namespace)::run_tiles<2, 0, false>(float const*)",
                            ["kernels/gemm_nc4/neon.cc"])
    assert not m.is_generic("qpi::slice_runs(qpi::SliceParams const&)", ["kernels/layout/generic.cc"])
    assert not m.is_generic("qpi::helper(int)", ["kernels/conv2d/generic.cc", "kernels/dwconv/neon.cc"])


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_arm_icount_asymmetric_stride(tmp_path):
    out = tmp_path / "icount.json"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "arm_icount.py"), "--families", "dwconv_asym",
                        "--shape", "1,8,9,10,8,3,3,2x1,1,8,1", "--json", str(out),
                        "--work", str(REPO / "build" / "arm_icount")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    by = {x["variant"]: x for x in recs}
    assert set(by) == {"generic", "neon"}
    for x in recs:
        assert x["shape"] == "1x8x9x10->8 k3x3 s2x1 p1 g8"
        # outputs: 8 channels x ((9 + 2 - 3) // 2 + 1) x ((10 + 2 - 3) // 1 + 1) = 8 x 5 x 10
        assert x["instructions"] == pytest.approx(x["instructions_per_output"] * 8 * 5 * 10)
    assert by["neon"]["instructions_per_output"] < by["generic"]["instructions_per_output"]
    assert "not covered: conv_transpose" in r.stdout
