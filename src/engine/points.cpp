#include "engine/points.h"

#include <algorithm>

#include "errors.h"

namespace hd::engine {

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> archs = {"llama", "qwen2", "qwen3"};
  return archs;
}

bool architecture_supported(const std::string& arch) {
  const auto& a = supported_architectures();
  return std::find(a.begin(), a.end(), arch) != a.end();
}

static std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string point_name(const std::string& arch, PointKind kind, int layer) {
  if (!architecture_supported(arch)) {
    throw InputError("architecture '" + arch +
                     "' is not supported (supported: " + join(supported_architectures()) + ")");
  }
  const std::string n = std::to_string(layer);
  switch (kind) {
    // build_inp_embd (llama-graph.cpp) names the token path's result "embd"; the tensor named
    // "inp_embd" is the leaf for embeddings passed in llama_batch.embd, which a batch of
    // tokens never computes, so a hook on it would see nothing.
    case PointKind::kEmbedding:
      return "embd";
    // build_attn (llama-graph.cpp) names it for every architecture, flash attention or not.
    case PointKind::kKqvOut:
      return "kqv_out-" + n;
    // src/models/qwen2.cpp and qwen3.cpp do not name the projected attention output.
    case PointKind::kAttnOut:
      return arch == "llama" ? "attn_out-" + n : "";
    case PointKind::kFfnInp:
      return "ffn_inp-" + n;
    case PointKind::kFfnOut:
      return "ffn_out-" + n;
    case PointKind::kLayerOut:
      return "l_out-" + n;
    case PointKind::kResultNorm:
      return "result_norm";
  }
  return "";
}

bool point_has_output_rows_only(const std::string& name, int n_layer) {
  if (name == "result_norm" || name == "result_output") return true;
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || name.substr(dash + 1) != std::to_string(n_layer - 1))
    return false;
  const std::string base = name.substr(0, dash);
  return base == "ffn_inp" || base == "ffn_norm" || base == "ffn_out" || base == "l_out";
}

}  // namespace hd::engine
