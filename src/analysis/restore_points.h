// The restore points of a transplant, in forward order, as users name them.
#pragma once
#include <string>
#include <vector>

namespace hd::analysis {

struct RestorePoint {
  enum class Kind { kEmbedding, kAfterAttention, kAfterMlp };
  Kind kind;
  int layer;          // -1 for the embedding
  std::string label;  // "inp_embd", "ffn_inp-N" (after attention), "l_out-N" (after the MLP)
};

// inp_embd, then per layer ffn_inp-N and l_out-N with `components`, or only l_out-N without.
std::vector<RestorePoint> restore_points(int n_layer, bool components);

}  // namespace hd::analysis
