#!/usr/bin/env bash
# The engine built with AddressSanitizer + UndefinedBehaviorSanitizer, and the
# kernel tests run on it: SIMD borders and tails are where out-of-bounds reads
# hide, and a wrong read there can still give the right number.
#   tests/sanitize/run.sh            build (in _san/) + kernel tests at the host's best ISA
# Env: QPI_SAN_WORK (default _san/), QPI_SAN_TESTS (pytest arguments),
#      QPI_SAN_PHASE (build | test | all, the default: .ci/run builds early, at low priority, and tests later).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${QPI_SAN_WORK:-$REPO/_san}
mkdir -p "$WORK"
PHASE=${QPI_SAN_PHASE:-all}
[ -x "$WORK/venv/bin/python" ] || python -m venv --system-site-packages "$WORK/venv"
if [ "$PHASE" != test ]; then
  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  # -O1 -g1: the template-heavy SIMD kernels compile 2.5x faster than at -O2 -g (dwconv/avx512.cc: 287 -> 115 s),
  # which is most of this step's time; -g1 keeps file:line in the reports. The files of the ISA levels the tests
  # hardly run at -O0 (dwconv: 48 s against 103 s for avx2.cc and 147 s for avx512.cc at -O1): on a CPU with
  # AVX-512 the tests run at its level but for the few that cap it to avx2; without it the AVX-512 files cannot
  # run at all and the AVX2 ones are what the tests run, unoptimised as they were on AVX-512 hosts.
  ISA_O0=(--config-settings=cmake.define.QPI_AVX2_EXTRA_FLAGS="-O0")
  if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    ISA_O0+=(--config-settings=cmake.define.QPI_AVX512_EXTRA_FLAGS="-O0;-Wno-maybe-uninitialized")
  fi
  CXXFLAGS="$SAN" LDFLAGS="$SAN" "$WORK/venv/bin/pip" install -q --no-deps --force-reinstall "$REPO" \
    --config-settings=build-dir="$WORK/build" --config-settings=cmake.build-type=RelWithDebInfo \
    --config-settings=cmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" "${ISA_O0[@]}"
fi
[ "$PHASE" != build ] || exit 0
# Python itself is not instrumented: the runtimes must be loaded first.
export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
# The reports go to files: pytest captures stderr, and a sanitizer that halts the process takes the capture with it.
REPORT="$WORK/report"
rm -f "$REPORT".*
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=$REPORT \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$REPORT
cd "$REPO"
rc=0
# shellcheck disable=SC2206
TESTS=(${QPI_SAN_TESTS:-tests/test_simd_gemm.py tests/test_simd_conv_gemm_rows.py \
  tests/test_simd_dwconv.py tests/test_simd_conv3x3_nchw.py tests/test_simd_ops.py tests/test_simd_layout.py \
  tests/test_kernels.py tests/test_int8_kernels.py tests/test_int8_fuzz.py tests/test_simd_softmax_act.py tests/test_inplace_concat.py \
  tests/test_sibling_convs.py tests/test_fuse_residual.py tests/test_simd_binary.py tests/test_simd_pool.py \
  tests/test_simd_slice.py tests/test_simd_conv_group.py tests/test_layernorm.py tests/test_int8_dwconv_kxk.py \
  tests/test_int8_binary_bcast.py tests/test_simd_conv_gemv.py tests/test_gelu.py \
  tests/test_int8_conv_group.py tests/test_int8_conv_first.py tests/test_int8_conv_table.py \
  tests/test_int8_quant_boundary.py tests/test_int8_image_input.py \
  tests/test_int8_channel_moves.py \
  tests/test_int8_transpose.py \
  tests/test_int8_dw_sweep.py \
  tests/test_int8_prelu.py tests/test_int8_token_map_mlp.py \
  tests/test_int8_conv_transpose.py \
  tests/test_int8_pool.py \
  tests/test_int8_resize.py \
  tests/test_int8_small.py \
  tests/test_matmul_s8.py \
  tests/test_softmax_s8.py \
  tests/test_layernorm_s8.py tests/test_prelu_epilogue.py \
  tests/test_simd_conv_transpose.py \
  tests/test_simd_attention.py \
  tests/test_simd_reduce.py tests/test_pad_runs.py tests/test_dw_multiplier.py tests/test_conv_dead_taps.py \
  tests/test_simd_instance_norm.py \
  tests/test_parallel.py})
# Two pytest processes, the files dealt alternately, where there are two cores (QPI_SAN_TESTS: one process): in CI this is the last step,
# with nothing else left to run beside it. Each process's reports go to their own files (log_path adds the pid).
if [ -z "${QPI_SAN_TESTS:-}" ] && [ "$(nproc)" -ge 2 ]; then
  half=()
  other=()
  for i in "${!TESTS[@]}"; do
    if [ $((i % 2)) = 0 ]; then half+=("${TESTS[$i]}"); else other+=("${TESTS[$i]}"); fi
  done
  "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider "${other[@]}" > "$WORK/pytest-b.log" 2>&1 &
  pid_b=$!
  "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider "${half[@]}" || rc=$?
  rc_b=0
  wait $pid_b || rc_b=$?
  cat "$WORK/pytest-b.log"
  [ $rc_b = 0 ] || rc=$rc_b
else
  "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}" || rc=$?
fi
for f in "$REPORT".*; do
  [ -e "$f" ] || continue
  echo "!! sanitizer report $f:"; head -c 20000 "$f"; rc=1
done
exit $rc
