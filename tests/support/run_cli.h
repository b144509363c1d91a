// The roberta binary run as a user runs it, through /bin/sh: stdout, stderr and the exit code
// (one copy for the CLI tests; under a cross-build's test run, through the emulator).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/emulator.h"
#include "support/files.h"

namespace rc::test {

struct CmdResult {
  int code = -1;
  std::string out, err;
};

inline std::string roberta_binary() { return std::string(RC_BINARY_DIR) + "/cli/roberta"; }

// `roberta ARGS` with stdin_text on stdin; stderr goes through a temp file.
inline CmdResult run_roberta(const std::string& args, const std::string& stdin_text = "") {
  const std::string tag = std::to_string(::getpid());
  const std::filesystem::path err_file = std::filesystem::temp_directory_path() / ("rc_cli_err_" + tag);
  const std::filesystem::path in_file = std::filesystem::temp_directory_path() / ("rc_cli_in_" + tag);
  std::ofstream(in_file, std::ios::binary) << stdin_text;
  const std::string cmd =
      emulator_prefix() + roberta_binary() + " " + args + " <" + in_file.string() + " 2>" + err_file.string();
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p) {
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(err_file);
  }
  std::filesystem::remove(err_file);
  std::filesystem::remove(in_file);
  return r;
}

}  // namespace rc::test
