#include "analysis/lens.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/against_floor.h"
#include "analysis/kl.h"
#include "analysis/stats.h"
#include "errors.h"

namespace hd::analysis {

namespace {

// The top-1 token of a row of logits: the lowest id among ties, as kl.h's top_k, so that it
// compares with the diff's stored top-1 of each arm's final logits.
int32_t top1(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

class Lens final : public ChunkAnalysis {
 public:
  std::string name() const override { return "lens"; }
  std::string description() const override {
    return "logit lens per arm in its own kernels: each layer's residual through the model's "
           "final norm and head; where the arms' running predictions part";
  }
  std::string unavailable(const ModelPoints& m) const override {
    if (m.residual.empty() || m.n_layer < 1) return "the residual stream after each layer cannot be read";
    return m.no_residual_writes;
  }
  std::vector<std::string> points(const ModelPoints& m) const override { return m.residual; }
  std::vector<ColumnDef> columns() const override {
    using T = ColumnDef::Type;
    return {{"layer", T::kInteger, "the residual after this layer (l_out-N) as the final norm's input"},
            {"pos", T::kInteger, "the scored position (its logits predict token pos + 1)"},
            {"kl_a", T::kReal, "KL(A's final logits || A's lens at the layer)"},
            {"kl_b", T::kReal, "KL(B's final logits || B's lens at the layer)"},
            {"kl_ab", T::kReal, "KL(A's lens || B's lens) at the layer"},
            {"top1_a", T::kInteger, "A's lens top-1 token", false, true},
            {"top1_b", T::kInteger, "B's lens top-1 token", false, true},
            {"agree_a", T::kInteger, "1 where A's lens top-1 is A's final top-1"},
            {"agree_b", T::kInteger, "1 where B's lens top-1 is B's final top-1"}};
  }
  std::vector<CellRow> compute(const ChunkInput& in) const override;
  SummaryTable summarize(const std::vector<StoredRow>& rows) const override;
  Shortcut shortcut() const override {
    return {"lens",
            "logit lens in each arm's numerics: each layer's residual through the model's final "
            "norm and head (2 × n_layer more passes per chunk; --analysis lens)",
            "lens",
            "the logit lens alone: per layer, each arm's lens against its final logits and against "
            "the other arm's (a run with diff --lens)"};
  }
};

std::vector<CellRow> Lens::compute(const ChunkInput& in) const {
  const auto& m = *in.points;
  const size_t v = static_cast<size_t>(in.n_vocab);
  const int n = static_cast<int>(in.tokens.size());
  const std::string& last = m.residual.back();
  std::vector<float> lens_a;  // A's lens logits: B's rerun reuses the buffer
  ScoreScratch scratch;
  std::vector<CellRow> rows;
  for (int layer = 0; layer < m.n_layer; ++layer) {
    const std::string& from = m.residual[static_cast<size_t>(layer)];
    const auto la = in.rewrite_own('a', last, from);
    lens_a.assign(la.begin(), la.end());
    const auto lb = in.rewrite_own('b', last, from);
    for (int i = 0; i < n - 1 - in.first_output; ++i) {
      const auto& p = in.diff->positions[static_cast<size_t>(i)];
      if (!p.scored) continue;
      const size_t off = static_cast<size_t>(i) * v;
      const std::span<const float> fa = in.logits_a.subspan(off, v), fb = in.logits_b.subspan(off, v);
      const std::span<const float> xa(lens_a.data() + off, v), xb = lb.subspan(off, v);
      const int32_t ta = top1(xa), tb = top1(xb);
      rows.push_back({int64_t{layer}, int64_t{p.pos}, kl_divergence(fa, xa, scratch),
                      kl_divergence(fb, xb, scratch), kl_divergence(xa, xb, scratch),
                      int64_t{ta}, int64_t{tb}, int64_t{ta == p.score.top_a.id[0]},
                      int64_t{tb == p.score.top_b.id[0]}});
    }
    // The known answer, checked on every chunk: the last layer's own residual written back
    // is the arm's pass, bit for bit. A lens that is not exact there is exact nowhere.
    if (layer + 1 == m.n_layer &&
        (!std::equal(lens_a.begin(), lens_a.end(), in.logits_a.begin(), in.logits_a.end()) ||
         !std::equal(lb.begin(), lb.end(), in.logits_b.begin(), in.logits_b.end()))) {
      throw RuntimeError("the logit lens at the last layer is not the arm's own logits: "
                               "the final norm's input cannot be written on this model");
    }
  }
  return rows;
}

}  // namespace

int lock_layer(const std::vector<bool>& agrees) {
  int lock = static_cast<int>(agrees.size());
  while (lock > 0 && agrees[static_cast<size_t>(lock) - 1]) --lock;
  return lock;
}

SummaryTable Lens::summarize(const std::vector<StoredRow>& rows) const {
  struct Layer {
    std::vector<double> kl_a, kl_b, kl_ab, agree_a, agree_b, agree_ab;
    std::vector<int> cluster;
  };
  std::map<int, Layer> layers;
  // Per (chunk, pos): each arm's agreement by layer, for the lock layers.
  std::map<std::pair<int, int64_t>, std::pair<std::vector<bool>, std::vector<bool>>> at;
  std::set<int> chunks;
  for (const auto& r : rows) {
    const auto& c = r.cells;
    const int layer = static_cast<int>(std::get<int64_t>(c.at(0)));
    if (layer < 0 || layer > 4096) continue;
    Layer& l = layers[layer];
    l.kl_a.push_back(cell_real(c.at(2)));
    l.kl_b.push_back(cell_real(c.at(3)));
    l.kl_ab.push_back(cell_real(c.at(4)));
    l.agree_ab.push_back(std::get<int64_t>(c.at(5)) == std::get<int64_t>(c.at(6)) ? 1 : 0);
    l.agree_a.push_back(cell_real(c.at(7)));
    l.agree_b.push_back(cell_real(c.at(8)));
    l.cluster.push_back(r.chunk);
    chunks.insert(r.chunk);
    auto& [a, b] = at[{r.chunk, std::get<int64_t>(c.at(1))}];
    if (a.size() <= static_cast<size_t>(layer)) a.resize(static_cast<size_t>(layer) + 1, false);
    if (b.size() <= static_cast<size_t>(layer)) b.resize(static_cast<size_t>(layer) + 1, false);
    a[static_cast<size_t>(layer)] = cell_real(c.at(7)) != 0;
    b[static_cast<size_t>(layer)] = cell_real(c.at(8)) != 0;
  }
  SummaryTable t;
  t.title = "logit lens: each layer's residual through the model's own final norm and head";
  t.columns = {"layer",      "lens = final A", "lens = final B", "KL(final‖lens) A",
               "KL(final‖lens) B", "KL(lens A‖lens B)", "±95%", "lens A = lens B"};
  for (const auto& [layer, per_layer] : layers) {
    const auto& l = per_layer;  // clang before 16 captures no structured binding
    const auto mean = [&l](const std::vector<double>& x) { return cluster_mean(x, l.cluster); };
    const auto rate = [&l](const std::vector<double>& x) { return cluster_rate(x, l.cluster); };
    const MeanCI ab = mean(l.kl_ab);
    t.rows.push_back({int64_t{layer}, rate(l.agree_a), rate(l.agree_b), mean(l.kl_a).mean,
                      mean(l.kl_b).mean, ab.mean, ab.ci95, rate(l.agree_ab)});
  }
  std::vector<int> lock_a, lock_b;
  size_t earlier = 0, later = 0;
  for (const auto& [where, arms] : at) {
    lock_a.push_back(lock_layer(arms.first));
    lock_b.push_back(lock_layer(arms.second));
    earlier += lock_b.back() < lock_a.back() ? 1 : 0;
    later += lock_b.back() > lock_a.back() ? 1 : 0;
  }
  const auto median = [](std::vector<int> x) {
    if (x.empty()) return 0.0;
    std::sort(x.begin(), x.end());
    const size_t h = x.size() / 2;
    return x.size() % 2 ? double(x[h]) : (x[h - 1] + x[h]) / 2.0;
  };
  t.notes.push_back("lens = final: the share of positions where the lens's top-1 is the arm's "
                    "final top-1; at the last layer the lens is the arm's own logits, bit for bit");
  t.notes.push_back(fmt::format(
      "lock layer (from which the lens keeps the final top-1): median {:g} in A, {:g} in B; it "
      "moved at {} of {} positions ({} earlier in B, {} later)",
      median(lock_a), median(lock_b), earlier + later, at.size(), earlier, later));
  t.notes.push_back("intervals: 95 %, cluster-robust over " + std::to_string(chunks.size()) +
                    " chunks");
  if (const std::string few = few_chunks_note(chunks.size()); !few.empty()) t.notes.push_back(few);
  return t;
}

std::unique_ptr<ChunkAnalysis> make_lens_analysis() { return std::make_unique<Lens>(); }

}  // namespace hd::analysis
