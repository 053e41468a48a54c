#include "kinds/recommend/recommend_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "engine/threads.h"
#include "kinds/recommend/recommend_inputs.h"
#include "kinds/recommend/recommend_passes.h"
#include "run/prefix.h"

namespace hd::run {

int planned_variants(const RecipePlan& plan, const std::vector<std::string>& types) {
  const Start base = start_at(plan, plan.base_types);
  int n = 0;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    for (size_t t = 0; t < types.size(); ++t)
      n += plan.bytes[g][t] > 0 && base.label[g] != types[t];
  }
  return n;
}

// The share of a full pass a variant of `tensors` computes when it starts at its first point:
// the graph after it, counting each attention, each MLP and the head as one part alike.
static double share_computed(const std::vector<std::string>& tensors, int n_layer) {
  const int k = first_changed_point(tensors, n_layer);
  return static_cast<double>(2 * n_layer + 1 - k) / (2 * n_layer + 1);
}

std::string plan_text(const RecommendConfig& c, const RecipePlan& plan, const PlanFacts& f) {
  const int variants = planned_variants(plan, c.types);
  double share = 0;  // over round 0's variants: the average share of a pass each computes
  int counted = 0;
  const Start base = start_at(plan, plan.base_types);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    for (size_t t = 0; t < c.types.size(); ++t) {
      if (plan.bytes[g][t] == 0 || base.label[g] == c.types[t]) continue;
      share += f.reuse && f.starts_apply ? share_computed(plan.groups[g].tensors, f.n_layer) : 1.0;
      ++counted;
    }
  }
  share = counted > 0 ? share / counted : 1.0;
  const double calibration = static_cast<double>(f.calibration_chunks);
  const double round0 = calibration + static_cast<double>(f.rank_chunks);
  const double later = calibration * (c.rounds - 1);
  // Each round's start (round 0's on both texts), and the proof: the recipe and two stock types
  // diffed on the held-out text with both floors (a floor costs about two of the diff's passes
  // a chunk).
  const double passes = variants * share * (round0 + later) + round0 + later +
                        3.0 * static_cast<double>(f.held_out_chunks) * 3.0;
  std::string how = !f.reuse         ? "every variant quantized whole, every pass from the tokens "
                                       "(--no-reuse)"
                    : f.starts_apply ? fmt::format(
                                           "variants spliced from one file per type; "
                                           "a pass starts at its group's first layer "
                                           "where proven: {:.0f} % of a pass on average",
                                           100 * share)
                                     : "variants spliced from one file per type; every pass "
                                       "from the tokens (this architecture's passes do not "
                                       "start mid-graph)";
  return fmt::format(
      "plan: {} groups × {} types from {}, {} round{}: round 0 measures up to {} variants on {} "
      "calibration + {} held-out chunks (the rank check), each later round up to {} on {}; {}; "
      "{} context{} of {} thread{} each. About {:.0f} s (A's chunk pass took {:.3f} s here; the "
      "type files' quantization not counted)",
      plan.groups.size(), c.types.size(), c.base, c.rounds, c.rounds == 1 ? "" : "s", variants,
      f.calibration_chunks, f.rank_chunks, variants, f.calibration_chunks, how, f.contexts,
      f.contexts == 1 ? "" : "s", f.threads_each, f.threads_each == 1 ? "" : "s",
      passes * f.seconds_per_chunk, f.seconds_per_chunk);
}

// The facts the plan reads of a run's inputs; A's chunk pass timed elsewhere.
static PlanFacts plan_facts(const RecommendConfig& c, const Loaded& l, double seconds_per_chunk) {
  PlanFacts f;
  f.n_layer = l.model->info().n_layer;
  f.reuse = c.reuse;
  // Starts where the architecture allows them and the start's rows fit in memory.
  f.starts_apply = prefix_reuse_applies(l.model->info().architecture) &&
                   start_row_bytes(l.calibration_chunks.size(), c.chunk, l.model->info().n_embd,
                                   f.n_layer) <= kMaxStartRowBytes;
  const int threads = engine::default_threads();
  f.contexts =
      std::max<int>(1, std::min<int>(threads, static_cast<int>(l.calibration_chunks.size())));
  f.threads_each = std::max(1, threads / f.contexts);
  f.seconds_per_chunk = seconds_per_chunk;
  f.calibration_chunks = l.calibration_chunks.size();
  f.rank_chunks = l.rank_chunks.size();
  f.held_out_chunks = l.held_out_chunks.size();
  return f;
}

// A's passes over the calibration and rank chunks, timed for the plan, which is said first.
std::unique_ptr<Measurer> measure_a(const RecommendConfig& c, const Loaded& l,
                                    const RecipePlan& plan, const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  ScoredText calibration = Measurer::score_a(l.model, c.chunk, l.calibration_chunks);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress(
      plan_text(c, plan, plan_facts(c, l, s / static_cast<double>(l.calibration_chunks.size()))));
  return std::make_unique<Measurer>(l.model, c.chunk, std::move(calibration),
                                    Measurer::score_a(l.model, c.chunk, l.rank_chunks), c.reuse);
}

void recommend_dry_run(RecommendConfig c, std::ostream& out, const ProgressFn& progress) {
  check_config(c);
  resolve_target(c);
  const Loaded l = load_inputs(c, nullptr, progress);
  const RecipePlan plan = plan_recipe(c.model, c.base, c.types, c.layers_per_group, 0);
  check_target_fits(c, plan);
  // A's passes on a few chunks, timed as a run times them all.
  const size_t n = std::min<size_t>(l.calibration_chunks.size(), 3);
  const auto t0 = std::chrono::steady_clock::now();
  (void)Measurer::score_a(
      l.model, c.chunk,
      {l.calibration_chunks.begin(), l.calibration_chunks.begin() + static_cast<ptrdiff_t>(n)});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out << plan_text(c, plan, plan_facts(c, l, s / static_cast<double>(n))) << "\n";
}

}  // namespace hd::run
