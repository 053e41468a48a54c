#include "report/stored_result.h"

#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::report {

nlohmann::json stored_object(const store::Experiment& e, const std::string& key,
                             const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw InputError("'" + e.path() + "' is damaged: its stored " + key + " is not valid JSON");
  if (!j.is_object()) {
    const std::string type = j.type_name();
    const std::string what = type == "null" ? "null" : (type == "array" ? "an " : "a ") + type;
    throw InputError("'" + e.path() + "' is damaged: its stored " + key + " is " + what +
                     ", not a JSON object");
  }
  return j;
}

LoadedResult load_result(const std::string& path, const std::string& kind, AddRows add_rows) {
  const store::Experiment e = store::Experiment::open(path, false);
  LoadedResult l;
  l.path = path;
  l.kind = kind;
  l.status = e.live_status();
  l.integrity = e.integrity_verdict();
  const auto result = e.meta(kind);
  if (!result) {
    throw InputError("'" + path + "' is an unfinished " + kind + " (" +
                     store::finish_hint(e) + ")");
  }
  l.result = stored_object(e, kind, *result);
  l.provenance = stored_object(e, "provenance", e.meta("provenance").value_or("{}"));
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
