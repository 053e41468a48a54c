#include "run/diff.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <set>

#include "build_info.h"
#include "commit.h"
#include "common/fatal.h"
#include "common/sha256.h"
#include "engine/system.h"
#include "errors.h"
#include "run/session.h"
#include "run/text.h"
#include "store/experiment.h"

namespace hd::run {

static std::atomic<bool> g_stop{false};
void request_stop() { g_stop = true; }
bool stop_requested() { return g_stop; }

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

static std::string sha256_of_tokens(const std::vector<std::vector<int32_t>>& chunks) {
  std::string bytes;
  for (const auto& c : chunks) {
    for (int32_t t : c) {
      for (int i = 0; i < 4; ++i)
        bytes.push_back(static_cast<char>((static_cast<uint32_t>(t) >> (8 * i)) & 0xff));
    }
  }
  return sha256_bytes(bytes);
}

nlohmann::json run_provenance(const std::string& text_path, const std::string& text,
                              const std::vector<std::vector<int32_t>>& chunks,
                              const std::string& command_line) {
  nlohmann::json p;
  p["heterodyne"] = {{"version", build::kVersion}, {"commit", build::kCommit}};
  p["llama_cpp"] = {{"commit", build::kLlamaCommit}, {"flags", build::kLlamaFlags}};
  p["machine"] = {{"cpu", engine::cpu_model()},
                  {"cpu_features", engine::cpu_features()},
                  {"os", engine::os_description()}};
  p["text"] = {{"path", text_path}, {"sha256", sha256_bytes(text)}, {"bytes", text.size()}};
  size_t n_tokens = 0;
  for (const auto& c : chunks) n_tokens += c.size();
  p["tokens"] = {
      {"n_chunks", chunks.size()}, {"count", n_tokens}, {"sha256", sha256_of_tokens(chunks)}};
  p["command_line"] = command_line;
  p["started_at"] = now_utc();
  return p;
}

static nlohmann::json provenance(const Session& s, const std::string& text,
                                 const std::vector<std::vector<int32_t>>& chunks,
                                 const std::string& command_line, size_t dropped_lines) {
  nlohmann::json p = run_provenance(s.config().text_file, text, chunks, command_line);
  if (s.config().skip_unencodable) p["text"]["unencodable_lines_dropped"] = dropped_lines;
  p["arms"] = s.arms_provenance();
  p["floor_ubatch"] = s.floor_ubatch();
  return p;
}

// Sets one key of the stored provenance, keeping the rest.
static void set_provenance(store::Experiment& e, const std::string& key,
                           const nlohmann::json& value) {
  auto prov = nlohmann::json::parse(e.meta("provenance").value_or("{}"));
  prov[key] = value;
  e.set_meta("provenance", prov.dump());
}

// Runs every chunk not yet in the file; seals it when all are there. A failure mid-run (a full
// disk, say) loses only the chunk in flight: the message says how to finish.
static int run_chunks(store::Experiment& e, Session& s,
                      const std::vector<std::vector<int32_t>>& chunks, const ProgressFn& progress);
static std::string nothing_stored(const store::Experiment& e) {
  return "nothing was stored ('" + e.path() + "' is as it was)";
}

static std::string kept_chunks(const store::Experiment& e, size_t n) {
  return "the " + std::to_string(n) + " chunks already stored are kept: finish with " +
         "heterodyne diff --resume " + e.path();
}

static RunEnd run_missing(store::Experiment& e, Session& s,
                          const std::vector<std::vector<int32_t>>& chunks,
                          const ProgressFn& progress) {
  fatal::set_resume_hint(e.published() ? kept_chunks(e, e.finished_chunks().size())
                                       : nothing_stored(e));
  try {
    const int missing = run_chunks(e, s, chunks, progress);
    fatal::set_resume_hint("");
    return {missing, e.published()};
  } catch (const RuntimeError& err) {
    fatal::set_resume_hint("");
    if (!e.published()) throw RuntimeError(std::string(err.what()) + "; " + nothing_stored(e));
    std::string kept = "the chunks already stored are kept: finish with heterodyne diff --resume " +
                       e.path();
    try {
      kept = kept_chunks(e, e.finished_chunks().size());
    } catch (const std::exception&) {
    }
    throw RuntimeError(std::string(err.what()) + "; " + kept);
  }
}

static int run_chunks(store::Experiment& e, Session& s,
                       const std::vector<std::vector<int32_t>>& chunks,
                       const ProgressFn& progress) {
  const auto done_list = e.finished_chunks();
  const std::set<int> done(done_list.begin(), done_list.end());
  const int total = static_cast<int>(chunks.size());
  int finished = static_cast<int>(done.size());
  using clock = std::chrono::steady_clock;
  const int to_run = total - finished;
  int ran = 0;
  nlohmann::json reported_reuse;
  for (int c = 0; c < total; ++c) {
    if (done.count(c)) continue;
    if (stop_requested()) break;
    const auto t0 = clock::now();
    // Transplants make a chunk long (two passes per restore point): report every few seconds,
    // with an estimate of what is left of the whole run.
    auto last = t0;
    s.on_pass([&](int pass, int passes) {
      const auto now = clock::now();
      if (now - last < std::chrono::seconds(5)) return;
      last = now;
      const double chunk_s = std::chrono::duration<double>(now - t0).count() / pass * passes;
      const double left = chunk_s * (passes - pass) / passes + chunk_s * (to_run - ran - 1);
      progress(fmt::format("chunk {}/{}: patched pass {}/{}, about {:.0f} s left", finished + 1,
                           total, pass, passes, left));
    });
    analysis::ChunkResult r = s.compute(c, chunks[static_cast<size_t>(c)]);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    e.put_chunk(r, s.pieces_of(r));
    e.publish();  // the file appears (or replaces the old one) with its first chunk
    // Which tails prefix reuse verified (or fell back from) is known after the first chunk.
    if (const auto reuse = s.prefix_reuse_report(); reuse != reported_reuse) {
      reported_reuse = reuse;
      set_provenance(e, "prefix_reuse", reuse);
      for (const char* arm : {"a", "b"}) {
        if (reuse.contains(arm) && !reuse[arm]["fell_back"].empty()) {
          progress(fmt::format(
              "prefix reuse: arm {}'s model cut at layers {} does not reproduce its own "
              "full pass bitwise; those patches run full passes",
              arm, reuse[arm]["fell_back"].dump()));
        }
      }
    }
    ++finished;
    ++ran;
    fatal::set_resume_hint(kept_chunks(e, static_cast<size_t>(finished)));
    double kl = 0;
    size_t n = 0;
    for (const auto& p : r.diff.positions) {
      if (p.scored) kl += p.score.kl, ++n;
    }
    progress(fmt::format("chunk {}/{}  mean KL {:.6f}  {:.2f} s", finished, total,
                         n ? kl / static_cast<double>(n) : 0.0, r.seconds));
  }
  const int missing = total - finished;
  if (missing == 0) {
    set_provenance(e, "finished_at", now_utc());
    e.seal();
  }
  return missing;
}

// What a diff reads: the output may be none of them.
static std::vector<std::string> inputs_of(const DiffConfig& c) {
  return {c.a.model, c.b.model, c.text_file};
}

RunEnd diff_run(const DiffConfig& config, const std::string& out, bool replace,
                const std::string& command_line, const ProgressFn& progress) {
  validate(config);
  // Before minutes of loading and quantizing.
  store::Experiment::check_creatable(out, replace, inputs_of(config));
  const std::string text = read_text_file(config.text_file);
  Session s(config);
  size_t dropped = 0;
  const auto chunks = s.chunks_of(
      encodable_text(s.arm_a().model(), text, config.skip_unencodable, progress, &dropped));
  progress(fmt::format("{} chunks of {} tokens; A: {}  B: {}", chunks.size(), config.chunk,
                       s.arm_a().model_info().description, s.arm_b().model_info().description));
  store::Experiment e = store::Experiment::create(out, replace, inputs_of(s.config()));
  e.set_meta("kind", "diff");
  e.set_meta("config", to_json(s.config()).dump());
  e.set_meta("provenance", provenance(s, text, chunks, command_line, dropped).dump());
  return run_missing(e, s, chunks, progress);
}

RunEnd diff_resume(const std::string& path, const std::string& command_line,
                   const ProgressFn& progress, const std::string& text_again) {
  store::Experiment e = store::Experiment::open(path, true);
  if (!e.meta("config")) {
    throw InputError("'" + path +
                     "' holds no run: it was stopped before its configuration was stored "
                     "(run the diff again, with --force)");
  }
  if (e.meta("kind").value_or("") != "diff")
    throw InputError("'" + path + "' is not a diff experiment");
  if (e.meta("status").value_or("") == "complete") {
    progress("'" + path + "' is already complete");
    return {};
  }
  // Never seal rows that changed since they were stored.
  if (const auto altered = e.altered_chunks()) {
    throw InputError("'" + path + "': " + *altered +
                     "; it cannot be resumed (run the diff again, with --force)");
  }
  if (!e.finished_chunks().empty() && !e.records_chunk_hashes()) {
    progress("note: '" + path + "' predates per-chunk hashes: its stored chunks are kept "
             "unchecked");
  }
  const auto config = diff_config_from_json(nlohmann::json::parse(e.required_meta("config")));
  auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  // The text the run read (checked by its sha256), before minutes of loading the models.
  const std::string text =
      read_stored_text(config.text_file, prov, text_again, "heterodyne diff --resume " + path);
  Session s(config);
  // The models a stored run used must be the ones on disk now.
  if (auto change = s.model_change(prov["arms"])) throw InputError(*change + ": cannot resume");
  const auto chunks =
      s.chunks_of(encodable_text(s.arm_a().model(), text, config.skip_unencodable, progress));
  prov["resumed"].push_back({{"command_line", command_line}, {"at", now_utc()}});
  e.set_meta("provenance", prov.dump());
  progress(fmt::format("resuming: {} of {} chunks already stored", e.finished_chunks().size(),
                       chunks.size()));
  return run_missing(e, s, chunks, progress);
}

}  // namespace hd::run
