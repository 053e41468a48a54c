// The totals of a diff, from its per-position rows. What `show` prints and `--json` emits.
#pragma once
#include <vector>

#include "analysis/records.h"
#include "analysis/stats.h"

namespace hd::analysis {

struct ComparisonSummary {
  size_t n_scored = 0;
  MeanCI kl;
  std::vector<Percentile> kl_percentiles;
  MeanCI top1_change;  // mean of [top1_a != top1_b]: the change rate, with its interval
  double ppl_a = 0;    // exp(mean NLL_a) over scored positions
  double ppl_b = 0;
  MeanCI nll_a;
  MeanCI nll_b;
  bool bitwise_identical = false;  // every scored KL is exactly 0 and both NLLs equal
};

struct LayerSummary {
  int layer = 0;
  MeanCI rel_err;
  double cosine_mean = 0;
  double max_abs = 0;
  double floor_rel_err_mean = 0;  // NaN without a floor
};

struct Summary {
  size_t n_chunks = 0;
  ComparisonSummary diff;
  bool has_floor = false;
  ComparisonSummary floor;
  std::vector<LayerSummary> layers;
};

ComparisonSummary summarize_comparison(const std::vector<const Comparison*>& chunks);
Summary summarize(const std::vector<ChunkResult>& chunks);

}  // namespace hd::analysis
