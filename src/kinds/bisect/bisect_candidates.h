// What a bisect walks: node-llama-cpp releases from the npm registry, or llama.cpp commits of a
// checkout (through scripts/bisect-git.sh, in a private clone), each with the build spec that
// makes its worker (engine/worker_build.h).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kinds/bisect/bisect.h"

namespace hd::kinds::bisect {

struct Candidate {
  std::string name;     // "3.16.2", or a commit's short hash
  std::string release;  // X.Y.Z where it is a release
  std::string commit;   // the full hash where it is a commit
  std::string subject;  // the commit's subject line
};
nlohmann::json to_json(const Candidate& c);
Candidate candidate_from_json(const nlohmann::json& j);

// X.Y.Z of npm:node-llama-cpp@X.Y.Z; "" for anything else.
std::string release_of(const std::string& spec);

// Every node-llama-cpp release the registry lists (`npm view`), oldest first. InputError, one
// line, when the registry cannot be reached.
std::vector<std::string> registry_releases();

// The releases from good to bad, both included, prereleases only where an end is one. InputError
// for a release the registry does not list, good = bad, or good newer than bad.
std::vector<Candidate> release_candidates(const std::string& good, const std::string& bad,
                                          const std::vector<std::string>& listed);

// The llama.cpp tag (bNNNN) a release carries (scripts/release-tag.sh, cached).
std::string release_tag(const std::string& release);

// A script of this checkout's scripts/ run with `args`: its last line of output ("" for none), or the error
// its last line names (InputError where the script exits 2).
std::string run_script(const std::string& script, const std::vector<std::string>& args);
// The same, every line of its standard output.
std::vector<std::string> script_lines(const std::string& script, const std::vector<std::string>& args);

// The private clone of --llama-src (made or fetched) and the commits from good to bad (each a
// revision of it, or a release whose tag it has) along bad's first-parent line.
struct CommitRange {
  std::string clone;
  std::vector<Candidate> commits;
};
CommitRange commit_candidates(const std::string& llama_src, const std::string& good,
                              const std::string& bad);

// The worker build spec of a candidate: a release's npm spec, or the clone (checked out at the
// commit by the caller), with the config's build options.
std::string build_spec(const BisectConfig& c, const Candidate& k, const std::string& clone);

}  // namespace hd::kinds::bisect
