#include "store/experiment_kind.h"

#include "errors.h"
#include "store/experiment.h"

namespace hd::store {

std::string kind_name(const Experiment& e) {
  if (auto name = e.meta("kind")) return *name;
  throw InputError("'" + e.path() + "' names no kind of experiment: it is damaged");
}

void set_kind(Experiment& e, std::string_view name) { e.set_meta("kind", std::string(name)); }

std::string finish_hint(std::string_view kind, const std::string& path) {
  return "finish it with heterodyne " + std::string(kind) + " --resume " + path;
}

std::string finish_hint(const Experiment& e) { return finish_hint(kind_name(e), e.path()); }

}  // namespace hd::store
