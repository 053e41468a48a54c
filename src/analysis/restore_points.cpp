#include "analysis/restore_points.h"

namespace hd::analysis {

std::vector<RestorePoint> restore_points(int n_layer, bool components) {
  using K = RestorePoint::Kind;
  std::vector<RestorePoint> out = {{K::kEmbedding, -1, "inp_embd"}};
  for (int l = 0; l < n_layer; ++l) {
    const std::string n = std::to_string(l);
    if (components) out.push_back({K::kAfterAttention, l, "ffn_inp-" + n});
    out.push_back({K::kAfterMlp, l, "l_out-" + n});
  }
  return out;
}

}  // namespace hd::analysis
