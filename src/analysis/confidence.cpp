#include "analysis/confidence.h"

#include <array>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "analysis/against_floor.h"
#include "analysis/stats.h"

namespace hd::analysis {

namespace {

constexpr std::array<double, 7> kEdges = {0, .2, .4, .6, .8, .95, 1};
constexpr int kBuckets = static_cast<int>(kEdges.size()) - 1;

std::string bucket_label(int b) {
  const auto f = [](double x) {
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  return "[" + f(kEdges[static_cast<size_t>(b)]) + ", " + f(kEdges[static_cast<size_t>(b) + 1]) +
         (b + 1 == kBuckets ? "]" : ")");
}

// Per bucket of one comparison: scored positions, their KL sum and top-1 changes.
struct Totals {
  std::array<int64_t, kBuckets> n{};
  std::array<double, kBuckets> kl{};
  std::array<int64_t, kBuckets> flips{};
};

// Positions are bucketed by A's confidence (`by`, the diff) at the same position, also for B's
// floor, so that each bucket's floor is measured on that bucket's positions.
Totals bucket_totals(const Comparison* c, const Comparison& by) {
  Totals t;
  if (c == nullptr) return t;
  if (c->positions.size() != by.positions.size())
    throw std::invalid_argument("confidence: the floor and the diff score other positions");
  for (size_t i = 0; i < c->positions.size(); ++i) {
    const PositionRow& p = c->positions[i];
    // A position of KL +inf (a masked token) is left out, as the diff's means leave it out
    // (analysis/summary.h): one would make its bucket's mean +inf and its share NaN.
    if (!p.scored || std::isinf(p.score.kl)) continue;
    const auto b = static_cast<size_t>(confidence_bucket(by.positions[i].score.top_a.p[0]));
    ++t.n[b];
    t.kl[b] += p.score.kl;
    t.flips[b] += p.score.top_a.id[0] != p.score.top_b.id[0] ? 1 : 0;
  }
  return t;
}

class Confidence final : public ChunkAnalysis {
 public:
  std::string name() const override { return "confidence"; }
  std::string description() const override {
    return "KL and top-1 changes by A's top-1 probability (6 buckets), with the floor";
  }
  std::vector<ColumnDef> columns() const override {
    using T = ColumnDef::Type;
    return {{"bucket", T::kInteger,
             "0..5: A's top-1 probability in [0,.2) [.2,.4) [.4,.6) "
             "[.6,.8) [.8,.95) [.95,1]"},
            {"positions", T::kInteger, "scored positions of the chunk in the bucket"},
            {"kl_sum", T::kReal, "their KL(A || B), summed in position order"},
            {"flips", T::kInteger, "of them, where A's and B's top-1 token differ"},
            {"floor_positions", T::kInteger, "the same for the floor (A re-split); 0 without it"},
            {"floor_kl_sum", T::kReal, "KL(A || A re-split), summed"},
            {"floor_flips", T::kInteger, "top-1 changes of the floor"},
            {"floor_b_positions", T::kInteger,
             "the same for B's floor (B re-split), bucketed by A's top-1 probability; absent "
             "in files from before it", true},
            {"floor_b_kl_sum", T::kReal, "KL(B || B re-split), summed", true},
            {"floor_b_flips", T::kInteger, "top-1 changes of B's floor", true}};
  }

  std::vector<CellRow> compute(const ChunkInput& in) const override {
    const Totals d = bucket_totals(in.diff, *in.diff), f = bucket_totals(in.floor, *in.diff),
                 g = bucket_totals(in.floor_b, *in.diff);
    std::vector<CellRow> rows;
    for (size_t b = 0; b < kBuckets; ++b) {
      rows.push_back({int64_t(b), d.n[b], d.kl[b], d.flips[b], f.n[b], f.kl[b], f.flips[b],
                      g.n[b], g.kl[b], g.flips[b]});
    }
    return rows;
  }

  SummaryTable summarize(const std::vector<StoredRow>& rows) const override;
};

SummaryTable Confidence::summarize(const std::vector<StoredRow>& rows) const {
  // Per bucket, per chunk: the totals each interval is computed from (chunks are the clusters).
  std::array<std::vector<double>, kBuckets> n, kl, flips, fn, fkl, gn, gkl;
  std::set<int> chunks;
  double all = 0, all_kl = 0;
  for (const auto& r : rows) {
    const auto b = static_cast<size_t>(std::get<int64_t>(r.cells.at(0)));
    if (b >= kBuckets) continue;
    chunks.insert(r.chunk);
    n[b].push_back(cell_real(r.cells.at(1)));
    kl[b].push_back(cell_real(r.cells.at(2)));
    flips[b].push_back(cell_real(r.cells.at(3)));
    fn[b].push_back(cell_real(r.cells.at(4)));
    fkl[b].push_back(cell_real(r.cells.at(5)));
    if (r.cells.size() > 8) {  // B's floor: absent in files from before it
      gn[b].push_back(cell_real(r.cells.at(7)));
      gkl[b].push_back(cell_real(r.cells.at(8)));
    }
    all += cell_real(r.cells.at(1));
    all_kl += cell_real(r.cells.at(2));
  }
  SummaryTable t;
  t.title = "KL by A's confidence (its top-1 probability)";
  t.columns = {"A top-1 p",    "positions",   "share of positions", "share of KL", "mean KL",
               "KL ±95%",      "top-1 change (95 %)", "floor KL (larger)", "floor of"};
  bool have_floor = false, have_floor_b = false;
  for (size_t b = 0; b < kBuckets; ++b) {
    const MeanCI k = cluster_mean_of_totals(kl[b], n[b]);
    const RateCI c = cluster_rate_of_totals(flips[b], n[b]);
    const MeanCI fa = cluster_mean_of_totals(fkl[b], fn[b]);
    const MeanCI fb = cluster_mean_of_totals(gkl[b], gn[b]);
    have_floor = have_floor || fa.n > 0;
    have_floor_b = have_floor_b || fb.n > 0;
    // The run's floor, as every view reads it: the larger of A vs A′ and B vs B′, named.
    const bool b_larger = fb.n > 0 && (fa.n == 0 || fb.mean > fa.mean);
    const MeanCI& f = b_larger ? fb : fa;
    double kl_b = 0;  // "the quant only hurts where the model was unsure": how much of the KL
    for (double x : kl[b]) kl_b += x;
    t.rows.push_back({bucket_label(static_cast<int>(b)), static_cast<int64_t>(k.n),
                      all > 0 ? static_cast<double>(k.n) / all : NAN,
                      all_kl > 0 ? kl_b / all_kl : NAN, k.mean, k.ci95, c, f.mean,
                      std::string(f.n == 0 ? "" : b_larger ? "B vs B′" : "A vs A′")});
  }
  t.notes.push_back("intervals: 95 %, cluster-robust over " + std::to_string(chunks.size()) +
                    " chunks (a bucket held by fewer than 2 chunks has none)");
  if (const std::string few = few_chunks_note(chunks.size()); !few.empty()) t.notes.push_back(few);
  if (!have_floor) t.notes.push_back("no floor: the run was made with --no-floor");
  else if (!have_floor_b)
    t.notes.push_back("floor: A vs A′ only (B vs B′ is not in this file, written before it)");
  return t;
}

}  // namespace

int confidence_bucket(double p) {
  for (int b = 0; b + 1 < kBuckets; ++b) {
    if (p < kEdges[static_cast<size_t>(b) + 1]) return b;
  }
  return kBuckets - 1;
}

std::unique_ptr<ChunkAnalysis> make_confidence_analysis() { return std::make_unique<Confidence>(); }

}  // namespace hd::analysis
