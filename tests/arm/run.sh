#!/usr/bin/env bash
# The pytest suite on aarch64 under qemu-user, as a Raspberry Pi 4 (cortex-a72,
# ARMv8.0, no dot product) and an ARMv8.2 core with dotprod (cortex-a76).
# Cross-builds the qpi wheel (baseline -march=armv8-a), gates the binary with
# objdump, makes an arm64 Python rootfs without emulation (mmdebstrap
# --variant=extract) and adds aarch64 wheels from PyPI for the test deps.
#
#   tests/arm/run.sh                 build + gates + suite under both CPU models
#   QPI_ARM_BREAK=conv2d tests/arm/run.sh   self-check: compile kernels/conv2d/generic.cc
#                                    for ARMv8.2; the run must fail
# Env: QPI_ARM_WORK (default _arm/), QPI_ARM_CPUS ("cortex-a72 cortex-a76"),
#      QPI_TEST_PHOTOS (photos per real-model test under emulation, default 1),
#      QPI_ARM_WAIT_FOR (a file: the legs run without test_int8_shared_zoo.py, which runs once it exists).
set -euo pipefail
t0=$SECONDS
step() { echo "== [arm $((SECONDS - t0))s] $*"; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${QPI_ARM_WORK:-$REPO/_arm}
mkdir -p "$WORK"
TC=$REPO/cmake/aarch64-linux-gnu.toolchain.cmake
export DEBIAN_FRONTEND=noninteractive
ulimit -c 0  # qemu writes core files for guest crashes otherwise

step "apt: cross toolchain, qemu-user, mmdebstrap"
need=()
for p in g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user mmdebstrap python3-venv; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
aarch64-linux-gnu-g++ --version | head -1
qemu-aarch64 --version | head -1

step "arm64 Python rootfs (Debian bookworm, extracted only)"
ROOT=$WORK/arm64root
MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$MIRROR" ] || MIRROR=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian
if [ ! -x "$ROOT/usr/bin/python3" ]; then
  rm -rf "$ROOT"
  mmdebstrap --quiet --arch=arm64 --variant=extract \
    --include=python3,libpython3.11-dev,libstdc++6,zlib1g,libjpeg62-turbo,libpng16-16 \
    bookworm "$ROOT" "deb $MIRROR bookworm main"
fi
PYINC=$WORK/pyinc-aarch64
rm -rf "$PYINC" && mkdir -p "$PYINC"
cp -r "$ROOT/usr/include/python3.11" "$PYINC/"
cp "$ROOT/usr/include/aarch64-linux-gnu/python3.11/pyconfig.h" "$PYINC/python3.11/pyconfig.h"
# qemu-user shows the guest the host's /proc/cpuinfo; ARM code that parses it
# (cpuinfo inside onnxruntime) crashes on x86 text. Paths under -L win.
mkdir -p "$ROOT/proc"
for i in 0 1; do printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n' $i; done > "$ROOT/proc/cpuinfo"

SITE=$WORK/site
PYWRAP=$WORK/python-aarch64
cat > "$PYWRAP" <<WRAP
#!/bin/bash
exec qemu-aarch64 -L "$ROOT" -U PYTHONDONTWRITEBYTECODE -E PYTHONPATH="$SITE" "$ROOT/usr/bin/python3" "\$@"
WRAP
chmod +x "$PYWRAP"
EXT_SUFFIX=$("$PYWRAP" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
echo "target EXT_SUFFIX=$EXT_SUFFIX"

step "host build venv (Debian python3.11, the minor version of the target)"
[ -x "$WORK/venv/bin/pip" ] || /usr/bin/python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q scikit-build-core nanobind cmake ninja

step "test dependencies: aarch64 wheels from PyPI"
if [ ! -f "$SITE/.deps-ok" ]; then
  rm -rf "$SITE"
  "$WORK/venv/bin/pip" install -q --target "$SITE" --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
    --platform manylinux_2_17_aarch64 --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
    numpy onnx onnxruntime pillow tqdm pytest
  touch "$SITE/.deps-ok"
fi

step "cross-build the qpi wheel (scikit-build-core, toolchain file)"
BREAK_ARGS=()
if [ -n "${QPI_ARM_BREAK:-}" ]; then
  echo "!! self-check: kernels/$QPI_ARM_BREAK/generic.cc compiled with -march=armv8.2-a+dotprod"
  BREAK_ARGS=(--config-settings=cmake.define.QPI_BREAK_GENERIC_TU="$QPI_ARM_BREAK")
fi
rm -rf "$WORK/dist"
env CMAKE_TOOLCHAIN_FILE="$TC" SETUPTOOLS_EXT_SUFFIX="$EXT_SUFFIX" _PYTHON_HOST_PLATFORM=linux-aarch64 \
  "$WORK/venv/bin/pip" wheel "$REPO" --no-build-isolation --no-deps -w "$WORK/dist" -q \
  --config-settings=cmake.define.Python_INCLUDE_DIR="$PYINC/python3.11" \
  --config-settings=build-dir="$WORK/build-${QPI_ARM_BREAK:-py}" "${BREAK_ARGS[@]}"
ls "$WORK/dist"
rm -rf "$SITE/qpi" "$SITE"/qpi-*.dist-info
"$WORK/venv/bin/pip" install -q --no-deps --target "$SITE" --platform linux_aarch64 --only-binary=:all: \
  --python-version 3.11 --implementation cp --abi cp311 "$WORK"/dist/qpi-*.whl

step "ISA gates: flags per file, dot-product instructions per object, LSE atomics in the module"
BUILD=$WORK/build-${QPI_ARM_BREAK:-py}
fail=0
# 1. flags: only kernels/*/neon_dotprod.cc may be compiled for ARMv8.2+ (gcc
#    often emits the same code for fp32 loops, so instructions alone miss it)
bad_flags=$(python3 - "$BUILD/compile_commands.json" <<'PY'
import json, re, sys
for e in json.load(open(sys.argv[1])):
    marchs = re.findall(r"-march=(\S+)", e["command"])
    f = e["file"]
    if marchs and marchs[-1] != "armv8-a" and not f.endswith("/neon_dotprod.cc"):
        print(f"{f}: -march={marchs[-1]}")
PY
)
if [ -n "$bad_flags" ]; then echo "FAIL: files outside the dotprod translation units built for a newer ISA:"; echo "$bad_flags"; fail=1; fi
# 2. instructions: sdot/udot/smmla only in neon_dotprod objects
n_obj=0
while IFS= read -r obj; do
  n_obj=$((n_obj + 1))
  case "$obj" in */neon_dotprod.cc.o) continue ;; esac
  if aarch64-linux-gnu-objdump -d --no-show-raw-insn "$obj" | grep -qE $'\t(sdot|udot|usdot|sudot|smmla|ummla|usmmla)\t'; then
    echo "FAIL: dot-product / matrix-multiply instructions in $obj"; fail=1
  fi
done < <(find "$BUILD" -name '*.o' -path '*_engine.dir*')
# 3. LSE atomics anywhere in the linked module (statically linked helpers included)
SO=$(ls "$SITE"/qpi/_engine*.so)
n_lse=$(aarch64-linux-gnu-objdump -d --no-show-raw-insn "$SO" \
        | grep -cE $'\t(ldadd|ldclr|ldeor|ldset|ldsmax|ldsmin|ldumax|ldumin|swp|cas|casp)[a-z]*\t' || true)
if [ "$n_lse" != 0 ]; then echo "FAIL: $n_lse LSE atomic instructions in $(basename "$SO") (the Pi 4 has none)"; fail=1; fi
echo "checked $n_obj objects and $(basename "$SO")"
[ $fail = 0 ] || exit 1
echo "ISA gates passed"

step "qemu enforces the CPU model (sdot probe: SIGILL as cortex-a72, runs as cortex-a76)"
aarch64-linux-gnu-g++ -O2 -march=armv8-a -o "$WORK/sigill_probe" "$REPO/tests/arm/sigill_probe.cc"
QEMU_CPU=cortex-a72 qemu-aarch64 -L /usr/aarch64-linux-gnu "$WORK/sigill_probe" expect_sigill
QEMU_CPU=cortex-a76 qemu-aarch64 -L /usr/aarch64-linux-gnu "$WORK/sigill_probe"

export QPI_TEST_PHOTOS=${QPI_TEST_PHOTOS:-1}
export QPI_TEST_PYTHON=$PYWRAP
# cortex-a76 differs from cortex-a72 only by the dot product, which only the
# int8 kernels use (neon_dotprod.cc): there the int8 and dispatch tests run,
# the whole suite on cortex-a72 (set QPI_ARM_PYTEST_ARGS to choose otherwise).
# The int8 tests of families without a dot-product variant (broadcast Add /
# Mul, pooling, quantize / dequantize, channel moves, transposes, nearest Resize) and of the
# fp32 reading of QDQ files run the same code on both CPUs: cortex-a72 only.
# Nor do the int8 error messages and ReduceMean; test_api's ISA cap is test_dispatch's there.
A72_ONLY=(test_int8_binary_bcast.py test_int8_pool.py test_int8_quant_boundary.py test_int8_channel_moves.py
          test_int8_transpose.py test_int8_qdq_fp32.py test_int8_resize.py test_int8_errors.py test_int8_reduce_mean.py)
# With QPI_ARM_WAIT_FOR (.ci/run) the legs start at once, beside the x86 build and suite, without the file
# that compares int8 bytes against the ones the x86 suite writes; it runs after that file appears.
LATE=test_int8_shared_zoo.py
leg() {
  local cpu=$1 phase=$2
  if [ "$phase" = late ]; then
    QEMU_CPU=$cpu "$PYWRAP" -m pytest -q -p no:cacheprovider "$REPO/tests/$LATE"
  elif [ "$cpu" = cortex-a76 ] && [ -z "${QPI_ARM_PYTEST_ARGS:-}" ]; then
    local files=() f
    for f in "$REPO"/tests/test_int8_*.py; do
      [[ " ${A72_ONLY[*]} " == *" $(basename "$f") "* ]] && continue
      [ "$phase" = early ] && [ "$(basename "$f")" = "$LATE" ] && continue
      files+=("$f")
    done
    QEMU_CPU=$cpu "$PYWRAP" -m pytest -q -p no:cacheprovider "${files[@]}" \
      "$REPO/tests/test_dispatch.py"
  else
    local ignore=()
    [ "$phase" = early ] && ignore=(--ignore="$REPO/tests/$LATE")
    QEMU_CPU=$cpu "$PYWRAP" -m pytest -q -p no:cacheprovider "$REPO/tests" "${ignore[@]}" ${QPI_ARM_PYTEST_ARGS:-}
  fi
}
# legs PHASE: every CPU model's leg, side by side when there are cores for it
legs() {
  local phase=$1
  local cpus=(${QPI_ARM_CPUS-cortex-a72 cortex-a76})
  if [ "$(nproc)" -ge 2 ] && [ "${#cpus[@]}" -gt 1 ]; then
    local pids=() logs=() rc=0 r i cpu
    for cpu in "${cpus[@]:1}"; do
      logs+=("$WORK/pytest-$cpu-$phase.log")
      leg "$cpu" "$phase" > "$WORK/pytest-$cpu-$phase.log" 2>&1 &
      pids+=($!)
    done
    step "pytest ($phase) under qemu-aarch64 -cpu ${cpus[0]} (${cpus[*]:1} beside it)"
    leg "${cpus[0]}" "$phase" || rc=$?
    for i in "${!pids[@]}"; do
      step "pytest ($phase) under qemu-aarch64 -cpu ${cpus[$((i + 1))]} (ran beside ${cpus[0]})"
      r=0
      wait "${pids[$i]}" || r=$?
      cat "${logs[$i]}"
      [ $r = 0 ] || rc=$r
    done
    return $rc
  fi
  for cpu in "${cpus[@]}"; do
    step "pytest ($phase) under qemu-aarch64 -cpu $cpu"
    leg "$cpu" "$phase" || return $?
  done
}
if [ -n "${QPI_ARM_WAIT_FOR:-}" ]; then
  legs early
  step "waiting for $QPI_ARM_WAIT_FOR (the x86 suite's end: its int8 files)"
  while [ ! -e "$QPI_ARM_WAIT_FOR" ]; do sleep 2; done
  legs late
else
  legs all
fi
step "done"
