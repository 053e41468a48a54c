// A bisect as it goes: its candidates, the clone they are built from (commits), the probes so far
// and the good build's worker. Shared by run, resume and verify (kinds/bisect/bisect.cpp,
// bisect_verify.cpp); the document show prints is made from it (bisect_document).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kinds/bisect/bisect.h"
#include "kinds/bisect/bisect_candidates.h"
#include "kinds/bisect/bisect_search.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds::bisect {

struct State {
  BisectConfig config;
  std::vector<Candidate> candidates;  // oldest first: [0] the good build, back() the bad one
  std::string clone;                  // commits: the private clone of --llama-src
  nlohmann::json probes = nlohmann::json::array();  // in the order they ran

  std::map<int, Outcome> outcomes() const;
  bool commits() const { return !clone.empty(); }
};

// The candidates as meta "bisect_candidates" and the document hold them.
nlohmann::json to_json(const std::vector<Candidate>& candidates);

// A stored bisect as it stands (resume and verify): its config, candidates, the probes stored
// so far and, for commits, the clone fetched again. InputError for a damaged file.
State stored_state(const store::Experiment& e);

// The candidates of a new bisect, found from its config (registry or --llama-src).
State new_state(const BisectConfig& c, const ProgressFn& progress);

// meta "bisect": {mode, criterion, criterion_text, candidates, probes, verdict, last_same,
// first_bad, suspects, range (commits between the two, with subjects), op (bisect_op.h)}.
nlohmann::json bisect_document(const State& s, const nlohmann::json& op);

}  // namespace hd::kinds::bisect
