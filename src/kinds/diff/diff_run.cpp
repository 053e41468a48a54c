#include "kinds/diff/diff_run.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "analysis/floor_sample.h"
#include "engine/threads.h"
#include "errors.h"
#include "run/input.h"
#include "run/provenance.h"
#include "run/session.h"
#include "kinds/registry.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::run {

static nlohmann::json provenance(const Session& s, const Input& input,
                                 const std::vector<std::vector<int32_t>>& chunks,
                                 const std::string& command_line, size_t dropped_lines) {
  nlohmann::json p = run_provenance(input, chunks, command_line);
  if (s.config().skip_unencodable) p["text"]["unencodable_lines_dropped"] = dropped_lines;
  p["arms"] = s.arms_provenance();
  p["floor_ubatch"] = s.floor_ubatch();
  if (s.floor_ubatch_b() > 0) p["floor_ubatch_b"] = s.floor_ubatch_b();
  if (s.floor_ubatch_2() > 0) {  // the second split's, chunk c measured at split c % 2
    p["floor_ubatch_2"] = s.floor_ubatch_2();
    if (s.floor_ubatch_b_2() > 0) p["floor_ubatch_b_2"] = s.floor_ubatch_b_2();
  }
  p["points"] = engine::to_json(s.points());
  if (s.config().floor) {  // the chunks the floor is measured on, for resume and verify
    p["floor_chunks"] = analysis::floor_sample(s.config().floor_chunks, static_cast<int>(chunks.size()));
  }
  return p;
}

// Sets one key of the stored provenance, keeping the rest.
static void set_provenance(store::Experiment& e, const std::string& key,
                           const nlohmann::json& value) {
  auto prov = nlohmann::json::parse(e.meta("provenance").value_or("{}"));
  prov[key] = value;
  e.set_meta("provenance", prov.dump());
}

// Which starts prefix reuse proved (or fell back from) is known after the first chunk.
static void note_prefix_reuse(store::Experiment& e, const Session& s, nlohmann::json& reported,
                              const ProgressFn& progress) {
  const auto reuse = s.prefix_reuse_report();
  if (reuse == reported) return;
  reported = reuse;
  set_provenance(e, "prefix_reuse", reuse);
  for (const char* arm : {"a", "b"}) {
    if (!reuse.contains(arm)) continue;
    for (const auto& f : reuse[arm]["fell_back"]) {
      progress(fmt::format("prefix reuse: arm {}'s passes cannot start at {} ({}); its patches "
                           "start earlier",
                           arm, f["point"].get<std::string>(), f["why"].get<std::string>()));
    }
  }
}

// What this model's points do not allow, one line each, before the run starts; routing only
// where the model has experts (a dense model routes nothing, and a line saying so is noise).
static void note_unavailable(const engine::PointMap& m, const ProgressFn& progress) {
  for (const std::string& line : engine::capability_lines(m)) {
    if (m.n_expert == 0 && line.rfind("routing", 0) == 0) continue;
    if (line.find(": no (") != std::string::npos) progress(line);
  }
}

// Runs every chunk not yet in the file through the one chunk loop (run/chunk_loop.h).
static RunEnd run_missing(store::Experiment& e, Session& s,
                          const std::vector<std::vector<int32_t>>& chunks,
                          const ProgressFn& progress) {
  using clock = std::chrono::steady_clock;
  ChunkLoop loop;
  loop.command = "diff";
  loop.total = static_cast<int>(chunks.size());
  for (int c : e.finished_chunks()) loop.done.insert(c);
  int to_run = loop.total - static_cast<int>(loop.done.size());
  if (const auto shard = stored_shard(e)) {
    loop.owns = [shard](int c) { return shard->owns(c); };
    to_run = shard->chunks_of(loop.total) - static_cast<int>(loop.done.size());
  }
  int ran = 0;
  nlohmann::json reported_reuse;
  const auto start = clock::now();
  TimeLeft chunk_times;
  loop.run_chunk = [&](int c, int finished) {
    const auto t0 = clock::now();
    // Transplants make a chunk long (two passes per restore point): report every few seconds,
    // with an estimate of what is left of the whole run. A chunk's passes are not alike (the
    // early ones run from further back), so once a chunk is done the estimate is the mean time
    // of the last chunks, not this chunk's passes so far.
    auto last = t0;
    s.on_pass([&](int pass, int passes) {
      const auto now = clock::now();
      if (now - last < std::chrono::seconds(5)) return;
      last = now;
      const double in_chunk = std::chrono::duration<double>(now - t0).count();
      const double pace = in_chunk / pass * passes;  // this chunk at its passes' pace so far
      const double chunk_s = ran > 0 ? chunk_times.per_unit() : pace;
      // This chunk's rest: what the chunks' mean leaves of it; once it runs past the mean, its
      // own pace over the passes to go (never "0:00 left" with passes to run).
      const double rest =
          in_chunk < chunk_s ? chunk_s - in_chunk : pace * (passes - pass) / passes;
      const double left = rest + chunk_s * (to_run - ran - 1);
      const double elapsed = std::chrono::duration<double>(now - start).count();
      Progress p(fmt::format("chunk {}/{}: patched pass {}/{} ({} elapsed, about {} left)",
                             finished + 1, loop.total, pass, passes, duration_text(elapsed),
                             duration_text(left)));
      p.event = Progress::Event::kPass;
      p.done = finished;
      p.total = loop.total;
      p.pass = pass;
      p.passes = passes;
      p.seconds_left = left;
      p.seconds_elapsed = elapsed;
      progress(p);
    });
    analysis::ChunkResult r = s.compute(c, chunks[static_cast<size_t>(c)]);
    r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    chunk_times.unit_done(r.seconds);
    e.put_chunk(r, s.pieces_of(r));
    note_prefix_reuse(e, s, reported_reuse, progress);
    ++ran;
    double kl = 0;
    size_t n = 0;
    for (const auto& p : r.diff.positions) {
      if (p.scored && std::isfinite(p.score.kl)) kl += p.score.kl, ++n;  // as the summary
    }
    return ChunkDone{r.seconds, n ? kl / static_cast<double>(n) : 0.0};
  };
  return run_chunk_loop(e, loop, progress);
}

// What a diff reads: the output may be none of them.
static std::vector<std::string> inputs_of(const DiffConfig& c) {
  return {c.a.model, c.b.model, c.text_file};
}

RunEnd diff_run(const DiffConfig& config, const std::string& out, bool replace,
                const std::string& command_line, const ProgressFn& progress,
                const std::optional<Shard>& shard) {
  validate(config);
  // Before minutes of loading and quantizing.
  store::Experiment::check_creatable(out, replace, inputs_of(config));
  const Input input = read_input({config.text_file, config.token_ids}, config.skip_unencodable);
  Session s(config);
  size_t dropped = 0;
  const auto chunks = input_chunks(s.arm_a().model(), input, config.skip_unencodable, config.chunk,
                                   config.max_chunks, progress, &dropped);
  progress(fmt::format("{} chunks of {} tokens; A: {}  B: {}", chunks.size(), config.chunk,
                       s.arm_a().model_info().description, s.arm_b().model_info().description));
  if (shard) {
    progress(fmt::format("shard {}: its {} chunks (chunk c where c mod {} = {})", shard->name(),
                         shard->chunks_of(static_cast<int>(chunks.size())), shard->count,
                         shard->index));
  }
  note_unavailable(s.points(), progress);
  if (config.a.n_threads == 0 || config.b.n_threads == 0) {
    if (const std::string note = engine::default_threads_note(); !note.empty()) progress(note);
  }
  store::Experiment e = store::Experiment::create(out, replace, inputs_of(s.config()));
  store::set_kind(e, kinds::kDiffKind);
  e.set_meta("config", to_json(s.config()).dump());
  nlohmann::json prov = provenance(s, input, chunks, command_line, dropped);
  if (shard) {
    store_shard(e, *shard);
    prov["shard"] = {{"index", shard->index}, {"count", shard->count}};
    prov["placement"] = placement_facts();
  }
  e.set_meta("provenance", prov.dump());
  if (const auto sample = stored_floor_sample(prov)) {
    s.measure_floor_on(*sample);
    if (config.floor && sample->size() < chunks.size()) {
      progress(fmt::format("floor: measured on {} of {} chunks ({}; --floor-chunks all for "
                           "every chunk)",
                           sample->size(), chunks.size(), analysis::floor_rule_text(config.floor_chunks)));
    }
  }
  return run_missing(e, s, chunks, progress);
}

RunEnd diff_resume(const std::string& path, const std::string& command_line,
                   const ProgressFn& progress, const InputPath& again) {
  auto opened = kinds::open_to_resume(path, kinds::kDiffKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  // Never seal rows that changed since they were stored.
  if (const auto altered = e.altered_chunks()) {
    throw InputError("'" + path + "': " + *altered +
                     "; it cannot be resumed (run the diff again, with --force)");
  }
  const auto config = diff_config_from_json(nlohmann::json::parse(e.required_meta("config")));
  auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_numerics(prov, false, true);  // never rows of two builds in one file
  // The text the run read (checked by its sha256), before minutes of loading the models.
  const Input input = read_stored_input({config.text_file, config.token_ids}, prov, again,
                                        "heterodyne diff --resume " + path);
  Session s(config);
  // The models a stored run used must be the ones on disk now.
  if (auto change = s.model_change(prov["arms"])) throw InputError(*change + ": cannot resume");
  if (auto change = s.points_change(prov)) throw InputError(*change + ": cannot resume");
  if (auto change = s.floor_change(prov)) throw InputError(*change + ": cannot resume");
  if (const auto sample = stored_floor_sample(prov)) s.measure_floor_on(*sample);
  const auto chunks = input_chunks(s.arm_a().model(), input, config.skip_unencodable, config.chunk,
                                   config.max_chunks, progress);
  nlohmann::json resumed = {{"command_line", command_line}, {"at", now_utc()}};
  const auto shard = stored_shard(e);
  if (shard) resumed["placement"] = placement_facts();  // a part may resume on another node
  prov["resumed"].push_back(resumed);
  e.set_meta("provenance", prov.dump());
  const int total = static_cast<int>(chunks.size());
  progress(fmt::format("resuming{}: {} of {} chunks already stored",
                       shard ? " shard " + shard->name() : "", e.finished_chunks().size(),
                       shard ? shard->chunks_of(total) : total));
  return run_missing(e, s, chunks, progress);
}

}  // namespace hd::run
