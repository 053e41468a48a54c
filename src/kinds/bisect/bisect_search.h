// The search of `heterodyne bisect`, apart from any build: given which candidates were probed
// and how each compared with the good build, which one to probe next, or the answer. Candidates
// are ordered oldest first; 0 is the good build itself (the reference, never probed) and the
// last the bad one, probed first: a bad build that does not differ ends the search ("no
// change"), as `git bisect` would refuse a bad commit that is not bad.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hd::kinds::bisect {

enum class Outcome {
  kSame,     // the probe does not differ from the good build (by the criterion)
  kDiffers,  // it does
  kSkipped,  // it does not build or cannot run the model (git bisect skip)
};
std::string_view outcome_name(Outcome o);
std::optional<Outcome> outcome_named(std::string_view name);

struct Step {
  int probe = -1;  // the candidate to probe next; -1 when the search is over
  // When over: "no change" (the bad one does not differ), "found" (first_bad is the first that
  // differs after the last that does not), "ambiguous" (skipped candidates stand between them:
  // the first that differs is one of `suspects`).
  std::string verdict;
  int last_same = 0;   // the newest candidate known not to differ before first_bad
  int first_bad = -1;  // the oldest candidate known to differ (-1: none)
  std::vector<int> suspects;  // where ambiguous: the skipped ones and first_bad
};

// `n` candidates (at least 2), `outcomes` by candidate index. The next probe is the untested
// candidate nearest the middle of the interval still open (the older one at a tie).
Step next_step(int n, const std::map<int, Outcome>& outcomes);

// The probes a search of n candidates needs when none is skipped: the bad one, then a binary
// search of the n - 2 between: ⌈log2(n - 1)⌉ + 1 (1 for n = 2).
int probes_needed(int n);

// Release versions X.Y.Z[-pre] compared as semver orders them: <0, 0, >0. InputError for a
// string that is not a version.
int compare_versions(const std::string& a, const std::string& b);
bool is_version(const std::string& v);

}  // namespace hd::kinds::bisect
