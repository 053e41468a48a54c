#include "analysis/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/against_floor.h"

namespace hd::analysis {

ComparisonSummary summarize_comparison(const std::vector<const Comparison*>& chunks,
                                       const std::vector<int>& chunk_ids) {
  std::vector<double> kl, flip, nll_a, nll_b;
  std::vector<int> cluster, kl_cluster, nll_cluster;
  bool identical = true;
  ComparisonSummary s;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (const auto& row : chunks[c]->positions) {
      if (!row.scored) continue;
      identical = identical && row.score.kl == 0 && row.score.nll_a == row.score.nll_b;
      flip.push_back(row.score.top_a.id[0] != row.score.top_b.id[0] ? 1.0 : 0.0);
      cluster.push_back(static_cast<int>(c));
      if (std::isinf(row.score.kl)) {
        if (s.n_kl_infinite++ == 0) {
          s.first_infinite_chunk = chunk_ids[c];
          s.first_infinite_pos = row.pos;
        }
      } else {
        kl.push_back(row.score.kl);
        kl_cluster.push_back(static_cast<int>(c));
      }
      if (std::isinf(row.score.nll_a) || std::isinf(row.score.nll_b)) {
        ++s.n_nll_infinite;
      } else {
        nll_a.push_back(row.score.nll_a);
        nll_b.push_back(row.score.nll_b);
        nll_cluster.push_back(static_cast<int>(c));
      }
    }
  }
  s.n_scored = flip.size();
  s.bitwise_identical = identical && !flip.empty();
  s.kl = cluster_mean(kl, kl_cluster);
  s.top1_change = cluster_mean(flip, cluster);
  s.top1_rate = cluster_rate(flip, cluster);
  s.nll_a = cluster_mean(nll_a, nll_cluster);
  s.nll_b = cluster_mean(nll_b, nll_cluster);
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
    double cos = 0, max_abs = 0;
    double floor_rel[2] = {0, 0};  // A vs A′, B vs B′
    size_t floor_n[2] = {0, 0};
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
    const std::optional<Comparison>* floors[2] = {&chunks[c].floor, &chunks[c].floor_b};
    for (int f = 0; f < 2; ++f) {
      if (!*floors[f]) continue;
      for (const auto& l : (*floors[f])->layers) {
        if (!scored.count(l.pos)) continue;
        acc[l.layer].floor_rel[f] += l.diff.rel_err;
        acc[l.layer].floor_n[f]++;
      }
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto mean = [nan](double sum, size_t n) {
    return n == 0 ? nan : sum / static_cast<double>(n);
  };
  std::vector<LayerSummary> out;
  for (const auto& [layer, a] : acc) {
    LayerSummary s;
    s.layer = layer;
    s.rel_err = cluster_mean(a.rel, a.cluster);
    s.cosine_mean = a.rel.empty() ? 0 : a.cos / static_cast<double>(a.rel.size());
    s.max_abs = a.max_abs;
    s.floor_a_rel_err_mean = mean(a.floor_rel[0], a.floor_n[0]);
    s.floor_b_rel_err_mean = mean(a.floor_rel[1], a.floor_n[1]);
    s.floor_rel_err_mean = std::isnan(s.floor_b_rel_err_mean)
                               ? s.floor_a_rel_err_mean
                               : std::max(s.floor_a_rel_err_mean, s.floor_b_rel_err_mean);
    out.push_back(s);
  }
  return out;
}

// x where it is the larger, or where the current is NaN (a floor with no value) and x is not.
static bool larger(double x, double current) {
  return x > current || (std::isnan(current) && !std::isnan(x));
}

FloorFigures larger_floor(const std::vector<const ComparisonSummary*>& floors) {
  FloorFigures f;
  const ComparisonSummary& first = *floors.front();
  f.kl = first.kl;
  f.top1_change = first.top1_change;
  f.top1_rate = first.top1_rate;
  f.kl_percentiles = first.kl_percentiles;
  f.bitwise_identical = true;
  for (const ComparisonSummary* c : floors) {
    if (larger(c->kl.mean, f.kl.mean)) f.kl = c->kl;
    if (larger(c->top1_change.mean, f.top1_change.mean)) f.top1_change = c->top1_change;
    if (larger(c->top1_rate.rate, f.top1_rate.rate)) f.top1_rate = c->top1_rate;
    for (size_t i = 0; i < f.kl_percentiles.size() && i < c->kl_percentiles.size(); ++i) {
      if (larger(c->kl_percentiles[i].value, f.kl_percentiles[i].value))
        f.kl_percentiles[i].value = c->kl_percentiles[i].value;
    }
    f.bitwise_identical = f.bitwise_identical && c->bitwise_identical;
  }
  return f;
}

// Each split present's floors over the chunks measured at it (a part of a sharded run, or a run
// of one chunk, holds one), and how far two are apart.
static void summarize_splits(Summary& s, const std::vector<ChunkResult>& chunks) {
  for (int split = 0; split < 2; ++split) {
    std::vector<const Comparison*> a, b;
    std::vector<int> ids;
    for (const auto& c : chunks) {
      if (c.chunk % 2 != split || !c.floor) continue;
      ids.push_back(c.chunk);
      a.push_back(&*c.floor);
      if (c.floor_b) b.push_back(&*c.floor_b);
    }
    if (a.empty()) continue;
    SplitFloor f;
    f.split = split;
    f.a = summarize_comparison(a, ids);
    f.has_b = s.has_floor_b && b.size() == a.size();
    if (f.has_b) f.b = summarize_comparison(b, ids);
    const auto kl_of = [](const ComparisonSummary& c) {
      return c.bitwise_identical ? 0.0 : c.kl.mean;
    };
    f.kl = f.has_b && larger(kl_of(f.b), kl_of(f.a)) ? kl_of(f.b) : kl_of(f.a);
    s.splits.push_back(f);
  }
  s.split_ratio = std::numeric_limits<double>::quiet_NaN();
  if (s.splits.size() < 2) return;
  const double hi = std::max(s.splits[0].kl, s.splits[1].kl);
  const double lo = std::min(s.splits[0].kl, s.splits[1].kl);
  if (std::isnan(hi) || std::isnan(lo) || hi == 0) return;  // both bitwise: no disagreement
  s.split_ratio = lo == 0 ? std::numeric_limits<double>::infinity() : hi / lo;
}

Summary summarize(const std::vector<ChunkResult>& chunks, bool two_splits) {
  Summary s;
  s.n_chunks = chunks.size();
  std::vector<const Comparison*> diff, floor, floor_b;
  std::vector<int> ids, floor_ids;
  for (const auto& c : chunks) {
    ids.push_back(c.chunk);
    diff.push_back(&c.diff);
    if (c.floor) floor.push_back(&*c.floor), floor_ids.push_back(c.chunk);
    if (c.floor && c.floor_b) floor_b.push_back(&*c.floor_b);
  }
  s.diff = summarize_comparison(diff, ids);
  // The floor over the chunks it was measured on (analysis/floor_sample.h: a sample, or every one),
  // with its own interval over them.
  s.floor_chunks = floor.size();
  s.has_floor = !floor.empty();
  if (s.has_floor) s.floor = summarize_comparison(floor, floor_ids);
  s.has_floor_b = s.has_floor && floor_b.size() == floor.size();
  if (s.has_floor_b) s.floor_b = summarize_comparison(floor_b, floor_ids);
  if (s.has_floor && two_splits) summarize_splits(s, chunks);
  // Each split read alone needs an interval of its own: with a split of one chunk the floor
  // pools them, as a run of one split (a split's floor of one chunk has no upper end but its
  // mean, and the pooled one has).
  // A floor measured on a sample (analysis/floor_sample.h) reads its splits alone only where
  // each has kFewChunks chunks: over 2 clusters a split's interval is t(1) = 12.7 wide, and
  // pooled the sample's 4 chunks give t(3) = 3.2.
  const size_t fewest = s.floor_chunks < s.n_chunks ? kFewChunks : 2;
  s.splits_read_alone = s.splits.size() == 2;
  for (const SplitFloor& f : s.splits)
    s.splits_read_alone = s.splits_read_alone && f.a.kl.clusters >= fewest;
  if (s.splits_read_alone) {
    std::vector<const ComparisonSummary*> floors;
    for (const SplitFloor& f : s.splits) {
      floors.push_back(&f.a);
      if (f.has_b) floors.push_back(&f.b);
    }
    s.noise = larger_floor(floors);
  } else if (s.has_floor) {
    s.noise = s.has_floor_b ? larger_floor({&s.floor, &s.floor_b}) : larger_floor({&s.floor});
  }
  s.layers = summarize_layers(chunks);
  return s;
}

}  // namespace hd::analysis
