#include "kinds/floor/floor_explore.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "analysis/invariance.h"
#include "engine/arm.h"
#include "engine/model.h"
#include "engine/threads.h"
#include "run/config.h"
#include "run/scoring.h"

namespace hd::run {

FloorExplorer::FloorExplorer(const FloorConfig& c, std::shared_ptr<engine::Model> model,
                             const std::vector<std::vector<int32_t>>& chunks, ProgressFn progress)
    : c_(c),
      model_(std::move(model)),
      chunks_(chunks),
      progress_(std::move(progress)),
      first_output_(first_scored_target(c.score_from, c.chunk) - 1) {
  for (int ub : c.ubatches) effective_.insert(std::min(ub, c.chunk));
  if (effective_.size() < c.ubatches.size()) {
    progress_(fmt::format("ubatches above the chunk ({}) run as one batch: {} distinct sizes",
                          c.chunk, effective_.size()));
  }
}

engine::ArmSettings FloorExplorer::settings(int ub, int threads, const std::string& fa) const {
  engine::ArmSettings s = c_.arm;
  s.flash_attn = fa;
  s.n_ubatch = std::min(ub, c_.chunk);
  // A floor's threads are a setting it measures: 0 is every CPU it may use, never fewer for
  // a busy machine (engine::default_threads).
  s.n_threads = threads > 0 ? threads : engine::allowed_cpus();
  return s;
}

engine::ArmSettings FloorExplorer::reference_settings() const {
  return settings(c_.reference_ubatch, c_.threads[0], c_.flash_attn[0]);
}

// A run's logits for every chunk, kept while the runs compared with it go.
FloorExplorer::Logits FloorExplorer::run_all(const engine::ArmSettings& s) const {
  engine::Arm arm(model_, s, c_.chunk);
  Logits out(chunks_.size());
  for (size_t k = 0; k < chunks_.size(); ++k)
    arm.run_chunk(chunks_[k], nullptr, out[k], first_output_);
  return out;
}

static bool bitwise_equal(const std::vector<std::vector<float>>& x,
                          const std::vector<std::vector<float>>& y) {
  for (size_t k = 0; k < x.size(); ++k) {
    if (std::memcmp(x[k].data(), y[k].data(), x[k].size() * sizeof(float)) != 0) return false;
  }
  return true;
}

// One run at settings `s` against `ref`, the group's run at the reference ubatch.
store::FloorRun FloorExplorer::compare(const engine::ArmSettings& s, const Logits& ref) {
  const size_t v = static_cast<size_t>(model_->info().n_vocab);
  engine::Arm arm(model_, s, c_.chunk);
  // Scored only where the rows differ: a bitwise identical row has KL 0 and no flip.
  size_t positions = 0;
  ScoreTotals differing;
  for (size_t k = 0; k < chunks_.size(); ++k) {
    arm.run_chunk(chunks_[k], nullptr, logits_, first_output_);
    const PassRows rows{ref[k], logits_, v, chunks_[k], first_output_};
    for (int p = first_output_; p < c_.chunk - 1; ++p) {
      ++positions;
      // Bitwise, not float ==: -0 and 0 differ, as a kernel's output bits do.
      if (std::memcmp(rows.row_a(p).data(), rows.row_b(p).data(), v * sizeof(float)) == 0) continue;
      score_positions(rows, p, p + 1, scratch_,
                      [&](int, const analysis::PositionScore& score) { differing.add(score); });
    }
  }
  const size_t flips = static_cast<size_t>(differing.flips);
  const double kl_sum = differing.kl_sum, kl_max = differing.kl_max;
  return {s.n_ubatch,
          s.n_threads,
          s.flash_attn,
          differing.positions == 0,
          static_cast<int64_t>(positions),
          differing.positions,
          kl_sum / static_cast<double>(positions),
          kl_max,
          static_cast<double>(flips) / static_cast<double>(positions)};
}

store::FloorGroup FloorExplorer::group(int g) {
  if (!global_ref_) global_ref_ = run_all(reference_settings());
  const std::string& fa = c_.flash_attn[static_cast<size_t>(g) / c_.threads.size()];
  const int threads = c_.threads[static_cast<size_t>(g) % c_.threads.size()];
  // Batch invariance is about the split: each thread count and flash-attention value is
  // compared with its own run at the reference ubatch, which is compared with the reference.
  const engine::ArmSettings group_s = settings(c_.reference_ubatch, threads, fa);
  const Logits group_ref = run_all(group_s);
  store::FloorGroup out{g, group_s.n_threads, fa, "", bitwise_equal(group_ref, *global_ref_), {}};
  std::vector<analysis::InvarianceRow> pattern;
  const size_t total = effective_.size() * static_cast<size_t>(groups());
  size_t done = static_cast<size_t>(g) * effective_.size();
  for (int ub : effective_) {
    out.runs.push_back(compare(settings(ub, threads, fa), group_ref));
    pattern.push_back({ub, out.runs.back().identical});
    if (++done % 16 == 0) progress_(fmt::format("{}/{} runs", done, total));
  }
  out.summary = analysis::invariance_pattern(pattern, c_.chunk);
  return out;
}

nlohmann::json FloorExplorer::header() const {
  const engine::ArmSettings ref = reference_settings();
  return {
      {"model", model_->info().description},
      {"reference",
       {{"n_ubatch", ref.n_ubatch}, {"n_threads", ref.n_threads}, {"flash_attn", ref.flash_attn}}},
      {"cache_type_k", c_.arm.cache_type_k},
      {"cache_type_v", c_.arm.cache_type_v},
      {"chunk", c_.chunk},
      {"chunks", chunks_.size()}};
}

}  // namespace hd::run
