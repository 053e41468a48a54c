#include "analysis/flips.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "analysis/stats.h"

namespace hd::analysis {

using Position = std::pair<int, int>;  // (chunk, pos)

// Every scored position's top-1 margin, and its flip when A's and B's top-1 differ: fills
// r.n_scored, r.flips and both medians, and which positions were scored and which flipped.
static void find_flips(const std::vector<ChunkResult>& chunks, FlipReport& r,
                       std::set<Position>& scored, std::set<Position>& flipped) {
  std::vector<double> margins_all, margins_flipped;
  for (const auto& c : chunks) {
    for (const auto& p : c.diff.positions) {
      if (!p.scored) continue;
      ++r.n_scored;
      scored.insert({c.chunk, p.pos});
      const double margin = static_cast<double>(p.score.top_a.p[0]) - p.score.top_a.p[1];
      margins_all.push_back(margin);
      if (p.score.top_a.id[0] == p.score.top_b.id[0]) continue;
      flipped.insert({c.chunk, p.pos});
      margins_flipped.push_back(margin);
      r.flips.push_back({c.chunk, p.pos, p.target, p.score.top_a.id[0], p.score.top_b.id[0],
                         p.score.top_a.p[0], margin, p.score.kl});
    }
  }
  r.median_margin_all = median(margins_all);
  r.median_margin_flipped = median(margins_flipped);
}

// Residual error per layer, flipped positions against the other scored ones; and the layer
// where the flipped positions' error grows most.
static void add_layer_errors(const std::vector<ChunkResult>& chunks,
                             const std::set<Position>& scored, const std::set<Position>& flipped,
                             FlipReport& r) {
  std::map<int, std::pair<double, int>> f, o;  // layer -> (sum, count)
  for (const auto& c : chunks) {
    for (const auto& l : c.diff.layers) {
      const Position key{c.chunk, l.pos};
      if (!scored.count(key)) continue;
      auto& acc = flipped.count(key) ? f[l.layer] : o[l.layer];
      acc.first += l.diff.rel_err;
      acc.second += 1;
    }
  }
  double previous = 0;
  double biggest = -1;
  for (const auto& [layer, acc] : f) {
    FlipLayer fl;
    fl.layer = layer;
    fl.rel_err_flipped = acc.first / acc.second;
    if (auto it = o.find(layer); it != o.end() && it->second.second > 0) {
      fl.rel_err_other = it->second.first / it->second.second;
    }
    if (fl.rel_err_flipped - previous > biggest) {
      biggest = fl.rel_err_flipped - previous;
      r.grows_most_at = layer;
    }
    previous = fl.rel_err_flipped;
    r.layers.push_back(fl);
  }
}

// With transplants: mean denoise KL at the flipped positions after each restore point, and the
// point that carries the most of it.
static void add_denoise(const std::vector<ChunkResult>& chunks, const std::set<Position>& flipped,
                        FlipReport& r) {
  std::vector<std::string> points;
  std::map<int, std::pair<double, int>> by_step;
  for (const auto& c : chunks) {
    if (!c.transplants) continue;
    points = c.transplants->points;
    for (const auto& row : c.transplants->denoise) {
      if (!flipped.count({c.chunk, row.pos})) continue;
      auto& acc = by_step[row.step];
      acc.first += row.kl;
      acc.second += 1;
    }
  }
  if (by_step.empty()) return;
  // Step 0, nothing restored, is not stored: it is the diff's own KL at those positions.
  double none = 0;
  for (const auto& fl : r.flips) none += fl.kl;
  none /= static_cast<double>(r.flips.size());
  r.denoise.push_back({"none", none});
  double last = none, best_drop = -1;
  for (const auto& [step, acc] : by_step) {
    if (step < 1 || static_cast<size_t>(step) > points.size()) continue;
    const std::string& name = points[static_cast<size_t>(step - 1)];
    // Components add ffn_inp-N points; the flip view walks the layer curve only.
    if (name.rfind("ffn_inp-", 0) == 0) continue;
    const double kl = acc.first / acc.second;
    if (last - kl > best_drop) {
      best_drop = last - kl;
      r.carried_most_by = name;
    }
    last = kl;
    r.denoise.push_back({name, kl});
  }
}

FlipReport flip_report(const std::vector<ChunkResult>& chunks) {
  FlipReport r;
  std::set<Position> scored, flipped;
  find_flips(chunks, r, scored, flipped);
  if (flipped.empty()) return r;
  add_layer_errors(chunks, scored, flipped, r);
  add_denoise(chunks, flipped, r);
  return r;
}

}  // namespace hd::analysis
