// The default diff's chunk (no analyses, transplants or saved residuals) with one llama.cpp
// context alive at a time, which matters where contexts and logits are large beside the weights
// (a 3B model of a 128k vocabulary at chunks of 512: 570 MiB a context, 250 MiB of logits, 170
// MiB of residual rows): A; A's logits copied, its residual rows kept; A′ in A's context, each
// piece compared with the copy as its llama_decode writes it, each residual row with A's as
// llama.cpp computes it; A's context freed; B against the copy, each of A's rows compared and
// then overwritten by B's; B's logits copied over A's; B′ in B's context against them; B's
// context freed. One context, one copy of logits and one set of rows, where the two-context
// order holds two contexts, one copy (the floor's) and three sets. The same rows as Session::compare's, bit for bit
// (tests/test_lean_pass.cpp): both go through run/comparison.h.
#include <algorithm>

#include "engine/server_schedule.h"
#include "run/comparison.h"
#include "run/session.h"

namespace hd::run {

using analysis::Comparison;

// An arm this process computes with plain slots: its context can be freed and made again.
static bool plain_local(const engine::ArmSettings& s) {
  return !engine::runs_in_worker(s) && !engine::is_server_arm(s);
}

bool Session::lean_applies(bool floor_here) const {
  if (config_.two_contexts || config_.save_residuals || !analyses_.empty() || !points_.empty())
    return false;
  if (!plain_local(config_.a) || !plain_local(config_.b)) return false;
  // Each floor arm splits in its own arm's context (a floor of its own context gains nothing).
  return !floor_here || (floors_.a().host != nullptr && floors_.b().host != nullptr);
}

engine::Hook Session::watch_residuals(RowFn each) const {
  engine::Hook h;
  engine::tell_rows(map_, h);
  for (int l = 0; l < map_.n_layer && map_.residuals(); ++l) {
    h.watch(residual_name(l), [each, l](int64_t pos, std::span<const float> rows, int64_t width) {
      const auto w = static_cast<size_t>(width);
      for (size_t r = 0; r * w < rows.size(); ++r) {
        each(l, static_cast<int>(pos) + static_cast<int>(r), rows.subspan(r * w, w));
      }
    });
  }
  return h;
}

// The kept row of layer l at position p; made to the width the pass shows.
static std::span<float> kept_row(std::vector<std::vector<float>>& rows, int l, int p, int n,
                                 size_t width) {
  auto& layer = rows[static_cast<size_t>(l)];
  if (layer.size() != static_cast<size_t>(n) * width) layer.resize(static_cast<size_t>(n) * width);
  return {layer.data() + static_cast<size_t>(p) * width, width};
}

// Layer-major, position-minor: Session::compare's order (the pieces come position-major).
static void in_layer_order(Comparison& c) {
  std::sort(c.layers.begin(), c.layers.end(), [](const auto& x, const auto& y) {
    return x.layer != y.layer ? x.layer < y.layer : x.pos < y.pos;
  });
}

Comparison Session::lean_floor(engine::Arm& arm, int ubatch, std::span<const int32_t> tokens,
                               int first_output) {
  const int n = static_cast<int>(tokens.size());
  const size_t v = static_cast<size_t>(arm.model_info().n_vocab);
  const std::string& model = arm.settings().model;  // the floor's arm is its own arm
  Comparison c;
  c.positions.resize(static_cast<size_t>(n - 1 - first_output));
  engine::Hook hook = watch_residuals([&](int l, int p, std::span<const float> row) {
    const auto kept = kept_row(lean_rows_, l, p, n, row.size());
    c.layers.push_back({l, p, analysis::residual_diff(kept, row)});
  });
  const int first_target = first_scored_target(config_.score_from, n);
  arm.run_pieces(tokens, ubatch, &hook, first_output,
                 [&](int32_t pos, std::span<const float> rows) {
                   const int to = std::min(pos + static_cast<int>(rows.size() / v), n - 1);
                   if (pos >= to) return;
                   const std::span<const float> kept =
                       std::span<const float>(lean_logits_)
                           .subspan(static_cast<size_t>(pos - first_output) * v);
                   score_into(c, {kept, rows, v, tokens, pos}, pos, to, first_output, first_target,
                              arm.n_threads());
                 });
  in_layer_order(c);
  check_rows_finite(c, model, model);
  return c;
}

void Session::compute_lean(analysis::ChunkResult& r, bool floor_here,
                           std::span<const int32_t> tokens, int first_output) {
  const int n = static_cast<int>(tokens.size());
  const size_t v = static_cast<size_t>(a_.arm->model_info().n_vocab);
  lean_rows_.resize(static_cast<size_t>(map_.n_layer));
  b_.arm->release_context();  // from the session's start, or a pass that kept it

  engine::Hook keep_a = watch_residuals([&](int l, int p, std::span<const float> row) {
    const auto kept = kept_row(lean_rows_, l, p, n, row.size());
    std::copy(row.begin(), row.end(), kept.begin());
  });
  a_.arm->run_chunk(tokens, &keep_a, lean_logits_, first_output);
  if (floor_here) r.floor = lean_floor(*a_.arm, floors_.a().split, tokens, first_output);
  a_.arm->release_context();

  const std::string& model_a = a_.arm->settings().model;
  const std::string& model_b = b_.arm->settings().model;
  r.diff.positions.resize(static_cast<size_t>(n - 1 - first_output));
  engine::Hook against_a = watch_residuals([&](int l, int p, std::span<const float> row) {
    const auto kept = kept_row(lean_rows_, l, p, n, row.size());
    r.diff.layers.push_back({l, p, analysis::residual_diff(kept, row)});
    std::copy(row.begin(), row.end(), kept.begin());  // B's rows, for B's floor
  });
  const std::span<const float> b = b_.arm->run_chunk_view(tokens, &against_a, first_output);
  score_into(r.diff, {lean_logits_, b, v, tokens, first_output}, first_output, n - 1, first_output,
             first_scored_target(config_.score_from, n), a_.arm->n_threads());
  in_layer_order(r.diff);
  check_rows_finite(r.diff, model_a, model_b);
  if (floor_here) {
    std::copy(b.begin(), b.end(), lean_logits_.begin());
    r.floor_b = lean_floor(*b_.arm, floors_.b().split, tokens, first_output);
  }
  b_.arm->release_context();
  ++lean_chunks_;
}

}  // namespace hd::run
