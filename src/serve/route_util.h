// Small helpers shared by the route files (routes.cpp, torchserve_routes.cpp, ...).
#pragma once

#include <string>

#include "serve/http_error.h"

namespace rc::serve {

inline HttpError model_not_found(const std::string& name, const std::string& version = "") {
  return HttpError(404, "ModelNotFound",
                   "model '" + name + "'" + (version.empty() ? "" : " version " + version) + " is not loaded",
                   Errc::not_found);
}

}  // namespace rc::serve
