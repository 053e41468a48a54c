#include "kinds/bisect/bisect_state.h"

#include <fmt/format.h>

#include "errors.h"
#include "kinds/bisect/bisect_probe.h"
#include "store/experiment.h"

namespace hd::kinds::bisect {

std::map<int, Outcome> State::outcomes() const {
  std::map<int, Outcome> out;
  const int n = static_cast<int>(candidates.size());
  for (const auto& p : probes) {
    const auto o = outcome_named(p.value("outcome", ""));
    const int i = p.value("candidate", -1);
    if (!o || i < 1 || i >= n || out.count(i))
      throw InputError("the bisect's stored probes are damaged (a probe of no candidate, twice, "
                       "or with no outcome)");
    out[i] = *o;
  }
  return out;
}

nlohmann::json to_json(const std::vector<Candidate>& candidates) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : candidates) out.push_back(to_json(k));
  return out;
}

State stored_state(const store::Experiment& e) {
  State s;
  s.config = bisect_config_from_json(nlohmann::json::parse(e.stored_config()));
  for (const auto& k : nlohmann::json::parse(e.required_meta("bisect_candidates")))
    s.candidates.push_back(candidate_from_json(k));
  if (s.candidates.size() < 2)
    throw InputError("'" + e.path() + "' is damaged: it lists fewer than two candidates");
  s.probes = nlohmann::json::parse(e.meta("bisect_probes").value_or("[]"));
  if (!s.config.llama_src.empty()) s.clone = run_script("bisect-git.sh", {"clone", s.config.llama_src});
  return s;
}

State new_state(const BisectConfig& c, const ProgressFn& progress) {
  State s;
  s.config = c;
  if (!c.llama_src.empty()) {
    CommitRange r = commit_candidates(c.llama_src, c.good, c.bad);
    s.clone = std::move(r.clone);
    s.candidates = std::move(r.commits);
  } else {
    const std::vector<std::string> listed = registry_releases();
    s.candidates = release_candidates(release_of(c.good), release_of(c.bad), listed);
  }
  progress(fmt::format("{} candidates from {} to {}: at most {} probes when none is skipped",
                       s.candidates.size(), s.candidates.front().name, s.candidates.back().name,
                       probes_needed(static_cast<int>(s.candidates.size()))));
  return s;
}

namespace {
nlohmann::json candidate_at(const State& s, int i) {
  if (i < 0) return nullptr;
  nlohmann::json j = to_json(s.candidates.at(static_cast<size_t>(i)));
  j["index"] = i;
  return j;
}
}  // namespace

nlohmann::json bisect_document(const State& s, const nlohmann::json& op) {
  const int n = static_cast<int>(s.candidates.size());
  const Step end = next_step(n, s.outcomes());
  nlohmann::json doc = {
      {"mode", s.commits() ? "commits" : "releases"},
      {"model", s.config.arm.model},
      {"good", s.config.good},
      {"bad", s.config.bad},
      {"criterion", s.config.criterion},
      {"criterion_text", criterion_text(s.config.criterion)},
      {"candidates", to_json(s.candidates)},
      {"probes", s.probes},
      {"probes_needed", probes_needed(n)},
      {"verdict", end.verdict},
      {"last_same", candidate_at(s, end.last_same)},
      {"first_bad", end.verdict == "no change" ? nlohmann::json(nullptr) : candidate_at(s, end.first_bad)},
      {"suspects", end.suspects},
      {"op", op},
  };
  // The commits a user reads next: those from the last that is the same to the first that
  // differs (their subjects say what changed).
  if (s.commits() && end.verdict != "no change") {
    nlohmann::json range = nlohmann::json::array();
    for (int i = end.last_same + 1; i <= end.first_bad; ++i) range.push_back(candidate_at(s, i));
    doc["range"] = range;
  }
  return doc;
}

}  // namespace hd::kinds::bisect
