// The check kind's file: its configuration, what it was run against (the sha256 of the
// reference's files and of the candidate), and its result, stored as one unit.
#include <chrono>
#include <cmath>
#include <filesystem>

#include "common/json_number.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "errors.h"
#include "kinds/check/check.h"
#include "kinds/registry.h"
#include "run/config.h"
#include "run/provenance.h"
#include "run/reference.h"
#include "store/experiment.h"
#include "report/gate.h"
#include "store/experiment_kind.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::kinds {
namespace fs = std::filesystem;

namespace {

// A tap's numbers, in check_taps' column order after its name.
constexpr const char* kTapNumbers[] = {"max_abs", "mean_abs", "rel_err", "tolerance"};

constexpr const char* kReferenceFiles[] = {"manifest.json", "activations.safetensors",
                                           "tolerances.json"};

std::vector<std::string> reference_paths(const std::string& reference) {
  std::vector<std::string> out;
  for (const char* f : kReferenceFiles) out.push_back((fs::path(reference) / f).string());
  return out;
}

// "a": the reference's arm, as captured (serve lists the check by its two models).
nlohmann::json to_json(const CheckConfig& c, const nlohmann::json& manifest) {
  return {{"reference", c.reference},
          {"a", run::to_json(run::reference_arm(manifest))},
          {"b", run::to_json(c.arm)},
          {"allow_model_change", c.allow_model_change},
          {"jitter_floor", c.jitter_floor},
          {"decode_steps", c.decode_steps},
          {"per_head", c.per_head}};
}

CheckConfig check_config_from_json(const nlohmann::json& j) {
  CheckConfig c;
  c.reference = j.at("reference");
  c.arm = run::arm_settings_from_json(j.at("b"));
  c.allow_model_change = j.at("allow_model_change");
  c.jitter_floor = j.at("jitter_floor");
  c.decode_steps = j.at("decode_steps");
  c.per_head = j.at("per_head");
  return c;
}

// The builds, the machine, the command, and the sha256 of everything the check reads.
nlohmann::json check_provenance(const CheckConfig& c, const run::Reference& ref,
                                const std::string& command_line) {
  nlohmann::json p = {{"heterodyne", run::heterodyne_facts()},
                      {"llama_cpp", run::llama_cpp_facts()},
                      {"machine", run::machine_facts()},
                      {"command_line", command_line},
                      {"started_at", run::now_utc()}};
  nlohmann::json files = nlohmann::json::object();
  for (const char* f : kReferenceFiles) files[f] = sha256_file((fs::path(c.reference) / f).string());
  p["reference"] = {{"path", c.reference}, {"sha256", files}};
  const int steps = c.decode_steps < 0 ? ref.decode_steps : c.decode_steps;
  const engine::Arm arm(engine::model_load(c.arm.model), c.arm,
                        static_cast<int>(ref.tokens.size()) + steps + 1);
  p["arms"] = {{"b", run::arm_facts(arm, sha256_file(c.arm.model))}};
  return p;
}

// The taps of a result as rows: check_taps (tap: forward order), NULL for NaN (nothing to
// compare), +inf kept. The result itself goes to meta "check" in the same transaction.
void store_result(store::Experiment& e, const nlohmann::json& computed) {
  // The rows and meta from one text: what a reader of either gets back.
  const nlohmann::json result = nlohmann::json::parse(computed.dump());
  store::Database& db = e.database();
  store::Transaction t(db);
  db.exec("CREATE TABLE IF NOT EXISTS check_taps (tap INTEGER PRIMARY KEY, name TEXT NOT NULL,"
          " max_abs REAL, mean_abs REAL, rel_err REAL, tolerance REAL, over INTEGER NOT NULL)"
          " WITHOUT ROWID");
  store::Statement q(db.handle(), "INSERT INTO check_taps VALUES (?, ?, ?, ?, ?, ?, ?)");
  int64_t i = 0;
  for (const auto& tap : result.at("taps")) {
    q.bind(1, i++).bind(2, tap.at("name").get<std::string>());
    int col = 3;
    for (const char* key : kTapNumbers) {
      const double v = report::gate_number(tap.at(key));
      if (std::isnan(v)) {
        q.bind_null(col++);
      } else {
        q.bind(col++, v);
      }
    }
    q.bind(7, int64_t{tap.at("over").get<bool>()});
    q.run();
  }
  e.set_meta(std::string(kCheckKind), result.dump());
  t.commit();
}

// The stored rows as a result's taps (what verify compares with meta "check").
nlohmann::json stored_taps(const store::Experiment& e) {
  if (!store::detail::has_table(e.database(), "check_taps"))
    throw InputError("'" + e.path() + "' is damaged: its check_taps table is missing");
  nlohmann::json taps = nlohmann::json::array();
  store::Statement q(e.database().handle(),
                     "SELECT name, max_abs, mean_abs, rel_err, tolerance, over FROM check_taps "
                     "ORDER BY tap");
  while (q.step()) {
    nlohmann::json tap = {{"name", q.text(0)}, {"over", q.integer(5) != 0}};
    int col = 1;
    for (const char* key : kTapNumbers) {
      tap[key] = q.type(col) == SQLITE_FLOAT ? json_number(q.real(col)) : nlohmann::json();
      ++col;
    }
    taps.push_back(std::move(tap));
  }
  return taps;
}

// `result`: the check computed already (a new run), else computed here (a resumed one).
run::RunEnd run_check(store::Experiment& e, const CheckConfig& c, bool done,
                      const nlohmann::json* result, const ProgressFn& progress) {
  run::ChunkLoop loop;
  loop.command = std::string(kCheckKind);
  loop.unit = "check";
  loop.total = 1;
  if (done) loop.done.insert(0);
  loop.run_chunk = [&](int, int) {
    const auto t0 = std::chrono::steady_clock::now();
    store_result(e, result ? *result : check_reference(c));
    return run::ChunkDone{
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  return run::run_chunk_loop(e, loop, progress);
}

}  // namespace

run::RunEnd check_run(const CheckConfig& c, const std::string& out, bool replace,
                      const std::string& command_line, const ProgressFn& progress) {
  std::vector<std::string> inputs = reference_paths(c.reference);
  inputs.push_back(c.arm.model);
  store::Experiment::check_creatable(out, replace, inputs);
  // First the check itself: a bad configuration is refused as without -o, before anything is
  // hashed or created.
  const run::Reference ref = run::load_reference(c.reference);
  const nlohmann::json result = check_reference(c, ref);
  const nlohmann::json prov = check_provenance(c, ref, command_line);
  store::Experiment e = store::Experiment::create(out, replace, inputs);
  store::set_kind(e, kCheckKind);
  e.set_meta("config", to_json(c, ref.manifest).dump());
  e.set_meta("provenance", prov.dump());
  return run_check(e, c, false, &result, progress);
}

run::RunEnd check_resume(const std::string& path, const std::string&,
                         const ProgressFn& progress) {
  auto opened = open_to_resume(path, kCheckKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  const CheckConfig c = check_config_from_json(nlohmann::json::parse(e.stored_config()));
  // Stopped while sealing: its rows and its result must agree (both or neither were written).
  const auto result = e.meta(std::string(kCheckKind));
  const bool rows = store::detail::has_table(e.database(), "check_taps");
  if (result.has_value() != rows ||
      (result && stored_taps(e) != nlohmann::json::parse(*result).at("taps")))
    throw InputError("'" + path + "' is damaged: its check_taps rows are not its result's");
  return run_check(e, c, result.has_value(), nullptr, progress);
}

void check_verify(const std::string& path, const run::VerifyOptions& options, const ProgressFn& progress) {
  const bool force = options.force;
  if (!options.input.empty())
    throw InputError("a check reads its reference's tokens: -f and --tokens are not for it");
  const store::Experiment e = store::Experiment::open(path, false);
  const CheckConfig c = check_config_from_json(nlohmann::json::parse(e.stored_config()));
  const nlohmann::json prov = nlohmann::json::parse(e.required_meta("provenance"));
  run::require_same_numerics(prov, force);
  if (!force) {
    for (const char* f : kReferenceFiles) {
      if (sha256_file((fs::path(c.reference) / f).string()) !=
          prov.at("reference").at("sha256").at(f).get<std::string>())
        throw InputError("the reference's " + std::string(f) + " is not the one this check read "
                         "(--force to compare anyway)");
    }
    if (sha256_file(c.arm.model) != prov.at("arms").at("b").at("model_sha256").get<std::string>())
      throw InputError("the candidate is not the one this check ran (--force to compare anyway)");
  }
  const nlohmann::json stored = nlohmann::json::parse(e.required_meta(std::string(kCheckKind)));
  if (stored_taps(e) != stored.at("taps"))
    throw RuntimeError("verify failed: the stored taps are not the stored result's");
  progress("checking '" + c.arm.model + "' against '" + c.reference + "' again");
  // Through its text, as stored: a NaN is null in both.
  const nlohmann::json again = nlohmann::json::parse(check_reference(c).dump());
  if (again != stored) throw RuntimeError("verify failed: the check gives another result now");
  progress(Progress::result("verify: the check reproduces bitwise"));
}

nlohmann::json stored_check(const std::string& path) {
  const store::Experiment e = store::Experiment::open(path, false);
  return nlohmann::json::parse(e.required_meta(std::string(kCheckKind)));
}

}  // namespace hd::kinds
