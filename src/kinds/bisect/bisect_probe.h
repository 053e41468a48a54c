// One probe of a bisect: the candidate's worker built (cached), then a normal diff of the good
// build (arm A) against it (arm B), of which the figures are kept with the floors they are read
// against, and whether it differs by the bisect's criterion.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "common/progress.h"
#include "kinds/bisect/bisect.h"
#include "kinds/bisect/bisect_candidates.h"
#include "kinds/bisect/bisect_search.h"

namespace hd::kinds::bisect {

// A candidate's worker: its path, or why it could not be built (`error`, with `path` empty).
struct Built {
  std::string worker;
  std::string error;
  double seconds = 0;
};
// In a clone (commit candidates) the work tree is checked out at the commit first, the clone
// locked until the worker is built.
Built build_candidate(const BisectConfig& c, const Candidate& k, const std::string& clone,
                      const ProgressFn& progress);

// The criteria, as --criterion names them, and what each says "differs" means.
const std::vector<std::string>& criteria();
std::string criterion_text(const std::string& criterion);

// A diff's figures as a probe keeps them (from its show --json document): kl_mean, kl_ci95,
// bitwise_identical, flips, n_scored, top1_change (rate and interval), floor_kl_mean,
// floor_kl_ci95, floor_bitwise, floor_a, floor_b (each arm against itself re-split: their KL
// means), standing (the diff's own statements against the floor) and ppl_a, ppl_b.
nlohmann::json probe_figures(const nlohmann::json& diff_document);

// Whether figures differ from the good build by `criterion`.
bool differs(const nlohmann::json& figures, const std::string& criterion);

// The diff of good_worker (A) against probe_worker (B) on the config's model and text, in a
// temporary file removed after: its figures. InputError/RuntimeError from the diff (a model the
// build cannot load, say) pass through.
nlohmann::json diff_builds(const BisectConfig& c, const std::string& good_worker,
                           const std::string& probe_worker);

}  // namespace hd::kinds::bisect
