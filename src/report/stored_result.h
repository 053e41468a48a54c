// Experiments that are not diffs (a sweep, a floor exploration) keep one summary in their
// meta table, written when the run finishes; show prints it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hd::store {
class Experiment;
}

namespace hd::report {

struct LoadedResult {
  std::string path, kind, status, integrity;  // integrity: "ok", "MISMATCH", "not sealed"
  nlohmann::json result;                      // the stored summary ("sweep" or "floor" meta)
  nlohmann::json provenance;
};


// A meta value of `e` (`key`: config, provenance, a kind's result) read as the JSON object every
// writer stores; InputError naming the key and what it holds instead (not JSON, null, a list).
nlohmann::json stored_object(const store::Experiment& e, const std::string& key,
                             const std::string& text);

// Adds to a stored summary the rows its kind keeps in tables (a floor's), or nothing.
using AddRows = void (*)(const store::Experiment& e, nlohmann::json& result);

// InputError when the run never finished (its summary is written at the end).
LoadedResult load_result(const std::string& path, const std::string& kind,
                         AddRows add_rows = nullptr);

// {<kind>: {...summary...}, kind, path, status, integrity}
nlohmann::json result_json(const LoadedResult& l);

}  // namespace hd::report
