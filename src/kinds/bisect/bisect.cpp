#include "kinds/bisect/bisect.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/stop.h"
#include "errors.h"
#include "engine/gguf_file.h"
#include "kinds/bisect/bisect_op.h"
#include "kinds/bisect/bisect_probe.h"
#include "kinds/bisect/bisect_state.h"
#include "kinds/registry.h"
#include "run/config.h"
#include "run/input.h"
#include "run/provenance.h"
#include "run/shard.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::kinds {

using bisect::Built;
using bisect::Outcome;
using bisect::State;

nlohmann::json to_json(const BisectConfig& c) {
  // "model" as every one-arm kind names it (serve's list reads it).
  nlohmann::json j = {{"model", c.arm.model}, {"arm", run::to_json(c.arm)}, {"text_file", c.text_file},
                      {"good", c.good}, {"bad", c.bad}, {"llama_src", c.llama_src},
                      {"build_options", c.build_options}, {"criterion", c.criterion},
                      {"chunk", c.chunk}, {"max_chunks", c.max_chunks},
                      {"decode_steps", c.decode_steps}};
  if (c.token_ids) j["token_ids"] = true;
  return j;
}

BisectConfig bisect_config_from_json(const nlohmann::json& j) {
  BisectConfig c;
  c.arm = run::arm_settings_from_json(j.at("arm"));
  c.text_file = j.at("text_file").get<std::string>();
  c.token_ids = j.value("token_ids", false);
  c.good = j.at("good").get<std::string>();
  c.bad = j.at("bad").get<std::string>();
  c.llama_src = j.at("llama_src").get<std::string>();
  c.build_options = j.at("build_options").get<std::string>();
  c.criterion = j.at("criterion").get<std::string>();
  c.chunk = j.at("chunk").get<int>();
  c.max_chunks = j.at("max_chunks").get<int>();
  c.decode_steps = j.at("decode_steps").get<int>();
  return c;
}

namespace {

// A build that took less than this was found in the cache.
constexpr double kCachedBuildSeconds = 20;

// The probes a search may still need: the bad one if not yet probed, then halving what is open.
int probes_left(const State& s) {
  const int n = static_cast<int>(s.candidates.size());
  const auto seen = s.outcomes();
  const bisect::Step step = bisect::next_step(n, seen);
  if (step.probe < 0) return 0;
  if (step.probe == n - 1) return bisect::probes_needed(n);
  int open = 0;
  for (int i = step.last_same + 1; i < step.first_bad; ++i) open += seen.count(i) ? 0 : 1;
  return bisect::probes_needed(open + 2) - 1;  // ⌈log2(open + 1)⌉
}

// A probe's time: its build, as the builds that compiled took (a cached one takes seconds and
// says nothing of the next; before any, five minutes: llama.cpp on a small machine), and its diff.
std::string estimate(const State& s) {
  double built = 0, diffed = 0;
  int n_built = 0, n_diffed = 0;
  for (const auto& p : s.probes) {
    if (const double b = p.value("build_seconds", 0.0); b > kCachedBuildSeconds) {
      built += b;
      ++n_built;
    }
    if (p.contains("diff_seconds")) {
      diffed += p["diff_seconds"].get<double>();
      ++n_diffed;
    }
  }
  const double each = (n_built > 0 ? built / n_built : 300.0) + (n_diffed > 0 ? diffed / n_diffed : 0.0);
  const int left = probes_left(s);
  return fmt::format("{} more probe(s) where none is skipped, about {:.0f} min where their builds are not cached",
                     left, left * each / 60.0);
}

std::string why_not_diffed(const State& s, const std::string& good_worker, const std::string& msg) {
  // The first diff names no build: run the good one against itself to say which cannot.
  try {
    bisect::diff_builds(s.config, good_worker, good_worker);
  } catch (const std::exception& e) {  // the input, or the good build: its message says which
    return std::string("the diff of the good build (") + s.candidates.front().name +
           ") against itself fails too: " + e.what();
  }
  return "the bad build (" + s.candidates.back().name + ") cannot run the model: " + msg;  // the probe's
}

// Builds the good candidate: every probe's arm A.
std::string good_worker(const State& s, const ProgressFn& progress) {
  const Built g = bisect::build_candidate(s.config, s.candidates.front(), s.clone, progress);
  if (stop_requested()) throw Stopped("stopped while building the good build");
  if (!g.error.empty())
    throw InputError("the good build (" + s.candidates.front().name + ") does not build: " + g.error);
  return g.worker;
}

// One probe of candidate `i`, recorded in s.probes.
void probe(State& s, int i, const std::string& good, const ProgressFn& progress) {
  const int n = static_cast<int>(s.candidates.size());
  const bisect::Candidate& k = s.candidates[static_cast<size_t>(i)];
  progress(fmt::format("probe {}: {} ({} of {} candidates; {})", s.probes.size() + 1, k.name,
                       i + 1, n, estimate(s)));
  nlohmann::json p = {{"candidate", i}, {"name", k.name}};
  const Built b = bisect::build_candidate(s.config, k, s.clone, progress);
  // Ctrl-C reaches the build too: what it interrupted is not a build that fails.
  if (stop_requested()) throw Stopped("stopped while building " + k.name);
  p["build_seconds"] = b.seconds;
  if (!b.error.empty()) {
    if (i == n - 1) throw InputError("the bad build (" + k.name + ") does not build: " + b.error);
    p["outcome"] = "skipped";
    p["reason"] = "does not build: " + b.error;
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      p["figures"] = bisect::diff_builds(s.config, good, b.worker);
      p["outcome"] = bisect::differs(p["figures"], s.config.criterion) ? "differs" : "same";
    } catch (const Stopped&) {
      throw;
    } catch (const std::exception& e) {
      if (stop_requested()) throw Stopped("stopped during the diff of " + k.name);
      // Skipped only when the good build still diffs against itself: otherwise the fault is
      // the good build's, the input's or the machine's, and no candidate is to blame.
      const std::string why = why_not_diffed(s, good, e.what());
      if (i == n - 1 || why.rfind("the bad build", 0) != 0) throw InputError(why);
      p["outcome"] = "skipped";
      p["reason"] = std::string("cannot run the model: ") + e.what();
    }
    p["diff_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  progress("  " + k.name + ": " + p["outcome"].get<std::string>() +
           (p.contains("figures")
                ? fmt::format(" (mean KL {:.4g}, {} flips)", p["figures"]["kl_mean"].get<double>(),
                              p["figures"]["flips"].get<int64_t>())
                : " (" + p.value("reason", "") + ")"));
  s.probes.push_back(std::move(p));
}

// A stop: the probes that can still be needed are what "to go" counts (at least the op search's
// one step when none is).
run::RunEnd stopped(const store::Experiment& e, const State& s) {
  return {std::max(1, probes_left(s)), e.published(), "probe"};
}

run::RunEnd search(store::Experiment& e, State& s, const ProgressFn& progress) {
  std::string good;
  try {
    good = good_worker(s, progress);
  } catch (const Stopped&) {
    return stopped(e, s);
  }
  const int n = static_cast<int>(s.candidates.size());
  for (;;) {
    const bisect::Step step = bisect::next_step(n, s.outcomes());
    if (step.probe < 0) break;
    try {
      if (stop_requested()) throw Stopped("stopped");
      probe(s, step.probe, good, progress);
    } catch (const Stopped&) {  // the probes stored are kept: --resume goes on from them
      return stopped(e, s);
    }
    e.set_meta("bisect_probes", s.probes.dump());
    e.publish();  // the file appears with its first probe
  }
  nlohmann::json op = nullptr;
  const bisect::Step end = bisect::next_step(n, s.outcomes());
  if (end.first_bad >= 0 && end.verdict != "no change") {
    const bisect::Candidate& k = s.candidates[static_cast<size_t>(end.first_bad)];
    const Built b = bisect::build_candidate(s.config, k, s.clone, progress);
    if (stop_requested()) return stopped(e, s);  // --resume looks for the op again
    // An empty worker would be this binary's own build: never compared in the probe's place.
    if (!b.error.empty()) throw RuntimeError(k.name + " no longer builds: " + b.error);
    try {
      op = bisect::first_divergence(s.config, good, b.worker, progress);
    } catch (const std::exception& x) {
      if (stop_requested()) return stopped(e, s);
      // The verdict stands without it: kept, with why the op was not found.
      op = {{"error", x.what()}};
    }
    if (stop_requested()) return stopped(e, s);
  }
  e.set_meta(std::string(kBisectKind), bisect::bisect_document(s, op).dump());
  auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  prov["finished_at"] = run::now_utc();
  e.set_meta("provenance", prov.dump());
  e.seal();
  e.publish();
  return {0, true, "probe"};
}

}  // namespace

void check_bisect_config(const BisectConfig& c) {
  if (c.text_file.empty() || c.text_file == "-")
    throw InputError("bisect reads its text once per probe: give it as a file (-f FILE)");
  if (c.good.empty() || c.bad.empty()) throw InputError("bisect needs --good and --bad");
  if (c.chunk < 2) throw InputError("--chunk must be at least 2");
  if (c.max_chunks < 0) throw InputError("--max-chunks must not be negative");
  if (c.decode_steps < 0) throw InputError("--decode must not be negative");
  if (c.llama_src.empty() && (bisect::release_of(c.good).empty() || bisect::release_of(c.bad).empty()))
    throw InputError("without --llama-src, --good and --bad are releases: npm:node-llama-cpp@X.Y.Z");
  // The model and the text, before minutes of building: a probe would find them only then.
  engine::gguf_check(c.arm.model);
  (void)run::read_input({c.text_file, c.token_ids}, false);
}

run::RunEnd bisect_run(const BisectConfig& c, const std::string& out, bool replace,
                       const std::string& command_line, const ProgressFn& progress) {
  check_bisect_config(c);
  store::Experiment::check_creatable(out, replace, {c.arm.model, c.text_file});
  State s = bisect::new_state(c, progress);
  store::Experiment e = store::Experiment::create(out, replace, {c.arm.model, c.text_file});
  store::set_kind(e, kBisectKind);
  e.set_meta("config", to_json(c).dump());
  e.set_meta("bisect_candidates", bisect::to_json(s.candidates).dump());
  e.set_meta("provenance", nlohmann::json({{"command_line", command_line},
                                           {"started_at", run::now_utc()},
                                           {"clone", s.clone},
                                           {"machine", run::placement_facts()}}).dump());
  return search(e, s, progress);
}

run::RunEnd bisect_resume(const std::string& path, const std::string& command_line,
                          const ProgressFn& progress) {
  auto opened = open_to_resume(path, kBisectKind, progress);
  if (!opened) return {0, true, "probe"};
  store::Experiment& e = *opened;
  State s = bisect::stored_state(e);
  auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  prov["resumed"].push_back({{"command_line", command_line}, {"at", run::now_utc()}});
  e.set_meta("provenance", prov.dump());
  progress(fmt::format("resuming: {} probe(s) already stored", s.probes.size()));
  return search(e, s, progress);
}

}  // namespace hd::kinds
