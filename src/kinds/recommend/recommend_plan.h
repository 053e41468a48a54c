// What a recommendation will do, said before it starts (and alone with --dry-run): the passes
// it plans and about how long they take, from the time one of A's chunk passes took here.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "kinds/recommend/recommend.h"
#include "kinds/recommend/recommend_measure.h"

namespace hd::run {

struct PlanFacts {
  int n_layer = 0;
  bool reuse = true;                   // variants spliced and started at their group's first point
  bool starts_apply = false;           // the architecture's passes may start mid-graph (if proven)
  int contexts = 1, threads_each = 1;  // the variants' passes: one chunk per context at a time
  double seconds_per_chunk = 0;        // one of A's chunk passes, as measured here
  size_t calibration_chunks = 0, rank_chunks = 0, held_out_chunks = 0;
};

// The variants round 0 measures at most (a type that does not fit a group's rows, or is the
// base's own, is not measured; one that falls back is found only once made).
int planned_variants(const RecipePlan& plan, const std::vector<std::string>& types);

// "plan: 30 groups × 5 types from Q4_K_M, 2 rounds: …; about 45 s (A's chunk pass: 0.05 s)".
std::string plan_text(const RecommendConfig& c, const RecipePlan& plan, const PlanFacts& f);

struct Loaded;

// A's passes over the calibration and rank chunks, and the plan, said before anything else is
// measured (its estimate from a few of the variants' kind of passes, timed).
std::unique_ptr<Measurer> measure_a(const RecommendConfig& c, const Loaded& l,
                                    const RecipePlan& plan, const ProgressFn& progress);

}  // namespace hd::run
