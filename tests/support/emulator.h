// Tests that run one of our binaries through /bin/sh (the CLI, a child copy of the test itself)
// must name the emulator when the build is for another architecture: under qemu-user the shell
// is the host's, and without binfmt_misc it cannot exec an aarch64 binary. scripts/test-arm64.sh
// sets RC_TEST_EMULATOR (e.g. "qemu-aarch64-static"); the CPU model travels in QEMU_CPU.
#pragma once

#include <cstdlib>
#include <string>

namespace rc::test {

// "" natively; the emulator's program name under a cross-build's test run (an argv[0]).
inline std::string emulator() {
  const char* e = std::getenv("RC_TEST_EMULATOR");
  return e ? std::string(e) : std::string();
}

// "" natively; "<emulator> " under a cross-build's test run (a shell command's start).
inline std::string emulator_prefix() {
  const std::string e = emulator();
  return e.empty() ? e : e + " ";
}

}  // namespace rc::test
