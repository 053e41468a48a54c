#include "report/reference_view.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/input_file.h"
#include "errors.h"
#include "report/gate.h"

namespace hd::report {
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const std::string& path, const std::string& what) {
  require_regular_file(path, what);
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + what + " '" + path + "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw InputError(what + " '" + path + "' is not valid JSON");
  }
}

// The manifest's taps, each with its tolerance row from tolerances.json (by name).
nlohmann::json taps_with_tolerances(const nlohmann::json& manifest, const nlohmann::json& tol) {
  std::map<std::string, nlohmann::json> by_name;
  if (tol.is_object())
    for (const auto& t : tol.at("taps")) by_name[t.at("name").get<std::string>()] = t;
  nlohmann::json taps = nlohmann::json::array();
  for (const auto& t : manifest.at("taps")) {
    nlohmann::json row = {{"name", t.at("name")},
                          {"step", t.value("step", nlohmann::json())},
                          {"shape", t.value("shape", nlohmann::json::array())}};
    if (const auto it = by_name.find(row["name"].get<std::string>()); it != by_name.end()) {
      for (const char* key : {"atol", "derived_from", "max_observed", "ref_abs_max"})
        row[key] = it->second.at(key);
    }
    taps.push_back(row);
  }
  return taps;
}

// A check's taps must be the reference's, by name: another reference's result would be drawn
// against the wrong tolerances.
void require_same_taps(const nlohmann::json& taps, const nlohmann::json& check,
                       const std::string& check_path) {
  std::map<std::string, bool> known;
  for (const auto& t : taps) known[t["name"].get<std::string>()] = true;
  for (const auto& t : check.at("taps")) {
    if (!known.count(t.at("name").get<std::string>()))
      throw InputError("'" + check_path + "' checks tap " + t.at("name").get<std::string>() +
                       ", which this reference does not hold: a check of another reference?");
  }
}

}  // namespace

bool is_reference_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / "manifest.json", ec);
}

nlohmann::json reference_document(const std::string& dir, const std::string& check_path) {
  const nlohmann::json manifest = read_json((fs::path(dir) / "manifest.json").string(),
                                            "the reference's manifest");
  const std::string tol_path = (fs::path(dir) / "tolerances.json").string();
  std::error_code ec;
  const nlohmann::json tol = fs::exists(tol_path, ec)
                                 ? read_json(tol_path, "the reference's tolerances")
                                 : nlohmann::json();
  try {
    nlohmann::json ref = {{"model", manifest.at("model")},
                          {"settings", manifest.at("settings")},
                          {"text", manifest.at("text")},
                          {"n_tokens", manifest.at("tokens").size()},
                          {"decode_steps", manifest.at("decode").at("steps")},
                          {"taps", taps_with_tolerances(manifest, tol)},
                          {"calibration", nullptr},
                          {"check", nullptr}};
    if (tol.is_object()) {
      ref["calibration"] = {{"safety", tol.at("safety")},
                            {"jitter_floor", tol.at("jitter_floor")},
                            {"runs", tol.at("runs")},
                            {"all_bitwise_identical", tol.at("all_bitwise_identical")},
                            {"note", tol.value("note", "")}};
    }
    std::ostringstream text;
    text << "reference " << dir << ": " << manifest.at("model").at("path").get<std::string>()
         << ", " << ref["n_tokens"].get<size_t>() << " tokens, "
         << ref["decode_steps"].get<int>() << " decode steps, " << ref["taps"].size()
         << " taps; " << (tol.is_object() ? "calibrated" : "not calibrated (no tolerances.json)")
         << "\n";
    if (!check_path.empty()) {
      const nlohmann::json check = read_json(check_path, "the check result");
      require_same_taps(ref["taps"], check, check_path);
      ref["check"] = check;
      ref["check_file"] = check_path;
      text << "\ncheck " << check_path << ":\n";
      print_check(text, check, true);
    }
    return {{"kind", "reference"},
            {"path", dir},
            {"status", tol.is_object() ? "calibrated" : "not calibrated"},
            {"integrity", "not sealed"},
            {"text", text.str()},
            {"text_title", check_path.empty() ? "In one line" : "As heterodyne check prints it"},
            {"reference", ref}};
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + dir + "' is damaged: its manifest, tolerances or the check result " +
                     "is not what heterodyne writes");
  }
}

}  // namespace hd::report
