// The safetensors format (huggingface/safetensors), written and read without the library: an
// 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets:
// [begin, end]}, "__metadata__": {string: string}}, then the tensors' raw little-endian bytes.
// Offsets count from the first byte after the header. We write F32 only, tensors in the order
// given (the JSON keeps that order: for a reference, forward order), the header padded with
// spaces so the data starts 8-byte aligned, as the reference implementation does.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/output_file.h"

namespace hd::store {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;  // e.g. {tokens, channels}
  std::vector<float> data;     // row-major; size = product of shape
};

// The exact bytes of a file holding `tensors` and `metadata`. InputError for a name used twice,
// an empty name, a name "__metadata__", or data whose size does not match its shape.
std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);

// Writes atomically (temporary file, then rename); `policy` says what may be replaced.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const OutputPolicy& policy = {});

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in the order of their data offsets
  std::map<std::string, std::string> metadata;
};

// Parses and checks everything the format requires (header inside the file and below 100 MB,
// valid JSON, dtype F32, shape and offsets consistent, tensors contiguous and covering the data
// exactly). Any violation: InputError naming the file and what is wrong.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what);
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace hd::store
