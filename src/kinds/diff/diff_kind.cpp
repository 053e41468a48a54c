#include "kinds/diff/diff_kind.h"

#include <cmath>
#include <sstream>

#include "errors.h"
#include "report/analyses.h"
#include "report/flips.h"
#include "report/noise_floor.h"
#include "report/result.h"
#include "report/show.h"
#include "report/transplants.h"
#include "store/experiment.h"

namespace hd::kinds {

using namespace report;

Shown DiffKind::show(const std::string& path, const ShowRequest& r) const {
  const Loaded l = load_experiment(path);
  // Flat perplexity hides changed greedy answers: a version-vs-version run leads with them.
  const bool flips = (r.flips || compares_builds(l)) && l.summary.n_chunks > 0;
  std::ostringstream out;
  if (r.json) {
    nlohmann::json j = summary_json(l, r.worst);
    if (flips) j["flips"] = flips_json(l);
    out << json_text(j);
  } else {
    if ((r.transplants || r.components) && !l.transplants) {
      throw InputError("'" + path +
                       "' has no transplants: run diff with --transplants or --components");
    }
    if (!r.alone.empty()) {  // an analysis' tables (and maps) alone
      print_analyses_alone(out, l, r.alone);
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

CatalogEntry DiffKind::catalog_entry(const std::string& path) const {
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
  CatalogEntry entry;
  entry.kind = name();
  entry.status = l.status;
  entry.b_size = b_size > 0 ? b_size : NAN;
  entry.b_bpw = b_size > 0 && b_params > 0 ? 8 * b_size / b_params : NAN;
  entry.kl_mean = s.diff.kl.mean;  // over the positions where KL is finite:
  entry.kl_infinite_positions = s.diff.n_kl_infinite;  // the others
  entry.kl_ci95 = s.diff.kl.ci95;
  entry.top1_change_rate = s.diff.top1_rate.rate;
  entry.ppl_a = s.diff.ppl_a;
  entry.ppl_b = s.diff.ppl_b;
  entry.floor_kl_mean = s.has_floor ? s.noise.kl.mean : NAN;
  entry.n_chunks = s.n_chunks;
  entry.a = model("a");
  entry.b = l.config.value("b_quant", "").empty() ? model("b") : l.config.value("b_quant", "");
  // A part of a sharded run, or a file merged from parts (run/merge.h): listed as such.
  const auto& p = l.provenance;
  if (p.contains("shard") && p["shard"].is_object()) {
    entry.shard = std::to_string(p["shard"].value("index", 0)) + "/" +
                  std::to_string(p["shard"].value("count", 0));
  }
  if (p.contains("merged") && p["merged"].is_object())
    entry.merged_parts = p["merged"].value("parts", 0);
  return entry;
}


nlohmann::json DiffKind::document(const std::string& path) const {
  return result_json(load_experiment(path, true));
}

}  // namespace hd::kinds

namespace hd::kinds {

// A diff's parts hold their chunks' rows, each chunk hashed under chunk_sha256/N; the merged
// file's summaries are computed from its rows when read, as for any diff.
const run::Sharding* DiffKind::sharding() const {
  static const run::Sharding s{
      "chunk_sha256/",
      {},
      [](const store::Experiment& e, const std::map<std::string, std::string>&) {
        return e.finished_chunks();
      },
      [](store::Experiment& merged, int) { return merged.altered_chunks(); }};
  return &s;
}

std::unique_ptr<const RunKind> make_diff_kind() { return std::make_unique<DiffKind>(); }
}  // namespace hd::kinds
