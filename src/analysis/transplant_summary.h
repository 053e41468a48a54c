// Transplant curves and the attention/MLP components, from stored per-position KLs.
//
// For a scored position, D(k) and N(k) are the KL after restoring point k (k = 0 is "none":
// D(0) = KL(A||B), N(0) = 0). Components walk the points in forward order; a step is signed so
// that positive means "this block carries divergence":
//   denoise step k = D(k-1) - D(k),   noise step k = N(k) - N(k-1).
// Per direction the steps telescope: their sum is D(0) - D(last), resp. N(last) - N(0).
// Every mean has a 95 % t-interval from a cluster-robust standard error, chunks as clusters.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "analysis/records.h"
#include "analysis/stats.h"

namespace hd::analysis {

struct CurvePoint {
  std::string point;  // "none", "inp_embd", "l_out-N" (and "ffn_inp-N" in position views)
  MeanCI kl;
};

struct LayerSteps {
  int layer = 0;
  MeanCI attention;  // the step into ffn_inp-N
  MeanCI mlp;        // the step into l_out-N
};

struct DirectionComponents {
  double untouched = 0;  // mean at "none"
  double final = 0;      // mean at l_out-last: what the final norm and head add on their own
  MeanCI embedding;      // the step into inp_embd
  std::vector<LayerSteps> layers;
  MeanCI attention_total, mlp_total;
  MeanCI paired_diff;  // attention_total - mlp_total, paired per position
  double attention_share_min = 0, attention_share_max = 0;  // per chunk: attn / (attn + mlp)
};

struct TransplantSummary {
  std::vector<CurvePoint> denoise, noise;  // none, inp_embd, each l_out-N
  bool has_components = false;
  DirectionComponents denoise_components, noise_components;
};

// nullopt when the chunks carry no transplants.
std::optional<TransplantSummary> summarize_transplants(const std::vector<ChunkResult>& chunks);

// One position's KL after each restore point, both directions, "none" first.
struct PositionTrace {
  std::vector<std::string> points;
  std::vector<double> denoise, noise;
};
std::optional<PositionTrace> position_trace(const ChunkResult& chunk, int pos);

}  // namespace hd::analysis
