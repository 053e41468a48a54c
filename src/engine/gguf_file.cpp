#include "engine/gguf_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/input_file.h"
#include "engine/system.h"
#include "errors.h"
#include "ggml.h"
#include "gguf.h"

namespace hd::engine {

namespace fs = std::filesystem;

// What llama.cpp would stop on with a failed GGML_ASSERT (aborting the process) if it read
// it: checked here first so the file gets one clear line. "" when nothing is found.
// llama.cpp's LLAMA_MAX_LAYERS (src/llama-hparams.h): it asserts block_count is 1 to this.
constexpr int64_t kMaxLayers = 512;

// An integer key of any width as int64 (a u64 above INT64_MAX reads as -1); nullopt when absent
// or not an integer scalar.
static std::optional<int64_t> integer_value(const gguf_context* g, const std::string& key) {
  const int64_t k = gguf_find_key(g, key.c_str());
  if (k < 0) return std::nullopt;
  switch (gguf_get_kv_type(g, k)) {
    case GGUF_TYPE_UINT8:
      return gguf_get_val_u8(g, k);
    case GGUF_TYPE_INT8:
      return gguf_get_val_i8(g, k);
    case GGUF_TYPE_UINT16:
      return gguf_get_val_u16(g, k);
    case GGUF_TYPE_INT16:
      return gguf_get_val_i16(g, k);
    case GGUF_TYPE_UINT32:
      return gguf_get_val_u32(g, k);
    case GGUF_TYPE_INT32:
      return gguf_get_val_i32(g, k);
    case GGUF_TYPE_UINT64: {
      const uint64_t v = gguf_get_val_u64(g, k);
      return v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v);
    }
    case GGUF_TYPE_INT64:
      return gguf_get_val_i64(g, k);
    default:
      return std::nullopt;
  }
}

// A string key's value; "" when absent or not a string.
static std::string string_value(const gguf_context* g, const char* key) {
  const int64_t k = gguf_find_key(g, key);
  if (k < 0 || gguf_get_kv_type(g, k) != GGUF_TYPE_STRING) return "";
  return gguf_get_val_str(g, k);
}

static std::string metadata_problem(const gguf_context* g, const std::string& arch_prefix) {
  if (const auto layers = integer_value(g, arch_prefix + "block_count");
      layers && (*layers < 1 || *layers > kMaxLayers)) {
    return arch_prefix + "block_count is " + std::to_string(*layers) + " (llama.cpp reads 1 to " +
           std::to_string(kMaxLayers) + " layers)";
  }
  // Norm epsilons: ggml asserts eps >= 0 when the graph runs.
  for (const char* key : {"attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon"}) {
    const int64_t k = gguf_find_key(g, (arch_prefix + key).c_str());
    if (k < 0) continue;
    if (gguf_get_kv_type(g, k) != GGUF_TYPE_FLOAT32)
      return arch_prefix + key + " is not a 32-bit float";
    const float eps = gguf_get_val_f32(g, k);
    if (!std::isfinite(eps) || eps < 0) {
      return arch_prefix + key + " is " + std::to_string(eps) + " (a norm epsilon is >= 0)";
    }
  }
  // Token texts: llama.cpp maps text to id and asserts the map is as long as the list. Not for
  // a model without a vocabulary: llama.cpp reads no token texts then, and its own saver
  // writes empty ones (the fixtures of tests/test-llama-archs.cpp).
  const std::string tokenizer = string_value(g, "tokenizer.ggml.model");
  const int64_t tk = gguf_find_key(g, "tokenizer.ggml.tokens");
  if (tk >= 0 && tokenizer != "no_vocab" && tokenizer != "none") {
    if (gguf_get_kv_type(g, tk) != GGUF_TYPE_ARRAY || gguf_get_arr_type(g, tk) != GGUF_TYPE_STRING)
      return "tokenizer.ggml.tokens is not a list of strings";
    const size_t n = gguf_get_arr_n(g, tk);
    std::unordered_map<std::string_view, size_t> seen;
    seen.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view text = gguf_get_arr_str(g, tk, i);
      const auto [it, fresh] = seen.emplace(text, i);
      if (!fresh) {
        return "tokens " + std::to_string(it->second) + " and " + std::to_string(i) +
               " have the same text '" + std::string(text.substr(0, 40)) + "'";
      }
    }
  }
  return "";
}

// Opens `path` as a GGUF, its metadata only, after the checks that give a missing, special,
// foreign or unparseable file its own line; sets s.file_size. The caller frees the context.
static gguf_context* open_gguf(const std::string& path, GgufSummary& s) {
  system_init();                       // routes gguf's own complaints through our log filter
  refuse_special_file(path, "model");  // opening a FIFO would wait for a writer forever
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': " + std::strerror(errno));
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError("'" + path + "' is a directory, not a GGUF file");
  s.file_size = fs::file_size(path, ec);
  char magic[4] = {};
  in.read(magic, 4);
  if (!in || std::memcmp(magic, "GGUF", 4) != 0) {
    throw InputError("'" + path + "' is not a GGUF file (no GGUF magic)");
  }
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* g = gguf_init_from_file(path.c_str(), params);
  if (g == nullptr) {
    throw InputError("'" + path +
                     "' is a corrupt or truncated GGUF (its header or metadata does not parse)");
  }
  return g;
}

// The tensors' count, elements and main weight type into `s`; returns the offset in the file
// where the last tensor's bytes end, so the caller can check every tensor is inside the file.
static uint64_t add_tensor_facts(const gguf_context* g, GgufSummary& s) {
  uint64_t end = 0;
  s.n_tensors = gguf_get_n_tensors(g);
  std::map<std::string, uint64_t> bytes_by_type;
  for (int64_t i = 0; i < s.n_tensors; ++i) {
    const uint64_t bytes = gguf_get_tensor_size(g, i);
    end = std::max<uint64_t>(end, gguf_get_tensor_offset(g, i) + bytes);
    const ggml_type type = gguf_get_tensor_type(g, i);
    if (type < GGML_TYPE_COUNT && ggml_type_size(type) > 0) {
      s.n_params += bytes / ggml_type_size(type) * static_cast<uint64_t>(ggml_blck_size(type));
      bytes_by_type[ggml_type_name(type)] += bytes;
    }
  }
  uint64_t most = 0;
  for (const auto& [name, bytes] : bytes_by_type) {
    if (bytes > most) {
      most = bytes;
      s.weight_type = name;
    }
  }
  return end + gguf_get_data_offset(g);
}

// An unsigned or signed integer of any width, or the first element of an integer array; 0
// when absent, of another type (gguf asserts on reading a string as data) or out of range.
static int shape_value(const gguf_context* g, const std::string& key) {
  std::optional<int64_t> v = integer_value(g, key);
  const int64_t k = gguf_find_key(g, key.c_str());
  if (!v && k >= 0 && gguf_get_kv_type(g, k) == GGUF_TYPE_ARRAY && gguf_get_arr_n(g, k) > 0) {
    const gguf_type t = gguf_get_arr_type(g, k);
    // gguf_get_arr_data asserts the array holds no strings: only integer arrays are read.
    const void* data = t == GGUF_TYPE_STRING || t == GGUF_TYPE_ARRAY || t == GGUF_TYPE_FLOAT32 ||
                               t == GGUF_TYPE_FLOAT64 || t == GGUF_TYPE_BOOL
                           ? nullptr
                           : gguf_get_arr_data(g, k);
    switch (data ? t : GGUF_TYPE_COUNT) {
      case GGUF_TYPE_UINT8:
        v = *static_cast<const uint8_t*>(data);
        break;
      case GGUF_TYPE_INT8:
        v = *static_cast<const int8_t*>(data);
        break;
      case GGUF_TYPE_UINT16:
        v = *static_cast<const uint16_t*>(data);
        break;
      case GGUF_TYPE_INT16:
        v = *static_cast<const int16_t*>(data);
        break;
      case GGUF_TYPE_UINT32:
        v = *static_cast<const uint32_t*>(data);
        break;
      case GGUF_TYPE_INT32:
        v = *static_cast<const int32_t*>(data);
        break;
      case GGUF_TYPE_UINT64:
        v = static_cast<int64_t>(*static_cast<const uint64_t*>(data));
        break;
      case GGUF_TYPE_INT64:
        v = *static_cast<const int64_t*>(data);
        break;
      default:
        return 0;
    }
  }
  return !v || *v < 0 || *v > (int64_t{1} << 30) ? 0 : static_cast<int>(*v);
}

// The shape from the "<arch>." keys (`a` is that prefix), with llama.cpp's defaults.
static void read_shape(const gguf_context* g, const std::string& a, GgufSummary& s) {
  s.n_layer = shape_value(g, a + "block_count");
  s.n_embd = shape_value(g, a + "embedding_length");
  s.n_head = shape_value(g, a + "attention.head_count");
  s.n_head_kv = shape_value(g, a + "attention.head_count_kv");
  if (s.n_head_kv == 0) s.n_head_kv = s.n_head;  // llama.cpp's default
  const int head_dim = s.n_head > 0 ? s.n_embd / s.n_head : 0;
  s.head_dim_k = shape_value(g, a + "attention.key_length");
  s.head_dim_v = shape_value(g, a + "attention.value_length");
  if (s.head_dim_k == 0) s.head_dim_k = head_dim;
  if (s.head_dim_v == 0) s.head_dim_v = head_dim;
  s.n_ctx_train = shape_value(g, a + "context_length");
}

GgufSummary gguf_check(const std::string& path) {
  GgufSummary s;
  gguf_context* g = open_gguf(path, s);
  // The header parses; now make sure every tensor's bytes are inside the file.
  const uint64_t end = add_tensor_facts(g, s);
  s.architecture = string_value(g, "general.architecture");
  s.name = string_value(g, "general.name");
  const std::string a = s.architecture + ".";
  read_shape(g, a, s);
  std::string malformed = metadata_problem(g, a);
  gguf_free(g);
  if (!malformed.empty()) throw InputError("'" + path + "' is malformed: " + malformed);
  if (s.n_tensors > 0 && end > s.file_size) {
    throw InputError("'" + path + "' is truncated: its tensors need " + std::to_string(end) +
                     " bytes, the file has " + std::to_string(s.file_size));
  }
  if (s.architecture.empty()) throw InputError("'" + path + "' has no general.architecture");
  return s;  // whether llama.cpp knows the architecture is llama.cpp's to say (model.cpp)
}

}  // namespace hd::engine
