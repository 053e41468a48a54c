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
  MeanCI top1_change;  // mean of [top1_a != top1_b]: the change rate, with its t-interval
  RateCI top1_rate;    // the same rate with an interval inside [0, 1]: what every view prints
  double ppl_a = 0;    // exp(mean NLL_a) over scored positions
  double ppl_b = 0;
  MeanCI nll_a;
  MeanCI nll_b;
  bool bitwise_identical = false;  // every scored KL is exactly 0 and both NLLs equal
  // Positions where KL(A || B) is +inf: B gives a token no probability (a -inf logit, a
  // masked token) that A gives some. The KL mean, interval and percentiles leave them out, and
  // every view says how many there are and where the first one is.
  size_t n_kl_infinite = 0;
  int first_infinite_chunk = -1, first_infinite_pos = -1;
  // Positions where an arm gives the actual next token no probability (its NLL is +inf): the
  // NLL means and PPLs leave them out.
  size_t n_nll_infinite = 0;
};

struct LayerSummary {
  int layer = 0;
  MeanCI rel_err;
  double cosine_mean = 0;
  double max_abs = 0;
  double floor_rel_err_mean = 0;    // the larger of the two below; NaN without a floor
  double floor_a_rel_err_mean = 0;  // A vs A′; NaN without a floor
  double floor_b_rel_err_mean = 0;  // B vs B′; NaN without one (and in files from before it)
};

// The floor each figure is read against: per figure, the larger of A vs A′ and B vs B′ (by
// mean; A's alone in files from before B's floor). A floor of A alone can understate the noise
// by orders of magnitude: an F32 A is bitwise stable where a quantized B is not.
struct FloorFigures {
  MeanCI kl, top1_change;
  RateCI top1_rate;  // of the floor that changes more top-1 tokens
  std::vector<Percentile> kl_percentiles;  // the larger at each percentile
  bool bitwise_identical = false;          // every floor measured is bitwise
};

// The floor of one split (run/config.h floor_arm): A vs A′ and B vs B′ over the chunks measured
// at it, chunk c at split c % 2.
struct SplitFloor {
  int split = 0;
  ComparisonSummary a;
  bool has_b = false;
  ComparisonSummary b;
  double kl = 0;  // the larger mean KL of the two (0 where both are bitwise)
};

// Two splits disagree when one's KL is above this many times the other's (or one is 0 and the
// other not): then one split alone would have understated the noise, and every view says so.
inline constexpr double kSplitsDisagree = 10;

struct Summary {
  size_t n_chunks = 0;
  ComparisonSummary diff;
  // The chunks the floor was measured on (its sample, analysis/floor_sample.h; every chunk in files
  // from before it); 0 without a floor.
  size_t floor_chunks = 0;
  bool has_floor = false;  // A vs A′ on the floor's chunks
  ComparisonSummary floor;
  bool has_floor_b = false;  // B vs B′ on the same chunks
  ComparisonSummary floor_b;
  FloorFigures noise;  // when has_floor: with two splits, the larger over both splits and arms
  // In a run of two splits: each split present's floors (a run of one chunk, or a part of a
  // sharded run, holds one), and the larger split's KL over the smaller's (+inf where the smaller
  // is 0 and the larger not; NaN where both are 0 or one split is present).
  std::vector<SplitFloor> splits;
  double split_ratio = 0;
  // Both splits present with 2 chunks or more each: the KL and top-1 floors are the larger
  // split's; otherwise they pool the splits.
  bool splits_read_alone = false;
  std::vector<LayerSummary> layers;
};

// chunk_ids[i]: the run's number of chunks[i] (where the first infinite KL is said to be).
ComparisonSummary summarize_comparison(const std::vector<const Comparison*>& chunks,
                                       const std::vector<int>& chunk_ids);
// Per figure, the larger over the floors given (A's and B's; with two splits, each split's).
FloorFigures larger_floor(const std::vector<const ComparisonSummary*>& floors);
// `two_splits`: the floor of chunk c was measured at split c % 2 (provenance floor_ubatch_2).
Summary summarize(const std::vector<ChunkResult>& chunks, bool two_splits = false);

}  // namespace hd::analysis
