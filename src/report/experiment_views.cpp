#include "report/experiment_views.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "errors.h"
#include "report/flips.h"
#include "report/analyses.h"
#include "report/floor.h"
#include "report/noise_floor.h"
#include "report/recommend.h"
#include "report/result.h"
#include "report/routing_map.h"
#include "report/show.h"
#include "report/stored_result.h"
#include "report/sweep.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"
#include "store/floor_rows.h"

namespace hd::report {
namespace {

std::string dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Shown show_diff(const std::string& path, const ShowRequest& r) {
  const Loaded l = load_experiment(path);
  // Flat perplexity hides changed greedy answers: a version-vs-version run leads with them.
  const bool flips = (r.flips || compares_builds(l)) && l.summary.n_chunks > 0;
  std::ostringstream out;
  if (r.json) {
    nlohmann::json j = summary_json(l, r.worst);
    if (flips) j["flips"] = flips_json(l);
    out << dump(j);
  } else {
    if ((r.transplants || r.components) && !l.transplants) {
      throw InputError("'" + path +
                       "' has no transplants: run diff with --transplants or --components");
    }
    if (r.routing) {  // the routing tables and map alone
      print_routing(out, l);
      return {out.str(), l.integrity == store::kIntegrityMismatch};
    }
    if (r.lens) {  // the logit lens table alone
      if (!print_tables_named(out, l.analyses, "lens"))
        throw InputError("'" + path + "' has no logit lens: run diff with --lens");
      return {out.str(), l.integrity == store::kIntegrityMismatch};
    }
    if (r.position) print_position(out, l, *r.position);  // the token asked about first
    if (flips) print_flips(out, l);
    print_summary(out, l);
    if (r.transplants) print_transplants(out, *l.transplants, kl_floor(l.summary));
    if (r.components) print_components(out, *l.transplants, kl_floor(l.summary));
    if (r.worst > 0) print_worst(out, l, r.worst);
  }
  return {out.str(), l.integrity == store::kIntegrityMismatch};
}

// A floor keeps its rows in tables (store/floor_rows.h); files from before, in its summary.
void add_floor_rows(const store::Experiment& e, nlohmann::json& floor) {
  if (floor.contains("rows")) return;
  if (!store::has_floor_tables(e))
    throw InputError("'" + e.path() + "' is damaged: its floor tables are missing");
  floor.update(store::floor_groups_json(store::read_floor_groups(e)));
}

// A kind whose stored result is one summary in its meta table (stored_result.h), with the rows
// `add_rows` reads, printed by `print`; show's diff flags do not apply to it.
template <void (*print)(std::ostream&, const LoadedResult&), AddRows add_rows = nullptr>
Shown show_summary(const std::string& path, const ShowRequest& r) {
  const store::Kind kind = store::kind_of(store::Experiment::open(path, false));
  if (r.worst || r.transplants || r.components || r.flips || r.position || r.routing || r.lens) {
    throw InputError("'" + path + "' is a " + std::string(store::kind_info(kind).name) +
                     ": --worst, --transplants, --components, --flips, --position, --routing and --lens "
                     "are for diffs");
  }
  const LoadedResult l = load_result(path, std::string(store::kind_info(kind).name), add_rows);
  std::ostringstream out;
  if (r.json) {
    out << dump(result_json(l));
  } else {
    print(out, l);
  }
  return {out.str(), l.integrity == store::kIntegrityMismatch};
}

template <void (*print)(std::ostream&, const LoadedResult&), AddRows add_rows = nullptr>
nlohmann::json summary_document(const std::string& path) {
  const store::Kind kind = store::kind_of(store::Experiment::open(path, false));
  const LoadedResult l = load_result(path, std::string(store::kind_info(kind).name), add_rows);
  nlohmann::json doc = result_json(l);
  std::ostringstream text;
  print(text, l);
  doc["text"] = text.str();
  return doc;
}

nlohmann::json diff_entry(const std::string& path) {
  const Loaded l = load_experiment(path);
  const auto& s = l.summary;
  const auto& arms = l.provenance.contains("arms") ? l.provenance["arms"] : nlohmann::json();
  const auto model = [&](const char* arm) {
    return arms.is_object() && arms.contains(arm) ? arms[arm].value("model", "") : std::string();
  };
  // B's file bits per weight, as the compare page's ladder places it.
  const auto b_facts = arms.is_object() && arms.contains("b") ? arms["b"] : nlohmann::json();
  const double b_size = b_facts.is_object() ? b_facts.value("model_size", 0.0) : 0.0;
  const double b_params = b_facts.is_object() ? b_facts.value("n_params", 0.0) : 0.0;
  nlohmann::json entry = {
      {"kind", "diff"},
      {"status", l.status},
      {"b_size", b_size > 0 ? b_size : NAN},
      {"b_bpw", b_size > 0 && b_params > 0 ? 8 * b_size / b_params : NAN},
      {"kl_mean", s.diff.kl.mean},  // over the positions where KL is finite:
      {"kl_infinite_positions", s.diff.n_kl_infinite},  // the others
      {"kl_ci95", s.diff.kl.ci95},
      {"top1_change_rate", s.diff.top1_rate.rate},
      {"ppl_a", s.diff.ppl_a},
      {"ppl_b", s.diff.ppl_b},
      {"floor_kl_mean", s.has_floor ? s.noise.kl.mean : NAN},
      {"n_chunks", s.n_chunks},
      {"a", model("a")},
      {"b", l.config.value("b_quant", "").empty() ? model("b") : l.config.value("b_quant", "")}};
  // A part of a sharded run, or a file merged from parts (run/merge.h): listed as such.
  const auto& p = l.provenance;
  if (p.contains("shard") && p["shard"].is_object()) {
    entry["shard"] = std::to_string(p["shard"].value("index", 0)) + "/" +
                     std::to_string(p["shard"].value("count", 0));
  }
  if (p.contains("merged") && p["merged"].is_object()) {
    entry["merged_parts"] = p["merged"].value("parts", 0);
  }
  return entry;
}

// A sweep's or floor's line: what ran, listed while it runs too (its summary comes at the end).
nlohmann::json config_entry(const std::string& path) {
  const store::Experiment e = store::Experiment::open(path, false);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(e.stored_config());
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path + "' is damaged: its configuration is not valid JSON");
  }
  const auto model = [&](const char* arm) -> std::string {
    if (!config.is_object()) return "";
    if (config.contains(arm) && config[arm].is_object()) return config[arm].value("model", "");
    return std::string(arm) == "a" ? config.value("model", "") : "";  // a floor has one arm
  };
  return {{"kind", store::kind_info(store::kind_of(e)).name},
          {"status", e.meta("status").value_or("unknown")},
          {"a", model("a")},
          {"b", model("b")}};
}

struct View {
  Shown (*show)(const std::string&, const ShowRequest&);
  nlohmann::json (*document)(const std::string&);
  nlohmann::json (*catalog_entry)(const std::string&);
};

// Indexed by store::Kind.
constexpr std::array<View, store::kKindCount> kViews = {{
    {show_diff, [](const std::string& path) { return result_json(load_experiment(path, true)); },
     diff_entry},
    {show_summary<print_sweep>, summary_document<print_sweep>, config_entry},
    {show_summary<print_floor, add_floor_rows>, summary_document<print_floor, add_floor_rows>,
     config_entry},
    {show_summary<print_recommend, add_recommend_rows>,
     summary_document<print_recommend, add_recommend_rows>, config_entry},
}};

const View& view_of(const std::string& path) {
  return kViews[static_cast<size_t>(store::kind_of(store::Experiment::open(path, false)))];
}

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

}  // namespace

Shown show_experiment(const std::string& path, const ShowRequest& request) {
  return reading(path, [&] { return view_of(path).show(path, request); });
}

nlohmann::json result_document(const std::string& path) {
  return reading(path, [&] { return view_of(path).document(path); });
}

nlohmann::json compare_document(const std::vector<std::string>& paths) {
  nlohmann::json runs = nlohmann::json::array();
  std::set<std::string> names;
  for (const auto& p : paths) names.insert(std::filesystem::path(p).filename().string());
  for (const auto& path : paths) {
    const store::Kind kind = store::kind_of(store::Experiment::open(path, false));
    if (kind != store::Kind::kDiff)
      throw InputError("'" + path + "' is a " + std::string(store::kind_info(kind).name) +
                       ": only diffs are compared (report it alone)");
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

nlohmann::json catalog_entry(const std::string& path) {
  return reading(path, [&] { return view_of(path).catalog_entry(path); });
}

}  // namespace hd::report
