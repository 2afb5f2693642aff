# Cross build for aarch64 Linux on an x86-64 Debian machine (make test-aarch64):
# Debian's cross compiler (g++-aarch64-linux-gnu), arm64 libraries installed
# through multiarch (/usr/lib/aarch64-linux-gnu: GoogleTest, zlib), and
# programs run under qemu-user with the cross compiler's C library
# (libc6-arm64-cross, /usr/aarch64-linux-gnu). scripts/aarch64-setup installs
# them; LibTorch comes from PLN_TORCH_SITE (cmake/TorchFromWheel.cmake).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Multiarch: the target's libraries share the host's prefix, in their own
# architecture's directories, which CMake searches first for this
# CMAKE_LIBRARY_ARCHITECTURE; header-only packages (CLI11, nlohmann-json)
# come from the host's /usr/share. Host programs (Python, the checkers)
# are found as usual.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# CTest runs the target's test programs, and gtest_discover_tests lists their
# tests, through the emulator.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
