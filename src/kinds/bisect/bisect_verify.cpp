// bisect --dry-run (the plan) and verify (every probe again).
#include <fmt/format.h>

#include <ostream>

#include "errors.h"
#include "kinds/bisect/bisect.h"
#include "kinds/bisect/bisect_op.h"
#include "kinds/bisect/bisect_print.h"
#include "kinds/bisect/bisect_probe.h"
#include "kinds/bisect/bisect_state.h"
#include "store/experiment.h"

namespace hd::kinds {

void bisect_plan(const BisectConfig& c, std::ostream& out, const ProgressFn& progress) {
  check_bisect_config(c);
  const bisect::State s = bisect::new_state(c, progress);
  const int n = static_cast<int>(s.candidates.size());
  out << fmt::format("{} candidates, oldest first ({} the good build, every probe's arm A):\n", n,
                     s.candidates.front().name);
  for (int i = 0; i < n; ++i) {
    const auto& k = s.candidates[static_cast<size_t>(i)];
    std::string what = k.subject;
    if (!k.release.empty()) {
      progress("finding the llama.cpp tag node-llama-cpp@" + k.release + " carries");
      what = "llama.cpp " + bisect::release_tag(k.release);
    }
    out << fmt::format("  {:>4}  {:<14} {}\n", i, k.name, bisect::printable(what));
  }
  const bisect::Step first = bisect::next_step(n, {});
  std::map<int, bisect::Outcome> differs = {{n - 1, bisect::Outcome::kDiffers}};
  const bisect::Step second = bisect::next_step(n, differs);
  out << fmt::format("probe 1: {} (does the bad build differ at all? if not: no change)\n",
                     s.candidates[static_cast<size_t>(first.probe)].name);
  if (second.probe >= 0) {
    out << fmt::format("probe 2: {}, then the middle of the half the change lies in\n",
                       s.candidates[static_cast<size_t>(second.probe)].name);
  }
  out << fmt::format("at most {} probes when none is skipped, each a build (minutes, cached) and "
                     "a diff; criterion {}: {}\n",
                     bisect::probes_needed(n), c.criterion, bisect::criterion_text(c.criterion));
}

void bisect_verify(const std::string& path, const run::VerifyOptions& options,
                   const ProgressFn& progress) {
  (void)options;  // the input is a file every probe reads by its stored path
  const store::Experiment e = store::Experiment::open(path, false);
  const nlohmann::json doc = nlohmann::json::parse(e.required_meta(std::string(kBisectKind)));
  const bisect::State s = bisect::stored_state(e);
  const auto build = [&](size_t i) {
    const bisect::Built b = bisect::build_candidate(s.config, s.candidates.at(i), s.clone, progress);
    if (!b.error.empty()) throw RuntimeError("verify failed: " + s.candidates[i].name + " " + b.error);
    return b.worker;
  };
  const std::string good = build(0);
  for (const auto& p : s.probes) {
    if (!p.contains("figures")) continue;  // a skipped probe: nothing was measured
    const auto i = p.at("candidate").get<size_t>();
    const nlohmann::json again = bisect::diff_builds(s.config, good, build(i));
    if (again.dump() != p["figures"].dump()) {
      throw RuntimeError("verify failed: the probe of " + s.candidates.at(i).name +
                         " gives other figures: " + again.dump() + " (stored " + p["figures"].dump() + ")");
    }
    progress(s.candidates[i].name + ": identical");
  }
  if (!doc.at("op").is_null()) {
    const auto i = doc.at("first_bad").at("index").get<size_t>();
    const nlohmann::json op = bisect::first_divergence(s.config, good, build(i), progress);
    if (op.dump() != doc["op"].dump())
      throw RuntimeError("verify failed: the first divergence is another: " + op.dump());
  }
  if (bisect::bisect_document(s, doc.at("op")).dump() != doc.dump())
    throw RuntimeError("verify failed: the stored verdict does not follow from the probes");
  progress(Progress::result(fmt::format("verify: all {} probes reproduce bitwise", s.probes.size())));
}

}  // namespace hd::kinds
