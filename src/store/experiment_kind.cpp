#include "store/experiment_kind.h"

#include "errors.h"
#include "store/experiment.h"

namespace hd::store {

namespace {
constexpr std::array<KindInfo, kKindCount> kKinds = {{
    {Kind::kDiff, "diff", "diff"},
    {Kind::kSweep, "sweep", "sweep"},
    {Kind::kFloor, "floor", "floor"},
    {Kind::kRecommend, "recommend", "recommend"},
}};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kKinds.size(); ++i) {
    if (static_cast<size_t>(kKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kKinds is indexed by Kind");
}  // namespace

const std::array<KindInfo, kKindCount>& experiment_kinds() { return kKinds; }

const KindInfo& kind_info(Kind k) { return experiment_kinds()[static_cast<size_t>(k)]; }

Kind kind_of(const Experiment& e) {
  const std::string name = e.meta("kind").value_or("diff");
  for (const KindInfo& k : experiment_kinds()) {
    if (k.name == name) return k.kind;
  }
  throw InputError("'" + e.path() + "' holds an experiment of kind '" + name +
                   "', which this heterodyne does not know (a newer version wrote it?)");
}

void set_kind(Experiment& e, Kind k) { e.set_meta("kind", std::string(kind_info(k).name)); }

void require_kind(const Experiment& e, Kind k) {
  if (const Kind is = kind_of(e); is != k) {
    throw InputError("'" + e.path() + "' is a " + std::string(kind_info(is).name) + ", not a " +
                     std::string(kind_info(k).name));
  }
}

std::string finish_hint(Kind k, const std::string& path) {
  return "finish it with heterodyne " + std::string(kind_info(k).command) + " --resume " + path;
}

}  // namespace hd::store
