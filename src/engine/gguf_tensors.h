// The tensors of a GGUF as a quantization recipe needs them: name, type, shape and bytes, and
// what a tensor would take in another type (ggml's own row sizes, so predictions match files).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hd::engine {

struct GgufTensor {
  std::string name;
  std::string type;  // ggml's name, upper case: "Q4_K", "F32"
  int64_t ne0 = 0;   // row length
  int64_t n_elements = 0;
  uint64_t bytes = 0;  // in the file, before alignment padding
};

struct GgufLayout {
  std::vector<GgufTensor> tensors;  // in file order
  uint64_t data_offset = 0;         // header, metadata and tensor infos, padded
  uint64_t alignment = 32;          // each tensor's bytes start on a multiple of this
  uint64_t file_size = 0;
};

// Throws InputError for a file gguf_check refuses.
GgufLayout gguf_layout(const std::string& path);

// The bytes a tensor of `ne0`-long rows and `n_elements` values takes in `type` (ggml's name,
// any case); nullopt when the type's blocks do not divide its rows (llama.cpp would fall back
// to another type) or `type` is not a ggml type.
std::optional<uint64_t> tensor_bytes(const std::string& type, int64_t ne0, int64_t n_elements);

// `bytes` padded to the next multiple of `alignment`, as GGUF lays tensors out.
uint64_t padded(uint64_t bytes, uint64_t alignment);

// Whether ggml's `type` (any case) is a block-quantized type (not F32, F16, BF16).
bool is_quantized_type(const std::string& type);

}  // namespace hd::engine
