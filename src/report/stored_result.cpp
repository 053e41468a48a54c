#include "report/stored_result.h"

#include "errors.h"
#include "store/experiment.h"
#include "store/floor_rows.h"

namespace hd::report {

std::string experiment_kind(const std::string& path) {
  const store::Experiment e = store::Experiment::open(path, false);
  return e.meta("kind").value_or("diff");
}

LoadedResult load_result(const std::string& path, const std::string& kind) {
  const store::Experiment e = store::Experiment::open(path, false);
  LoadedResult l;
  l.path = path;
  l.kind = kind;
  l.status = e.meta("status").value_or("unknown");
  const auto sealed = e.meta("integrity_sha256");
  l.integrity = !sealed ? "not sealed" : *sealed == e.compute_integrity() ? "ok" : "MISMATCH";
  const auto result = e.meta(kind);
  if (!result) {
    throw InputError("'" + path + "' is an unfinished " + kind +
                     (kind == "sweep" || kind == "floor"
                          ? " (finish it with heterodyne " + kind + " --resume " + path + ")"
                          : " (run it again)"));
  }
  try {
    l.result = nlohmann::json::parse(*result);
    l.provenance = nlohmann::json::parse(e.meta("provenance").value_or("{}"));
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path + "' is damaged: its stored " + kind + " is not valid JSON");
  }
  if (!l.result.is_object()) throw InputError("'" + path + "' is damaged: its " + kind + " is not an object");
  // A floor keeps its rows in tables (store/floor_rows.h); files from before, in this JSON.
  if (kind == "floor" && !l.result.contains("rows"))
    l.result.update(store::floor_groups_json(store::read_floor_groups(e)));
  return l;
}

nlohmann::json result_json(const LoadedResult& l) {
  return {{l.kind, l.result}, {"path", l.path}, {"status", l.status}, {"integrity", l.integrity}};
}

}  // namespace hd::report
