#include "kinds/recommend/recommend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <tuple>

#include "common/output_file.h"
#include "common/sha256.h"
#include "errors.h"
#include "run/overlap.h"
#include "run/provenance.h"
#include "kinds/recommend/recommend_measure.h"
#include "kinds/recommend/recommend_inputs.h"
#include "kinds/recommend/recommend_plan.h"
#include "kinds/recommend/recommend_proof.h"
#include "kinds/recommend/recommend_variants.h"
#include "kinds/registry.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"
#include "kinds/recommend/recommend_rows.h"

namespace hd::run {
namespace fs = std::filesystem;

namespace {

// The groups not yet in the file, one transaction each, with the time left; then the proof,
// before the file is sealed.
RunEnd run_groups(store::Experiment& e, const RecommendConfig& c, const RecipePlan& plan,
                  Measurer& m, const std::set<int>& done, const std::string& dir,
                  bool replace, const std::string& command_line, const ProgressFn& progress) {
  const std::string scratch = (fs::path(dir) / "variant.gguf").string();

  const int per_round = static_cast<int>(plan.groups.size()) + 1;
  const int total = per_round * c.rounds;
  double spent = 0;
  int measured = 0;
  ChunkLoop loop;
  loop.command = "recommend";
  loop.unit = "group";
  loop.total = total;
  loop.done = done;
  loop.run_chunk = [&](int g, int finished) {
    const auto t0 = std::chrono::steady_clock::now();
    const int round = g / per_round, group = g % per_round;
    // A round's start is the recipe the rows of the rounds before it choose.
    const Start start = round_starts(c, plan, store::read_sensitivity(e), round + 1).back();
    store::put_recommend_unit(e, round, group,
                              m.group_rows(round, group, plan, start, c.model, c.base, c.types,
                                           scratch, progress));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spent += s;
    ++measured;
    const int left = total - finished - 1;  // `finished` counts the groups before this one
    if (left > 0) {
      Progress p(fmt::format("  about {:.0f} s left", spent / measured * left));
      p.event = Progress::Event::kPass;
      p.seconds_left = spent / measured * left;
      progress(p);
    }
    return ChunkDone{s};
  };
  loop.before_seal = [&] {
    m.release();  // the type files and the start's rows: the proof needs neither
    const nlohmann::json summary = prove_recipe(c, plan, store::read_sensitivity(e), m, dir,
                                                replace, command_line, progress);
    e.set_meta("recommend", summary.dump());
  };
  return run_chunk_loop(e, loop, progress);
}

// Held out, in tokens: refused when a quarter of the held-out tokens or more are the
// calibration's, or when half the held-out chunks or more are half the calibration's (the
// calibration text re-wrapped, shifted by a space, or in another order). Less (a shared licence
// header, a quoted phrase) is said and recorded with its share.
constexpr double kRefusedShare = 0.25, kSharedChunk = 0.5;

nlohmann::json held_out_overlap_record(const Loaded& l, int chunk, const ProgressFn& progress) {
  const Overlap o =
      held_out_overlap(l.calibration_chunks, l.held_out_chunks, overlap_run(chunk));
  const auto mostly = std::count_if(o.chunks.begin(), o.chunks.end(),
                                    [](const ChunkOverlap& c) { return c.share >= kSharedChunk; });
  const size_t n = l.held_out_chunks.size();
  if (o.share >= kRefusedShare || (n > 0 && 2 * static_cast<size_t>(mostly) >= n)) {
    throw InputError(fmt::format(
        "the held-out text shares {:.0f} % of its tokens with the calibration chunks (in runs of "
        "{} tokens or more; {} of {} held-out chunks are half shared or more, chunk {} {:.0f} "
        "%): the proof must be measured on text the choice never saw",
        100 * o.share, o.run, mostly, n, o.chunks.front().chunk, 100 * o.chunks.front().share));
  }
  nlohmann::json record = {{"run_tokens", o.run}, {"share", o.share},
                           {"chunks_sharing", o.chunks.size()},
                           {"max_share", o.chunks.empty() ? 0.0 : o.chunks.front().share}};
  if (!o.chunks.empty()) {
    record["chunk"] = o.chunks.front().chunk;
    progress(fmt::format("note: {} of {} held-out chunks share runs of {}+ tokens with the "
                         "calibration ({:.1f} % of the held-out tokens; at most {:.1f} % of "
                         "chunk {}): recorded",
                         o.chunks.size(), n, o.run, 100 * o.share, 100 * o.chunks.front().share,
                         o.chunks.front().chunk));
  }
  return record;
}

// A run killed with SIGKILL left its variant (model-sized) and perhaps the recipe's model under
// their temporary names: removed when a run starts or resumes in that folder, once it holds the
// report's lock (no other recommend writes there then), and only recommend's own files.
void remove_killed_runs_files(const std::string& dir, const ProgressFn& progress) {
  std::vector<std::string> own = variant_file_names();
  own.insert(own.end(), {"model.gguf", "tensor-types.txt"});
  if (const Removed stale = remove_stale_temporaries(dir, own); stale.files > 0) {
    progress(fmt::format("removed {} temporary file{} ({:.1f} MB) a killed run left in {}",
                         stale.files, stale.files == 1 ? "" : "s",
                         static_cast<double>(stale.bytes) / 1e6, dir));
  }
}

std::string report_in(const std::string& dir) { return (fs::path(dir) / "report.hdy").string(); }
std::string dir_of(const std::string& report) {
  const fs::path p = fs::path(report).parent_path();
  return p.empty() ? "." : p.string();
}

}  // namespace

RunEnd recommend_run(RecommendConfig c, const std::string& out, bool replace,
                     const std::string& command_line, const ProgressFn& progress) {
  check_config(c);
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw InputError("-o '" + out + "' is not a directory: recommend writes several files there");
  fs::create_directories(out, ec);
  if (ec) throw InputError("cannot make the directory '" + out + "': " + ec.message());
  const std::vector<std::string> inputs = {c.model, c.calibration.path, c.held_out.path};
  store::Experiment::check_creatable(report_in(out), replace, inputs);
  for (const char* name : {"tensor-types.txt", "model.gguf"})
    check_output_path((fs::path(out) / name).string(), OutputPolicy(replace, inputs));
  if (fs::exists(fs::path(out) / "held-out", ec) && !fs::is_directory(fs::path(out) / "held-out", ec))
    throw InputError("'" + (fs::path(out) / "held-out").string() +
                     "' is not a directory: the held-out diffs go there");
  // The held-out diffs are named once the sizes are known: an old one is refused now, not after
  // the measurements.
  for (const auto& f : fs::directory_iterator(fs::path(out) / "held-out", ec)) {
    if (!replace && f.path().extension() == ".hdy")
      throw InputError("'" + f.path().string() + "' exists: use --force to replace it");
  }
  resolve_target(c);
  const Loaded l = load_inputs(c, nullptr, progress);
  const RecipePlan plan = plan_recipe(c.model, c.base, c.types, c.layers_per_group, 0);
  check_target_fits(c, plan);
  if (l.calibration.bytes == l.held_out.bytes)
    throw InputError("the held-out text has the calibration text's bytes: the proof must be "
                     "measured on text the choice never saw");
  nlohmann::json prov = run_provenance(l.calibration, l.calibration_chunks, command_line);
  nlohmann::json held = run_provenance(l.held_out, l.held_out_chunks, command_line)["text"];
  held["tokens"] = tokens_record(l.held_out_chunks);
  held["overlap"] = held_out_overlap_record(l, c.chunk, progress);
  prov["held_out"] = held;
  prov["model_sha256"] = sha256_file(c.model);
  store::Experiment e = store::Experiment::create(report_in(out), replace, inputs);
  remove_killed_runs_files(out, progress);
  store::set_kind(e, kinds::kRecommendKind);
  e.set_meta("config", to_json(c).dump());
  e.set_meta("provenance", prov.dump());
  store::create_recommend_tables(e);
  const auto m = measure_a(c, l, plan, progress);
  return run_groups(e, c, plan, *m, {}, out, replace, command_line, progress);
}

namespace {
struct Reopened {
  RecommendConfig config;
  nlohmann::json provenance;
};
Reopened reopen(const store::Experiment& e, bool force) {
  kinds::require_kind(e, kinds::kRecommendKind);
  Reopened r{recommend_config_from_json(nlohmann::json::parse(e.stored_config())),
             nlohmann::json::parse(e.required_meta("provenance"))};
  check_config(r.config);
  if (!force && r.provenance.value("model_sha256", "") != sha256_file(r.config.model))
    throw InputError("the model is not the one this recommendation used");
  return r;
}
}  // namespace

RunEnd recommend_resume(const std::string& report, const std::string& command_line,
                        const ProgressFn& progress) {
  store::Experiment e = store::Experiment::open(report, true);
  kinds::require_kind(e, kinds::kRecommendKind);
  remove_killed_runs_files(dir_of(report), progress);
  if (e.sealed()) {
    progress("'" + report + "' is already complete");
    return {0, true, "group"};
  }
  Reopened r = reopen(e, false);
  require_same_numerics(r.provenance, false, true);  // never rows of two builds in one file
  const Loaded l = load_inputs(r.config, &r.provenance, progress);
  const RecipePlan plan = plan_recipe(r.config.model, r.config.base, r.config.types,
                                      r.config.layers_per_group, 0);
  const auto done = store::stored_recommend_units(e, static_cast<int>(plan.groups.size()) + 1,
                                                 r.config.rounds);
  r.provenance["resumed"].push_back({{"command_line", command_line}, {"at", now_utc()}});
  e.set_meta("provenance", r.provenance.dump());
  progress(fmt::format("resuming: {} of {} groups already stored", done.size(),
                       (plan.groups.size() + 1) * static_cast<size_t>(r.config.rounds)));
  const auto m = measure_a(r.config, l, plan, progress);
  // Files this run made before it stopped are its own: replaced.
  return run_groups(e, r.config, plan, *m, done, dir_of(report), true, command_line, progress);
}

namespace {
nlohmann::json row_json(const store::SensitivityRow& r) {
  return {r.round, r.group_index, r.group, r.type, r.bytes, r.status,
          r.kl_calibration, r.kl_held_out, r.top1_calibration};
}
}  // namespace

namespace {
// A directory of this process's own under the system's temporary one, removed with everything
// in it: verify writes its variants there, so that a recipe on a read-only mount verifies.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("heterodyne-verify-" + std::to_string(::getpid()));
  ScratchDir() {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) throw RuntimeError("cannot make " + path.string() + ": " + ec.message());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

void recommend_verify(const std::string& report, bool force, const ProgressFn& progress) {
  const ScratchDir scratch;
  const store::Experiment e = store::Experiment::open(report, false);
  const Reopened r = reopen(e, force);
  require_same_numerics(r.provenance, force);
  const nlohmann::json summary = nlohmann::json::parse(e.required_meta("recommend"));
  const Loaded l = load_inputs(r.config, &r.provenance, progress);
  const RecipePlan plan = plan_recipe(r.config.model, r.config.base, r.config.types,
                                      r.config.layers_per_group, 0);
  Measurer m(l.model, r.config.chunk,
             Measurer::score_a(l.model, r.config.chunk, l.calibration_chunks),
             Measurer::score_a(l.model, r.config.chunk, l.rank_chunks), r.config.reuse);
  const auto stored = store::read_sensitivity(e);
  const std::string dir = dir_of(report);
  std::vector<store::SensitivityRow> again;
  const int per_round = static_cast<int>(plan.groups.size()) + 1;
  const int total = per_round * r.config.rounds;
  for (int u = 0; u < total; ++u) {
    const int round = u / per_round, g = u % per_round;
    // Each round starts where the recomputed rows before it choose: a difference shows first
    // in the rows, not as another start.
    const Start start = round_starts(r.config, plan, again, round + 1).back();
    for (auto& row : m.group_rows(round, g, plan, start, r.config.model, r.config.base,
                                  r.config.types, (scratch.path / "variant.gguf").string(),
                                  [](const Progress&) {}))
      again.push_back(std::move(row));
    progress(Progress::chunk(u + 1, total, fmt::format("group {}/{} recomputed", u + 1, total)));
  }
  std::sort(again.begin(), again.end(), [](const auto& a, const auto& b) {
    return std::tie(a.round, a.group_index, a.type) < std::tie(b.round, b.group_index, b.type);
  });
  if (again.size() != stored.size())
    throw RuntimeError(fmt::format("verify failed: {} sensitivity rows stored, {} recomputed",
                                   stored.size(), again.size()));
  for (size_t i = 0; i < stored.size(); ++i) {
    // Dumped, so that every double compares by its shortest exact digits.
    if (row_json(stored[i]).dump() != row_json(again[i]).dump())
      throw RuntimeError("verify failed: stored " + row_json(stored[i]).dump() + ", recomputed " +
                         row_json(again[i]).dump());
  }
  m.release();  // the type files and the start's rows, before the recipe is made again
  const Start last = round_starts(r.config, plan, stored, r.config.rounds).back();
  const RecipeChoice choice = choose_recipe(r.config, plan, stored, r.config.rounds - 1, last);
  OutputFile remade((scratch.path / "model.gguf").string(), OutputPolicy(true));  // not kept
  make_recipe_model(r.config, plan, recipe_types(plan, last, choice), remade.temporary(),
                    OutputPolicy(true));
  const std::string sha = sha256_file(remade.temporary());
  if (sha != summary.at("model").at("sha256"))
    throw RuntimeError("verify failed: the recipe quantizes to sha256 " + sha.substr(0, 16) +
                       "…, the stored model was " +
                       summary.at("model").at("sha256").get<std::string>().substr(0, 16) + "…");
  progress(Progress::result(fmt::format("verify: all {} sensitivity rows reproduce bitwise, and the recipe "
                       "quantizes to the stored model byte for byte (the held-out diffs verify "
                       "on their own: heterodyne verify {}/held-out/*.hdy)",
                       stored.size(), dir)));
}

}  // namespace hd::run
