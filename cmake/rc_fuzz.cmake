# The libFuzzer build (RC_BUILD_FUZZ=ON, clang only): a separate build folder in which
# every library is compiled with coverage instrumentation, ASan and UBSan, and fuzz/
# adds one executable per parser. The normal GCC build never sees these flags.
#   CC=clang-16 CXX=clang++-16 cmake -S . -B build-fuzz -G Ninja -DRC_BUILD_FUZZ=ON
# scripts/fuzz.sh does this and runs the targets.
if(NOT RC_BUILD_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "RC_BUILD_FUZZ=ON needs clang with libFuzzer (CXX=clang++-16); got ${CMAKE_CXX_COMPILER_ID}")
endif()
if(RC_SANITIZE)
  message(FATAL_ERROR "RC_BUILD_FUZZ=ON sets its own sanitizers; leave RC_SANITIZE empty")
endif()
# fuzzer-no-link: coverage for the libraries; the fuzz executables link -fsanitize=fuzzer.
# -fno-sanitize-recover: a UBSan report aborts, so libFuzzer keeps the input as a crash.
# -gline-tables-only (after the build type's -g, so it wins): sanitizer reports still name
# file:line in every frame, and the build is ~20% faster than with full debug info
# (tokenizer_files.cpp: 34.5 -> 27.5 s).
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -gline-tables-only)
add_link_options(-fsanitize=address,undefined)
