// KServe v2 / Open Inference Protocol REST bodies for a text classifier. Pure functions over
// strings, tested without a socket.
//  in:  {"id"?, "parameters"?, "inputs": [{"name", "shape", "datatype": "BYTES", "data"}],
//        "outputs"?: [{"name"}]}. The first input holds the texts, shape [N] or [N, 1]; a
//        second BYTES input named "text_pair" (shape [N]) makes pairs, as does one input of
//        shape [N, 2]. Data may be flat or nested (row-major), or binary (Triton's binary
//        tensor data extension, tritonclient's default): with json_length (the request's
//        Inference-Header-Content-Length) the body's first json_length bytes are the JSON and
//        the rest the binary data of the inputs that have "parameters": {"binary_data_size"},
//        in input order; BYTES elements there are a 4-byte little-endian length, then the bytes.
//        Answers stay JSON (tritonclient reads "data" when an output has no binary_data_size).
//  out: {"model_name", "model_version", "id"?, "outputs": [
//        {"name": "logits", "datatype": "FP32", "shape": [N, L], "data": [...]},
//        {"name": "probabilities", "datatype": "FP32", "shape": [N, L], "data": [...]},
//        {"name": "labels", "datatype": "BYTES", "shape": [N], "data": [...]}]}, only the
//        outputs asked for when "outputs" is given.
// Every malformed request is an HttpError 400 (the protocol's {"error": ...} body).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/classifier.h"
#include "serve/request.h"

namespace rc::serve {

struct KServeRequest {
  std::string id;  // echoed when given
  ParsedInputs inputs;
  std::vector<std::string> outputs;  // names asked for; empty: all three
};

KServeRequest parse_kserve_infer(std::string_view body, std::optional<size_t> json_length = std::nullopt);
std::string render_kserve_infer(const std::vector<Prediction>& predictions, const KServeRequest& request,
                                const std::string& model_name, const std::string& model_version);

}  // namespace rc::serve
