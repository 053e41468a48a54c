#include "analysis/transplant_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace hd::analysis {

namespace {

// D(k) and N(k), k = 0..S, for every scored position of every chunk, and its chunk.
struct Table {
  std::vector<std::string> points;  // "none" then the restore points
  std::vector<std::vector<double>> d, n;
  std::vector<int> cluster;
};

std::optional<PositionTrace> trace_of(const ChunkResult& c, int pos) {
  const Transplants& t = *c.transplants;
  const auto diff = std::find_if(c.diff.positions.begin(), c.diff.positions.end(),
                                 [&](const PositionRow& r) { return r.pos == pos; });
  if (diff == c.diff.positions.end()) return std::nullopt;
  PositionTrace tr;
  tr.points.push_back("none");
  tr.points.insert(tr.points.end(), t.points.begin(), t.points.end());
  const size_t steps = tr.points.size();
  tr.denoise.assign(steps, std::numeric_limits<double>::quiet_NaN());
  tr.noise.assign(steps, std::numeric_limits<double>::quiet_NaN());
  tr.denoise[0] = diff->score.kl;
  tr.noise[0] = 0;
  for (const auto* rows : {&t.denoise, &t.noise}) {
    auto& out = rows == &t.denoise ? tr.denoise : tr.noise;
    for (const auto& r : *rows) {
      if (r.pos == pos && r.step >= 1 && static_cast<size_t>(r.step) < steps)
        out[static_cast<size_t>(r.step)] = r.kl;
    }
  }
  return tr;
}

std::optional<Table> build_table(const std::vector<ChunkResult>& chunks) {
  Table t;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const ChunkResult& chunk = chunks[c];
    if (!chunk.transplants) return std::nullopt;
    // Index the rows once per chunk: step-major vectors by position.
    std::map<int, std::vector<double>> d, n;
    const size_t steps = chunk.transplants->points.size() + 1;
    if (t.points.empty()) {
      t.points.push_back("none");
      t.points.insert(t.points.end(), chunk.transplants->points.begin(),
                      chunk.transplants->points.end());
    }
    for (const auto& r : chunk.diff.positions) {
      if (!r.scored) continue;
      d[r.pos].assign(steps, 0.0);
      n[r.pos].assign(steps, 0.0);
      d[r.pos][0] = r.score.kl;
    }
    for (const auto& r : chunk.transplants->denoise) {
      if (d.count(r.pos)) d[r.pos][static_cast<size_t>(r.step)] = r.kl;
    }
    for (const auto& r : chunk.transplants->noise) {
      if (n.count(r.pos)) n[r.pos][static_cast<size_t>(r.step)] = r.kl;
    }
    // A position whose KL is +inf at some step (a masked token, analysis/summary.h) is left out
    // of the curves, as the diff's means leave it out: one would make every mean +inf and every
    // step between two of them NaN.
    const auto finite = [](const std::vector<double>& v) {
      return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    };
    for (auto& [pos, row] : d) {
      if (!finite(row) || !finite(n[pos])) continue;
      t.d.push_back(std::move(row));
      t.n.push_back(std::move(n[pos]));
      t.cluster.push_back(static_cast<int>(c));
    }
  }
  if (t.points.empty()) return std::nullopt;
  return t;
}

// The mean (with interval) over positions of f(row).
template <typename F>
MeanCI mean_of(const Table& t, const std::vector<std::vector<double>>& m, F f) {
  std::vector<double> v;
  v.reserve(m.size());
  for (const auto& row : m) v.push_back(f(row));
  return cluster_mean(v, t.cluster);
}

std::vector<CurvePoint> curve(const Table& t, const std::vector<std::vector<double>>& m) {
  std::vector<CurvePoint> out;
  for (size_t k = 0; k < t.points.size(); ++k) {
    if (t.points[k].rfind("ffn_inp-", 0) == 0) continue;  // curves use whole layers
    out.push_back({t.points[k], mean_of(t, m, [k](const auto& r) { return r[k]; })});
  }
  return out;
}

DirectionComponents components(const Table& t, const std::vector<std::vector<double>>& m,
                               bool denoise) {
  // step(k) is positive when the block entered at point k carries divergence.
  auto step = [denoise](const std::vector<double>& r, size_t k) {
    return denoise ? r[k - 1] - r[k] : r[k] - r[k - 1];
  };
  const size_t last = t.points.size() - 1;
  DirectionComponents c;
  c.untouched = mean_of(t, m, [](const auto& r) { return r[0]; }).mean;
  c.final = mean_of(t, m, [last](const auto& r) { return r[last]; }).mean;
  c.embedding = mean_of(t, m, [&](const auto& r) { return step(r, 1); });
  std::vector<size_t> attn_steps, mlp_steps;
  for (size_t k = 2; k + 1 <= last; k += 2) {
    const int layer = static_cast<int>(k / 2 - 1);
    attn_steps.push_back(k);
    mlp_steps.push_back(k + 1);
    c.layers.push_back({layer, mean_of(t, m, [&](const auto& r) { return step(r, k); }),
                        mean_of(t, m, [&](const auto& r) { return step(r, k + 1); })});
  }
  auto total = [&](const std::vector<double>& r, const std::vector<size_t>& ks) {
    double s = 0;
    for (size_t k : ks) s += step(r, k);
    return s;
  };
  c.attention_total = mean_of(t, m, [&](const auto& r) { return total(r, attn_steps); });
  c.mlp_total = mean_of(t, m, [&](const auto& r) { return total(r, mlp_steps); });
  c.paired_diff =
      mean_of(t, m, [&](const auto& r) { return total(r, attn_steps) - total(r, mlp_steps); });
  // Attention's share per chunk, to show how stable the split is across the text.
  std::map<int, std::pair<double, double>> per_chunk;
  for (size_t i = 0; i < m.size(); ++i) {
    per_chunk[t.cluster[i]].first += total(m[i], attn_steps);
    per_chunk[t.cluster[i]].second += total(m[i], mlp_steps);
  }
  c.attention_share_min = std::numeric_limits<double>::infinity();
  c.attention_share_max = -std::numeric_limits<double>::infinity();
  for (const auto& [chunk, am] : per_chunk) {
    const double share = am.first + am.second == 0 ? std::numeric_limits<double>::quiet_NaN()
                                                   : am.first / (am.first + am.second);
    c.attention_share_min = std::min(c.attention_share_min, share);
    c.attention_share_max = std::max(c.attention_share_max, share);
  }
  return c;
}

}  // namespace

std::optional<TransplantSummary> summarize_transplants(const std::vector<ChunkResult>& chunks) {
  if (chunks.empty()) return std::nullopt;
  const auto table = build_table(chunks);
  if (!table) return std::nullopt;
  TransplantSummary s;
  s.denoise = curve(*table, table->d);
  s.noise = curve(*table, table->n);
  s.has_components = table->points.size() > 2 && table->points[2].rfind("ffn_inp-", 0) == 0;
  if (s.has_components) {
    s.denoise_components = components(*table, table->d, true);
    s.noise_components = components(*table, table->n, false);
  }
  return s;
}

std::optional<PositionTrace> position_trace(const ChunkResult& chunk, int pos) {
  if (!chunk.transplants) return std::nullopt;
  return trace_of(chunk, pos);
}

}  // namespace hd::analysis
