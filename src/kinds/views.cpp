#include "kinds/views.h"

#include <filesystem>
#include <set>

#include "errors.h"
#include "kinds/registry.h"
#include "store/experiment.h"

namespace hd::kinds {
namespace {

// A stored summary or configuration that parses as JSON but not in the shape this heterodyne
// writes (a value of another type, a key missing) is a damaged file, said in one line.
template <typename F>
auto reading(const std::string& path, F&& view) {
  try {
    return view();
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path +
                     "' is damaged: its stored configuration or result is not what heterodyne "
                     "writes (a value of another type, or one missing)");
  }
}

// "diffs": the kinds whose files hold per-position rows, as a message names them.
std::string positions_kind_names() {
  std::string names;
  for (const auto& k : run_kinds()) {
    if (k->holds_positions()) names += (names.empty() ? "" : " and ") + std::string(k->name()) + "s";
  }
  return names;
}

}  // namespace

std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

report::Loaded load_positions(const std::string& path, bool position_rows) {
  if (const RunKind& kind = kind_of_file(path); !kind.holds_positions()) {
    throw InputError("'" + path + "' is a " + std::string(kind.name()) + ", not one of the " +
                     positions_kind_names() + " (show prints it alone)");
  }
  return report::load_experiment(path, position_rows);
}

Shown show_experiment(const std::string& path, const ShowRequest& request) {
  return reading(path, [&] { return kind_of_file(path).show(path, request); });
}

nlohmann::json result_document(const std::string& path) {
  return reading(path, [&] { return kind_of_file(path).document(path); });
}

nlohmann::json compare_document(const std::vector<std::string>& paths) {
  nlohmann::json runs = nlohmann::json::array();
  std::set<std::string> names;
  for (const auto& p : paths) names.insert(std::filesystem::path(p).filename().string());
  for (const auto& path : paths) {
    if (const RunKind& kind = kind_of_file(path); !kind.holds_positions())
      throw InputError("'" + path + "' is a " + std::string(kind.name()) + ": only " +
                       positions_kind_names() + " are compared (report it alone)");
    // Its file name, unless two files share it (then the path as given).
    const std::string name = names.size() == paths.size()
                                 ? std::filesystem::path(path).filename().string()
                                 : path;
    runs.push_back({{"name", name}, {"result", result_document(path)}});
  }
  return {{"kind", "compare"}, {"runs", runs}};
}

std::vector<std::string> altered_files(const nlohmann::json& doc) {
  std::vector<std::string> out;
  if (!doc.is_object()) return out;
  if (doc.contains("runs") && doc["runs"].is_array()) {
    for (const auto& run : doc["runs"]) {
      if (!run.is_object() || !run.contains("result")) continue;
      for (auto& f : altered_files(run["result"])) out.push_back(std::move(f));
    }
    return out;
  }
  // A diff's document keeps both under "summary"; every other kind's at the top.
  const nlohmann::json& facts = doc.contains("summary") && doc["summary"].is_object() ? doc["summary"] : doc;
  const auto text = [&](const char* key) {
    return facts.contains(key) && facts[key].is_string() ? facts[key].get<std::string>() : "";
  };
  if (text("integrity") == store::kIntegrityMismatch) {
    out.push_back(!text("file").empty() ? text("file") : text("path"));
  }
  return out;
}

CatalogEntry catalog_entry(const std::string& path) {
  return reading(path, [&] {
    const RunKind& kind = kind_of_file(path);
    CatalogEntry entry = kind.catalog_entry(path);
    entry.positions = kind.holds_positions();  // the page compares only these
    return entry;
  });
}

}  // namespace hd::kinds
