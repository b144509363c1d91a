// Tests that run one of our binaries through /bin/sh (the CLI, a child copy of the test itself)
// must name the emulator when the build is for another architecture: under qemu-user the shell
// is the host's, and without binfmt_misc it cannot exec an aarch64 binary. scripts/test-arm64.sh
// sets RC_TEST_EMULATOR (e.g. "qemu-aarch64-static"); the CPU model travels in QEMU_CPU.
#pragma once

#include <cstdlib>
#include <string>

namespace rc::test {

// "" natively; "<emulator> " under a cross-build's test run.
inline std::string emulator_prefix() {
  const char* e = std::getenv("RC_TEST_EMULATOR");
  return e && *e ? std::string(e) + " " : std::string();
}

}  // namespace rc::test
