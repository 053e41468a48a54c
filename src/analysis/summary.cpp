#include "analysis/summary.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace hd::analysis {

ComparisonSummary summarize_comparison(const std::vector<const Comparison*>& chunks) {
  std::vector<double> kl, flip, nll_a, nll_b;
  std::vector<int> cluster;
  bool identical = true;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (const auto& row : chunks[c]->positions) {
      if (!row.scored) continue;
      identical = identical && row.score.kl == 0 && row.score.nll_a == row.score.nll_b;
      kl.push_back(row.score.kl);
      flip.push_back(row.score.top_a.id[0] != row.score.top_b.id[0] ? 1.0 : 0.0);
      nll_a.push_back(row.score.nll_a);
      nll_b.push_back(row.score.nll_b);
      cluster.push_back(static_cast<int>(c));
    }
  }
  ComparisonSummary s;
  s.n_scored = kl.size();
  s.bitwise_identical = identical && !kl.empty();
  s.kl = cluster_mean(kl, cluster);
  s.top1_change = cluster_mean(flip, cluster);
  s.nll_a = cluster_mean(nll_a, cluster);
  s.nll_b = cluster_mean(nll_b, cluster);
  s.ppl_a = std::exp(s.nll_a.mean);
  s.ppl_b = std::exp(s.nll_b.mean);
  s.kl_percentiles = kl_percentiles(kl);
  return s;
}

// Layer statistics use the scored positions only, so that every figure describes the same
// tokens (position 0, the BOS row, often carries outsized activations).
static std::vector<LayerSummary> summarize_layers(const std::vector<ChunkResult>& chunks) {
  struct Acc {
    std::vector<double> rel;
    std::vector<int> cluster;
    double cos = 0, max_abs = 0, floor_rel = 0;
    size_t floor_n = 0;
  };
  std::map<int, Acc> acc;
  for (size_t c = 0; c < chunks.size(); ++c) {
    std::set<int> scored;
    for (const auto& p : chunks[c].diff.positions) {
      if (p.scored) scored.insert(p.pos);
    }
    for (const auto& l : chunks[c].diff.layers) {
      if (!scored.count(l.pos)) continue;
      Acc& a = acc[l.layer];
      a.rel.push_back(l.diff.rel_err);
      a.cluster.push_back(static_cast<int>(c));
      a.cos += l.diff.cosine;
      a.max_abs = std::max(a.max_abs, l.diff.max_abs);
    }
    if (!chunks[c].floor) continue;
    for (const auto& l : chunks[c].floor->layers) {
      if (!scored.count(l.pos)) continue;
      acc[l.layer].floor_rel += l.diff.rel_err;
      acc[l.layer].floor_n++;
    }
  }
  std::vector<LayerSummary> out;
  for (const auto& [layer, a] : acc) {
    LayerSummary s;
    s.layer = layer;
    s.rel_err = cluster_mean(a.rel, a.cluster);
    s.cosine_mean = a.rel.empty() ? 0 : a.cos / static_cast<double>(a.rel.size());
    s.max_abs = a.max_abs;
    s.floor_rel_err_mean = a.floor_n == 0 ? std::numeric_limits<double>::quiet_NaN()
                                          : a.floor_rel / static_cast<double>(a.floor_n);
    out.push_back(s);
  }
  return out;
}

Summary summarize(const std::vector<ChunkResult>& chunks) {
  Summary s;
  s.n_chunks = chunks.size();
  std::vector<const Comparison*> diff, floor;
  for (const auto& c : chunks) {
    diff.push_back(&c.diff);
    if (c.floor) floor.push_back(&*c.floor);
  }
  s.diff = summarize_comparison(diff);
  s.has_floor = !floor.empty() && floor.size() == chunks.size();
  if (s.has_floor) s.floor = summarize_comparison(floor);
  s.layers = summarize_layers(chunks);
  return s;
}

}  // namespace hd::analysis
