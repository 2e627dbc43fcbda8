// Proves the emulator enforces the CPU model: an ARMv8.2 dot product must
// trap (SIGILL) as a Cortex-A72 and run as a Cortex-A76. Built by run.sh.
#include <arm_neon.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

__attribute__((target("arch=armv8.2-a+dotprod"), noinline)) int dot4(const int8_t* a, const int8_t* b) {
  return vaddvq_s32(vdotq_s32(vdupq_n_s32(0), vld1q_s8(a), vld1q_s8(b)));
}

int main(int argc, char** argv) {
  bool expect_sigill = argc > 1 && std::strcmp(argv[1], "expect_sigill") == 0;
  if (expect_sigill)
    std::signal(SIGILL, [](int) {
      const char msg[] = "SIGILL on sdot, as expected\n";
      (void)!write(1, msg, sizeof msg - 1);  // async-signal-safe, unbuffered
      _exit(0);
    });
  int8_t a[16], b[16];
  for (int i = 0; i < 16; ++i) a[i] = int8_t(i - 8), b[i] = int8_t(3 - i);
  int r = dot4(a, b), want = 0;
  for (int i = 0; i < 16; ++i) want += a[i] * b[i];
  if (expect_sigill) {
    std::printf("sdot ran (%d) on a CPU model that should not have it\n", r);
    return 1;
  }
  std::printf("sdot = %d (want %d)\n", r, want);
  return r == want ? 0 : 1;
}
