// The logit lens in deployment numerics: each layer's residual written as the final norm's
// input of the same arm's pass, so llama.cpp's own final norm and output head, in that arm's
// kernels and weight types, read what the model predicts after the layer. Never a re-implemented
// norm: reusing the last layer's norm statistics for every layer is a known mistake of lens
// tools. Rows per (layer, scored position); lens.cpp.
#pragma once
#include <memory>

#include "analysis/plugin.h"

namespace hd::analysis {

std::unique_ptr<ChunkAnalysis> make_lens_analysis();

// The first layer from which an arm's lens keeps its final top-1 to the last layer, given
// `agrees[layer]` (the last layer's lens is the arm's own logits: it agrees).
int lock_layer(const std::vector<bool>& agrees);

}  // namespace hd::analysis
