// Named points of the compute graph, per architecture. The graph names tensors "<name>-<layer>"
// (llama-context.cpp, graph_get_cb); which names exist differs by architecture, so every
// architecture heterodyne accepts is listed here and anything else is refused by name.
#pragma once
#include <string>
#include <vector>

namespace hd::engine {

enum class PointKind {
  kEmbedding,   // the token embeddings, layer 0's input (users call it inp_embd, see points.cpp)
  kKqvOut,      // kqv_out-N: the attention's output before its output projection, heads side
                // by side ([head_dim_v * n_head] per token); named in every architecture
  kAttnOut,     // after the attention output projection (named attn_out-N in llama only)
  kFfnInp,      // ffn_inp-N: the residual after attention (TransformerLens hook_resid_mid)
  kFfnOut,      // ffn_out-N: the MLP output (hook_mlp_out)
  kLayerOut,    // l_out-N: the residual after the MLP (hook_resid_post)
  kResultNorm,  // result_norm: after the final norm
};

const std::vector<std::string>& supported_architectures();
bool architecture_supported(const std::string& arch);

// The graph tensor name of a point, or "" where the architecture does not name it.
// Throws InputError for an unsupported architecture.
std::string point_name(const std::string& arch, PointKind kind, int layer = -1);

// When a batch asks for logits at only some positions, the graph drops the other rows inside
// the last layer (ggml_get_rows on inp_out_ids, before ffn_inp-(L-1) in every supported
// architecture): these points then carry output rows only.
bool point_has_output_rows_only(const std::string& name, int n_layer);

}  // namespace hd::engine
