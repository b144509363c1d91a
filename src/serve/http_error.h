// An error that already knows its HTTP status and TorchServe-style type name. Everything
// else (rc::Error by errc, std::exception) is mapped by error_response() in routes.cpp.
#pragma once

#include <string>

#include "roberta/error.h"

namespace rc::serve {

class HttpError : public Error {
 public:
  HttpError(int status, std::string type, const std::string& message, Errc errc = Errc::invalid_argument)
      : Error(errc, message), status_(status), type_(std::move(type)) {}
  int status() const noexcept { return status_; }
  const std::string& type() const noexcept { return type_; }

 private:
  int status_;
  std::string type_;
};

}  // namespace rc::serve
