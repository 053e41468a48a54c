#include "kinds/bisect/bisect_search.h"

#include <cstdlib>
#include <regex>

#include "errors.h"

namespace hd::kinds::bisect {

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kSame: return "same";
    case Outcome::kDiffers: return "differs";
    case Outcome::kSkipped: return "skipped";
  }
  return "?";
}

std::optional<Outcome> outcome_named(std::string_view name) {
  for (Outcome o : {Outcome::kSame, Outcome::kDiffers, Outcome::kSkipped}) {
    if (outcome_name(o) == name) return o;
  }
  return std::nullopt;
}

Step next_step(int n, const std::map<int, Outcome>& outcomes) {
  if (n < 2) throw RuntimeError("a bisect needs at least two candidates");
  Step s;
  const auto bad = outcomes.find(n - 1);
  if (bad == outcomes.end()) {
    s.probe = n - 1;
    return s;
  }
  if (bad->second != Outcome::kDiffers) {  // a skipped bad build is the caller's error
    s.verdict = "no change";
    return s;
  }
  // The oldest that differs, and the newest before it that does not (the good one: 0). A
  // history where the numbers change back and forth is searched like git searches it: for one
  // change between a candidate that is the same and one that differs.
  s.first_bad = n - 1;
  for (const auto& [i, o] : outcomes) {
    if (o == Outcome::kDiffers && i > 0) {
      s.first_bad = i;
      break;
    }
  }
  for (const auto& [i, o] : outcomes) {
    if (o == Outcome::kSame && i < s.first_bad) s.last_same = i;
  }
  const double middle = (s.last_same + s.first_bad) / 2.0;
  std::vector<int> skipped;
  for (int i = s.last_same + 1; i < s.first_bad; ++i) {
    const auto it = outcomes.find(i);
    if (it != outcomes.end()) {
      skipped.push_back(i);  // only skipped ones can lie between the two ends
      continue;
    }
    if (s.probe < 0 || std::abs(i - middle) < std::abs(s.probe - middle)) s.probe = i;
  }
  if (s.probe >= 0) return s;
  if (skipped.empty()) {
    s.verdict = "found";
  } else {
    s.verdict = "ambiguous";
    s.suspects = skipped;
    s.suspects.push_back(s.first_bad);
  }
  return s;
}

int probes_needed(int n) {
  int steps = 0;
  while ((1 << steps) < n - 1) ++steps;
  return steps + 1;
}

namespace {
struct Version {
  long major = 0, minor = 0, patch = 0;
  std::string pre;  // "" for a release
};

std::optional<Version> parse(const std::string& v) {
  static const std::regex form(R"(([0-9]{1,9})\.([0-9]{1,9})\.([0-9]{1,9})(?:-([0-9A-Za-z.-]+))?)");
  std::smatch m;
  if (!std::regex_match(v, m, form)) return std::nullopt;
  return Version{std::stol(m[1]), std::stol(m[2]), std::stol(m[3]), m[4]};
}

// Semver's prerelease order: dot-separated fields, numeric ones numerically and below others.
int compare_pre(const std::string& a, const std::string& b) {
  if (a == b) return 0;
  if (a.empty()) return 1;  // a release is above its prereleases
  if (b.empty()) return -1;
  size_t i = 0, j = 0;
  while (i <= a.size() && j <= b.size()) {
    const size_t ei = std::min(a.find('.', i), a.size()), ej = std::min(b.find('.', j), b.size());
    const std::string x = a.substr(i, ei - i), y = b.substr(j, ej - j);
    const bool nx = !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
    const bool ny = !y.empty() && y.find_first_not_of("0123456789") == std::string::npos;
    int c = 0;
    if (nx && ny) {
      c = x.size() != y.size() ? (x.size() < y.size() ? -1 : 1) : x.compare(y);
    } else if (nx != ny) {
      c = nx ? -1 : 1;
    } else {
      c = x.compare(y);
    }
    if (c != 0) return c < 0 ? -1 : 1;
    i = ei + 1;
    j = ej + 1;
    if (i > a.size() || j > b.size()) return i > a.size() && j > b.size() ? 0 : (i > a.size() ? -1 : 1);
  }
  return 0;
}
}  // namespace

bool is_version(const std::string& v) { return parse(v).has_value(); }

int compare_versions(const std::string& a, const std::string& b) {
  const auto x = parse(a), y = parse(b);
  if (!x || !y) throw InputError("'" + (x ? b : a) + "' is not a release version X.Y.Z");
  for (auto [p, q] : {std::pair{x->major, y->major}, {x->minor, y->minor}, {x->patch, y->patch}}) {
    if (p != q) return p < q ? -1 : 1;
  }
  return compare_pre(x->pre, y->pre);
}

}  // namespace hd::kinds::bisect
