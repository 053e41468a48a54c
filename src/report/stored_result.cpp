#include "report/stored_result.h"

#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::report {

LoadedResult load_result(const std::string& path, const std::string& kind, AddRows add_rows) {
  const store::Experiment e = store::Experiment::open(path, false);
  LoadedResult l;
  l.path = path;
  l.kind = kind;
  l.status = e.meta("status").value_or("unknown");
  l.integrity = e.integrity_verdict();
  const auto result = e.meta(kind);
  if (!result) {
    throw InputError("'" + path + "' is an unfinished " + kind + " (" +
                     store::finish_hint(store::kind_of(e), path) + ")");
  }
  try {
    l.result = nlohmann::json::parse(*result);
    l.provenance = nlohmann::json::parse(e.meta("provenance").value_or("{}"));
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path + "' is damaged: its stored " + kind + " is not valid JSON");
  }
  if (!l.result.is_object())
    throw InputError("'" + path + "' is damaged: its " + kind + " is not an object");
  if (add_rows) add_rows(e, l.result);
  return l;
}

nlohmann::json result_json(const LoadedResult& l) {
  return {{l.kind, l.result},
          {"kind", l.kind},
          {"path", l.path},
          {"status", l.status},
          {"integrity", l.integrity}};
}

}  // namespace hd::report
