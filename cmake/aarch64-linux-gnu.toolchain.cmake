# Cross build for aarch64 with Debian's g++-aarch64-linux-gnu; tests run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER   ${CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${CROSS_TRIPLE}-g++)
set(CMAKE_FIND_ROOT_PATH /usr/${CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Baseline for every file, nanobind's included = Raspberry Pi 4 (Cortex-A72, ARMv8.0-A).
# Debian's gcc defaults to outline atomics, whose helpers contain LSE
# instructions (ldadd, cas, swp) the Pi 4 lacks; turn them off everywhere.
set(CMAKE_C_FLAGS_INIT   "-march=armv8-a -mno-outline-atomics")
set(CMAKE_CXX_FLAGS_INIT "-march=armv8-a -mno-outline-atomics")
find_program(QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${QEMU_AARCH64};-L;/usr/${CROSS_TRIPLE}")
endif()
