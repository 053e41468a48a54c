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

// print_check reads the result with operator[] (report/gate.h: the JSON check returns): a file that
// is not one (a tolerances.json, an edited result) is refused here, whole, before it is read.
void require_check_shape(const nlohmann::json& c, const std::string& path) {
  const auto bad = [&](const std::string& what) {
    throw InputError("'" + path + "' is not a result of `heterodyne check --json-out` (" + what + ")");
  };
  // A number, or as check writes one it is not (common/json_number.h): "inf", or null for NaN.
  const auto number = [](const nlohmann::json& j, const char* k) {
    return j.contains(k) && (j[k].is_number() || j[k].is_null() || j[k] == "inf" || j[k] == "-inf");
  };
  if (!c.is_object() || !c.contains("passed") || !c["passed"].is_boolean()) bad("no 'passed'");
  if (!c.contains("first_divergent_tap") ||
      !(c["first_divergent_tap"].is_string() || c["first_divergent_tap"].is_null()))
    bad("no 'first_divergent_tap'");
  if (!c["passed"].get<bool>() && !c["first_divergent_tap"].is_string()) bad("failed, with no first divergent tap");
  if (!c.contains("taps") || !c["taps"].is_array()) bad("no 'taps'");
  for (const auto& t : c["taps"]) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("over") ||
        !t["over"].is_boolean() || !number(t, "max_abs") || !number(t, "mean_abs") ||
        !number(t, "rel_err") || !number(t, "tolerance"))
      bad("a tap without its name, numbers or 'over'");
  }
  if (!c.contains("per_head") || !c["per_head"].is_array()) bad("no 'per_head'");
  for (const auto& h : c["per_head"]) {
    if (!h.is_object() || !h.contains("tap") || !h["tap"].is_string() || !h.contains("max_abs") ||
        !h["max_abs"].is_array() || !h.contains("worst_head") || !h["worst_head"].is_number_unsigned() ||
        h["worst_head"].get<size_t>() >= h["max_abs"].size() || !(h["max_abs"][h["worst_head"].get<size_t>()].is_number() ||
          h["max_abs"][h["worst_head"].get<size_t>()] == "inf") ||
        !number(h, "median") || !h.contains("heads_over") || !h["heads_over"].is_array() ||
        !h.contains("concentration") || !h.contains("layer") || !h["layer"].is_number_integer())
      bad("a per-head row without its numbers");
    for (const auto& x : h["heads_over"])
      if (!x.is_number_integer()) bad("a per-head row without its numbers");
  }
  if (c.contains("first_divergent_head") && !c["first_divergent_head"].is_null()) {
    const auto& h = c["first_divergent_head"];
    if (!h.is_object() || !h.contains("tap") || !h["tap"].is_string() || !h.contains("layer") ||
        !h["layer"].is_number_integer() || !h.contains("worst_head") ||
        !h["worst_head"].is_number_integer() || !h.contains("heads_over") ||
        !h["heads_over"].is_array() || !h.contains("concentration"))
      bad("a first divergent head without its numbers");
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
      require_check_shape(check, check_path);
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
