# Cross-compiling for aarch64 Linux (Graviton) on Debian 12 with multiarch: the compiler is
# crossbuild-essential-arm64's, the libraries are the :arm64 packages installed beside the
# amd64 ones (/usr/lib/aarch64-linux-gnu). scripts/build-arm64.sh installs both.
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# No -march: the compiler's default (Armv8-A, NEON included) is the floor, so the binary runs on
# every 64-bit Arm server and on the plain-NEON emulated CPU of the tests (cortex-a72). BF16,
# I8MM and SVE code lives in its own translation units (src/kernels/cpu/neon/*_sve.cpp,
# *_bf16.cpp) compiled with their own -march and chosen at run time from getauxval.

# Multiarch has no sysroot: headers and libraries are under / with an arch triplet, so the
# find_* commands search / as usual (CMAKE_LIBRARY_ARCHITECTURE picks the aarch64 folders).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config must read the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Debian's libdnnl-dev:arm64 cannot be co-installed with libdnnl-dev:amd64 (its dnnl_config.h
# differs), so scripts/build-arm64.sh unpacks it into a private prefix.
set(RC_ARM64_DNNL_PREFIX "/opt/roberta-arm64/dnnl" CACHE PATH "where build-arm64.sh unpacked libdnnl-dev:arm64")
if(NOT DEFINED dnnl_DIR AND EXISTS "${RC_ARM64_DNNL_PREFIX}/usr/lib/aarch64-linux-gnu/cmake/dnnl")
  set(dnnl_DIR "${RC_ARM64_DNNL_PREFIX}/usr/lib/aarch64-linux-gnu/cmake/dnnl" CACHE PATH "")
endif()

# libgloo-dev installs into /usr/lib (no arch triplet), so its :arm64 flavour is unpacked into a
# private prefix as well (scripts/build-arm64.sh), its targets' paths rewritten to point there.
set(RC_ARM64_GLOO_PREFIX "/opt/roberta-arm64/gloo" CACHE PATH "where build-arm64.sh unpacked libgloo-dev:arm64")
if(NOT DEFINED Gloo_DIR AND EXISTS "${RC_ARM64_GLOO_PREFIX}/usr/share/cmake/Gloo")
  set(Gloo_DIR "${RC_ARM64_GLOO_PREFIX}/usr/share/cmake/Gloo" CACHE PATH "")
endif()

# Test discovery (gtest_discover_tests) and ctest run the aarch64 binaries through qemu-user.
# The CPU model is chosen per run with QEMU_CPU (scripts/test-arm64.sh), e.g. QEMU_CPU=cortex-a72.
find_program(RC_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(RC_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${RC_QEMU_AARCH64}")
endif()
