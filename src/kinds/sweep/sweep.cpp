#include "kinds/sweep/sweep.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "analysis/attribution.h"
#include "analysis/kl.h"
#include "analysis/stats.h"
#include "common/json_number.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "errors.h"
#include "run/arms.h"
#include "run/input.h"
#include "run/provenance.h"
#include "run/session.h"
#include "run/shard.h"
#include "kinds/sweep/sweep_summary.h"
#include "kinds/sweep/sweeper.h"
#include "kinds/registry.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::run {

const std::vector<std::string>& sweep_setting_names() {
  static const std::vector<std::string> names = engine::arm_field_keys();
  return names;
}

// By the field table, not by the stored JSON: a plain arm's JSON leaves the server settings out.
std::vector<std::string> differing_settings(const engine::ArmSettings& a,
                                            const engine::ArmSettings& b) {
  std::vector<std::string> out;
  engine::for_each_arm_field([&](const auto& field) {
    if (a.*field.member != b.*field.member) out.emplace_back(field.info.key);
  });
  return out;
}

engine::ArmSettings combination(const engine::ArmSettings& a, const engine::ArmSettings& b,
                                const std::vector<std::string>& settings, unsigned mask) {
  engine::ArmSettings s = a;
  engine::for_each_arm_field([&](const auto& field) {
    for (size_t i = 0; i < settings.size(); ++i) {
      if ((mask & (1u << i)) && settings[i] == field.info.key) s.*field.member = b.*field.member;
    }
  });
  return s;
}

namespace {

nlohmann::json sweep_config_json(const DiffConfig& c, int max_arms) {
  nlohmann::json j = to_json(c);
  j["max_arms"] = max_arms;
  return j;
}

}  // namespace

namespace {

// What every stored chunk of this sweep looks like (the reader checks each against it).
// `prov`: the stored provenance (B's floor is there when it records floor_ubatch_b).
store::SweepShape sweep_shape(const DiffConfig& c, const nlohmann::json& combos,
                              const nlohmann::json& prov, const std::string& path) {
  store::SweepShape shape;
  shape.floor_b = c.floor && prov.value("floor_ubatch_b", 0) > 0;
  shape.first_pos = first_scored_target(c.score_from, c.chunk) - 1;
  shape.n_positions = c.chunk - 1 - shape.first_pos;
  shape.floor = c.floor;
  if (combos.is_array()) {
    for (const auto& x : combos) shape.possible.push_back(x.at("possible").get<bool>());
  }
  const size_t n = shape.possible.size();
  if (n == 0 || (n & (n - 1)) != 0 || !shape.possible[0] || !shape.possible[n - 1])
    throw InputError("'" + path + "' is damaged: its sweep_combinations are not a sweep's");
  return shape;
}

// The chunks whose rows are stored and hash as recorded (a chunk whose rows were edited since
// is refused), and every stored chunk's rows.
std::set<int> stored_chunks(const store::Experiment& e, const store::SweepShape& shape, int total) {
  e.require_sweep_rows_within(total);
  std::set<int> done;
  for (int c = 0; c < total; ++c) {
    if (!e.sweep_chunk(c, shape)) continue;
    if (auto why = e.sweep_chunk_altered(c)) {
      throw InputError("'" + e.path() + "': " + *why +
                       "; it cannot be resumed (run the sweep again, with --force)");
    }
    done.insert(c);
  }
  return done;
}

// Which of the text's chunks the file holds: all, or its shard's (run/shard.h).
std::function<bool(int)> owned_chunks(const store::Experiment& e) {
  if (const auto shard = stored_shard(e)) return [s = *shard](int c) { return s.owns(c); };
  return [](int) { return true; };
}

// Every chunk's stored rows, in order (each read and checked): the file's own chunks.
std::vector<store::SweepChunkRows> all_rows(const store::Experiment& e,
                                            const store::SweepShape& shape, int total) {
  const auto owns = owned_chunks(e);
  std::vector<store::SweepChunkRows> rows;
  for (int c = 0; c < total; ++c) {
    if (!owns(c)) continue;
    auto r = e.sweep_chunk(c, shape);
    if (!r)
      throw InputError("'" + e.path() + "' has no stored rows of sweep chunk " + std::to_string(c));
    rows.push_back(std::move(*r));
  }
  return rows;
}

// `done`: the chunks already stored (checked by stored_rows), none for a new sweep.
RunEnd run_sweep_chunks(store::Experiment& e, Sweeper& s, const std::set<int>& done,
                        const std::vector<std::vector<int32_t>>& chunks, const nlohmann::json& cfg,
                        const nlohmann::json& combos, const ProgressFn& progress) {
  ChunkLoop loop;
  loop.command = "sweep";
  loop.total = static_cast<int>(chunks.size());
  loop.done = done;
  if (stored_shard(e)) loop.owns = owned_chunks(e);
  const store::SweepShape shape = sweep_shape(
      s.config(), combos, nlohmann::json::parse(e.required_meta("provenance")), e.path());
  loop.run_chunk = [&](int c, int) {
    const auto t0 = std::chrono::steady_clock::now();
    e.put_sweep_chunk(s.compute(c, chunks[static_cast<size_t>(c)]));
    return ChunkDone{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  loop.before_seal = [&] {  // the summary of the rows as stored (a part's: of its chunks)
    e.set_meta("sweep", sweep_summary(cfg, all_rows(e, shape, loop.total), combos).dump());
  };
  return run_chunk_loop(e, loop, progress);
}

void report_plan(const Sweeper& s, const nlohmann::json& combos, size_t n_chunks, int chunk,
                 const ProgressFn& progress) {
  size_t impossible = 0;
  for (const auto& c : combos) impossible += c["possible"].get<bool>() ? 0 : 1;
  std::string names;
  for (const auto& n : s.names()) names += (names.empty() ? "" : ", ") + n;
  progress(
      fmt::format("sweep over {} setting(s){}{}: {} combinations ({} cannot run), {} chunks "
                  "of {} tokens",
                  s.names().size(), names.empty() ? "" : ": ", names, combos.size(), impossible,
                  n_chunks, chunk));
  for (const auto& c : combos) {
    if (!c["possible"].get<bool>()) {
      progress("  cannot run " + c["values"].dump() + ": " + c["reason"].get<std::string>());
    }
  }
}

}  // namespace

RunEnd sweep_run(const DiffConfig& config, int max_arms, const std::string& out, bool replace,
                 const std::string& command_line, const ProgressFn& progress,
                 const std::optional<Shard>& shard) {
  validate(config);
  if (max_arms < 1) throw InputError("--max-arms must be at least 1");
  const std::vector<std::string> inputs = {config.a.model, config.b.model, config.text_file};
  store::Experiment::check_creatable(out, replace, inputs);
  const Input input = read_input({config.text_file, config.token_ids}, config.skip_unencodable);
  Sweeper s(config, max_arms, true);
  size_t dropped = 0;
  const auto chunks = input_chunks(s.model_a(), input, config.skip_unencodable, config.chunk,
                                   config.max_chunks, progress, &dropped);
  const nlohmann::json combos = s.combinations();
  report_plan(s, combos, chunks.size(), config.chunk, progress);
  store::Experiment e = store::Experiment::create(out, replace, inputs);
  store::set_kind(e, kinds::kSweepKind);
  const nlohmann::json cfg = sweep_config_json(s.config(), max_arms);
  e.set_meta("config", cfg.dump());
  nlohmann::json prov = run_provenance(input, chunks, command_line);
  if (config.skip_unencodable) prov["text"]["unencodable_lines_dropped"] = dropped;
  prov["arms"] = s.arms_provenance();
  prov["floor_ubatch"] = s.floor_ubatch();
  if (s.floor_ubatch_b() > 0) prov["floor_ubatch_b"] = s.floor_ubatch_b();
  if (shard) {
    store_shard(e, *shard);
    prov["shard"] = {{"index", shard->index}, {"count", shard->count}};
    prov["placement"] = placement_facts();
    progress(fmt::format("shard {}: its {} chunks", shard->name(),
                         shard->chunks_of(static_cast<int>(chunks.size()))));
  }
  e.set_meta("provenance", prov.dump());
  e.set_meta("sweep_combinations", combos.dump());
  return run_sweep_chunks(e, s, {}, chunks, cfg, combos, progress);
}

RunEnd sweep_resume(const std::string& path, const std::string& command_line,
                    const ProgressFn& progress, const InputPath& again) {
  auto opened = kinds::open_to_resume(path, kinds::kSweepKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  const nlohmann::json cfg = nlohmann::json::parse(e.required_meta("config"));
  const DiffConfig config = diff_config_from_json(cfg);
  validate(config);  // an unsealed file's configuration is checked like a new one
  auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_numerics(prov, false, true);  // never rows of two builds in one file
  const nlohmann::json combos = nlohmann::json::parse(e.required_meta("sweep_combinations"));
  // Before minutes of loading, and before anything is written: never add to edited rows.
  const auto done = stored_chunks(e, sweep_shape(config, combos, prov, path),
                                  prov.at("tokens").at("n_chunks").get<int>());
  const Input input = read_stored_input({config.text_file, config.token_ids}, prov, again,
                                        "heterodyne sweep --resume " + path);
  Sweeper s(config, cfg.at("max_arms").get<int>(), prov.value("floor_ubatch_b", 0) > 0);
  // The combinations record every model's hash and which could run: they must be as stored.
  if (s.combinations() != combos) {
    throw InputError("the models or settings are not those the sweep used: cannot resume");
  }
  const auto chunks = input_chunks(s.model_a(), input, config.skip_unencodable, config.chunk,
                                   config.max_chunks, progress);
  nlohmann::json resumed = {{"command_line", command_line}, {"at", now_utc()}};
  const auto shard = stored_shard(e);
  if (shard) resumed["placement"] = placement_facts();
  prov["resumed"].push_back(resumed);
  e.set_meta("provenance", prov.dump());
  const int total = static_cast<int>(chunks.size());
  progress(fmt::format("resuming{}: {} of {} chunks already stored",
                       shard ? " shard " + shard->name() : "", done.size(),
                       shard ? shard->chunks_of(total) : total));
  return run_sweep_chunks(e, s, done, chunks, cfg, combos, progress);
}

// Every figure of the stored summary is the recomputed one's, bit for bit in its JSON text. A
// summary from before B's floor lacks some keys (floor_a, floor_b, the two statements) and has
// one no longer written (within_floor): it still verifies on the figures it holds.
static bool follows(const nlohmann::json& stored, const nlohmann::json& again, bool top = true) {
  if (!stored.is_object() || !again.is_object()) return stored.dump() == again.dump();
  for (const auto& [key, value] : stored.items()) {
    if (top && key == "within_floor") continue;
    if (!again.contains(key) || !follows(value, again[key], false)) return false;
  }
  return true;
}

// The stored rows, read and checked before minutes of loading: each chunk must still hash as
// recorded.
static std::vector<store::SweepChunkRows> checked_rows(const store::Experiment& e,
                                                       const store::SweepShape& shape, int total) {
  e.require_sweep_rows_within(total);
  const auto rows = all_rows(e, shape, total);
  for (const auto& r : rows) {
    if (auto why = e.sweep_chunk_altered(r.chunk)) throw RuntimeError("verify failed: " + *why);
  }
  return rows;
}

void sweep_verify(const std::string& path, const VerifyOptions& options,
                  const ProgressFn& progress) {
  const bool force = options.force;
  const InputPath& again = options.input;
  const store::Experiment e = store::Experiment::open(path, false);
  const nlohmann::json cfg = nlohmann::json::parse(e.required_meta("config"));
  const nlohmann::json prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_numerics(prov, force);
  const DiffConfig config = diff_config_from_json(cfg);
  validate(config);
  const nlohmann::json combos = nlohmann::json::parse(e.required_meta("sweep_combinations"));
  const auto stored = checked_rows(e, sweep_shape(config, combos, prov, path),
                                   prov.at("tokens").at("n_chunks").get<int>());
  Sweeper s(config, cfg.at("max_arms").get<int>(), prov.value("floor_ubatch_b", 0) > 0);
  if (s.combinations() != combos && !force) {
    throw InputError(
        "the models or settings are not those the sweep used (--force to compare anyway)");
  }
  const Input input = read_stored_input({config.text_file, config.token_ids}, prov, again,
                                        "heterodyne verify " + path);
  const auto chunks = input_chunks(s.model_a(), input, config.skip_unencodable, config.chunk,
                                   config.max_chunks, progress);
  const int n_stored = prov.at("tokens").at("n_chunks").get<int>();
  if (static_cast<int>(chunks.size()) != n_stored) {
    throw RuntimeError(fmt::format("verify failed: {} gives {} chunks, the sweep stored {}",
                                   input.name(), chunks.size(), n_stored));
  }
  std::vector<store::SweepChunkRows> rows;
  for (size_t i = 0; i < stored.size(); ++i) {  // the file's own chunks: all, or a part's
    const int c = stored[i].chunk;
    rows.push_back(s.compute(c, chunks[static_cast<size_t>(c)]));
    if (auto d = store::sweep_rows_difference(stored[i], rows.back())) {
      throw RuntimeError(fmt::format("verify failed: sweep chunk {} differs: {}", c, *d));
    }
    progress(fmt::format("chunk {}/{}: identical", i + 1, stored.size()));
  }
  if (!follows(nlohmann::json::parse(e.required_meta("sweep")), sweep_summary(cfg, rows, combos))) {
    throw RuntimeError("verify failed: the stored summary does not follow from the chunks");
  }
  progress(Progress::result(fmt::format("verify: all {} sweep chunks reproduce bitwise", stored.size())));
}

void store_sweep_summary(store::Experiment& e) {
  const nlohmann::json cfg = nlohmann::json::parse(e.required_meta("config"));
  const nlohmann::json prov = nlohmann::json::parse(e.required_meta("provenance"));
  const nlohmann::json combos = nlohmann::json::parse(e.required_meta("sweep_combinations"));
  const int total = prov.at("tokens").at("n_chunks").get<int>();
  const auto shape = sweep_shape(diff_config_from_json(cfg), combos, prov, e.path());
  e.set_meta("sweep", sweep_summary(cfg, all_rows(e, shape, total), combos).dump());
}

}  // namespace hd::run
