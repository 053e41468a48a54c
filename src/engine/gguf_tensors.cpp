#include "engine/gguf_tensors.h"

#include <algorithm>
#include <cctype>
#include <strings.h>

#include "engine/gguf_file.h"
#include "errors.h"
#include "ggml.h"
#include "gguf.h"

namespace hd::engine {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::optional<ggml_type> type_by_name(const std::string& name) {
  for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
    const auto t = static_cast<ggml_type>(i);
    const char* n = ggml_type_name(t);
    if (n && ggml_type_size(t) > 0 && strcasecmp(n, name.c_str()) == 0) return t;
  }
  return std::nullopt;
}

}  // namespace

GgufLayout gguf_layout(const std::string& path) {
  GgufLayout out;
  out.file_size = gguf_check(path).file_size;  // a clear line for a bad file first
  ggml_context* meta = nullptr;
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/&meta};
  gguf_context* g = gguf_init_from_file(path.c_str(), params);
  if (g == nullptr || meta == nullptr) {
    if (g) gguf_free(g);
    throw InputError("'" + path + "' is a corrupt GGUF (its tensor infos do not parse)");
  }
  out.data_offset = gguf_get_data_offset(g);
  out.alignment = gguf_get_alignment(g);
  for (int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
    const char* name = gguf_get_tensor_name(g, i);
    const ggml_tensor* t = ggml_get_tensor(meta, name);
    out.tensors.push_back({name, upper(ggml_type_name(gguf_get_tensor_type(g, i))), t->ne[0],
                           ggml_nelements(t), gguf_get_tensor_size(g, i)});
  }
  gguf_free(g);
  ggml_free(meta);
  return out;
}

std::optional<uint64_t> tensor_bytes(const std::string& type, int64_t ne0, int64_t n_elements) {
  const auto t = type_by_name(type);
  if (!t || ne0 <= 0 || n_elements % ne0 != 0 || ne0 % ggml_blck_size(*t) != 0)
    return std::nullopt;
  return ggml_row_size(*t, ne0) * static_cast<uint64_t>(n_elements / ne0);
}

uint64_t padded(uint64_t bytes, uint64_t alignment) {
  return alignment == 0 ? bytes : (bytes + alignment - 1) / alignment * alignment;
}

bool is_quantized_type(const std::string& type) {
  const auto t = type_by_name(type);
  return t && ggml_is_quantized(*t);
}

}  // namespace hd::engine
