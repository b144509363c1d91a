# Every dependency comes from Debian 12 (scripts/install-deps.sh installs them all).
find_package(OpenMP REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
find_package(LibArchive REQUIRED)
# libre2-dev: the server's --allowed-urls, matched in linear time without recursion
# (std::regex recursed per character: a 30 KB URL overflowed the stack, issue 27).
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
# libpcre2-dev: the tokenizer pipeline's patterns (tokenizer.json Split/Replace), which HF runs
# with a backtracking engine (Oniguruma) and so may use lookaround; bounded by match limits.
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
find_package(OpenSSL REQUIRED)
find_package(CURL 7.75 REQUIRED)  # CURLOPT_AWS_SIGV4 (Debian 12: 7.88)
find_package(Boost 1.74 REQUIRED)
find_package(Gloo REQUIRED)  # libgloo-dev: CPU collectives for data-parallel training
if(RC_WITH_ONEDNN)
  find_package(dnnl REQUIRED)
endif()
if(RC_BUILD_CLI)
  find_package(CLI11 REQUIRED)
endif()
if(RC_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(RC_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(RC_WITH_CUDA)
  # sm_80 (A100) and sm_90 (H100/H200) unless the user or CUDAARCHS chose (STYLE.md 7.8).
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES "80;90")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

# Link probe: an empty program linked against every external library `roberta` links, with
# --no-as-needed so that each shared library stays on the line and the linker resolves what
# it needs in turn. It fails the configure in seconds where the build would fail only at its
# last step: e.g. the arm64 libgloo.so.0 (unpacked by scripts/build-arm64.sh) needs libibverbs
# and libhiredis for arm64, and without them `roberta` stops at link on undefined ibv_* and
# redis* symbols. Run once per build folder (the result is cached only when it links).
set(_rc_external_libs gloo OpenSSL::SSL OpenSSL::Crypto CURL::libcurl LibArchive::LibArchive PkgConfig::LIBZIP
                      PkgConfig::UTF8PROC OpenMP::OpenMP_CXX Threads::Threads)
if(RC_WITH_ONEDNN)
  list(APPEND _rc_external_libs DNNL::dnnl)
endif()
if(NOT RC_EXTERNAL_LIBS_LINK)
  try_compile(RC_EXTERNAL_LIBS_LINK SOURCE_FROM_CONTENT rc_link_probe.cpp "int main() { return 0; }\n"
              LINK_LIBRARIES ${_rc_external_libs} LINK_OPTIONS -Wl,--no-as-needed
              OUTPUT_VARIABLE _rc_link_probe_log)
  if(NOT RC_EXTERNAL_LIBS_LINK)
    unset(RC_EXTERNAL_LIBS_LINK CACHE)
    string(REGEX MATCHALL "[^\n]*(undefined reference|not found|cannot find)[^\n]*" _rc_link_errors
                 "${_rc_link_probe_log}")
    list(SUBLIST _rc_link_errors 0 8 _rc_link_errors)
    list(JOIN _rc_link_errors "\n  " _rc_link_errors)
    message(FATAL_ERROR "The external libraries do not link for ${CMAKE_SYSTEM_PROCESSOR} "
                        "(${_rc_external_libs}):\n  ${_rc_link_errors}\n"
                        "HINT: a shared library's own dependencies are missing for this architecture; "
                        "for arm64 run scripts/build-arm64.sh as root (it installs scripts/deps.list's arm64 set).")
  endif()
endif()
