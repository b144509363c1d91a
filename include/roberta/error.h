// roberta.cpp's single exception type. Library code throws rc::Error; only boundaries
// (the CLI's main, each HTTP handler, worker threads) catch it and map errc to an exit
// code or an HTTP status.
#pragma once

#include <stdexcept>
#include <string>

namespace rc {

enum class Errc {
  invalid_argument,    // bad flag, bad request field, bad shape passed by a caller
  not_found,           // missing file, unknown model or tensor name
  io,                  // read/write failed, disk full
  format,              // a file or request body is malformed or lies about itself
  unsupported,         // valid but not handled (a dtype, a model type)
  resource_exhausted,  // queue full, out of memory, too large
  device,              // oneDNN / CUDA / NCCL failure
  internal,            // a bug
};

const char* errc_name(Errc errc) noexcept;

class Error : public std::runtime_error {
 public:
  Error(Errc errc, const std::string& message, std::string hint = {})
      : std::runtime_error(message), errc_(errc), hint_(std::move(hint)) {}
  Errc errc() const noexcept { return errc_; }
  // A known fix, for the user ("HINT: ..."); empty when there is none.
  const std::string& hint() const noexcept { return hint_; }

 private:
  Errc errc_;
  std::string hint_;
};

}  // namespace rc
