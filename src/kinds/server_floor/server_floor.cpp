#include "kinds/server_floor/server_floor.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "analysis/kl.h"
#include "analysis/stats.h"
#include "common/json_number.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "engine/server_schedule.h"
#include "errors.h"
#include "kinds/registry.h"
#include "kinds/server_floor/server_floor_rows.h"
#include "report/rates.h"
#include "run/config.h"
#include "run/provenance.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::kinds {

nlohmann::json to_json(const ServerFloorConfig& c) {
  nlohmann::json j = {{"arm", run::to_json(c.arm)}, {"text_file", c.text_file},
                      {"chunk", c.chunk},           {"max_chunks", c.max_chunks},
                      {"trials", c.trials}};
  if (c.token_ids) j["token_ids"] = true;
  if (c.skip_unencodable) j["skip_unencodable"] = true;
  return j;
}

ServerFloorConfig server_floor_config_from_json(const nlohmann::json& j) {
  ServerFloorConfig c;
  c.arm = run::arm_settings_from_json(j.at("arm"));
  c.text_file = j.at("text_file");
  c.chunk = j.at("chunk");
  c.max_chunks = j.at("max_chunks");
  c.trials = j.at("trials");
  c.token_ids = j.value("token_ids", false);
  c.skip_unencodable = j.value("skip_unencodable", false);
  return c;
}

namespace {

// The plain arm for the whole run; a trial's arm is made for each chunk and freed after it
// (made once first, to refuse its settings and record its facts): one context per trial at once
// would hold every trial's KV cache and buffers.
struct Arms {
  std::shared_ptr<engine::Model> model;
  ServerFloorConfig config;
  std::unique_ptr<engine::Arm> plain;
};

Arms make_arms(std::shared_ptr<engine::Model> model, const ServerFloorConfig& c) {
  Arms a{model, c, std::make_unique<engine::Arm>(model, engine::plain_arm(c.arm), c.chunk)};
  return a;
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// One chunk: the plain arm once, then each trial against it, position by position (p predicts
// p + 1; the last position has no next token and is not scored, as in a diff).
std::vector<ServerFloorRow> floor_chunk(Arms& arms, int c, const std::vector<int32_t>& tokens) {
  std::vector<float> plain, trial;
  arms.plain->run_chunk(tokens, nullptr, plain);
  const size_t v = static_cast<size_t>(arms.plain->model_info().n_vocab);
  const size_t n = tokens.size() - 1;
  std::vector<ServerFloorRow> rows(n);
  std::vector<int32_t> first_top1(n);
  analysis::ScoreScratch scratch;
  for (size_t p = 0; p < n; ++p) {
    rows[p] = {c, static_cast<int>(p), 0, 0, 0, false, argmax({plain.data() + p * v, v})};
  }
  const int trials = arms.config.trials;
  for (int t = 0; t < trials; ++t) {
    engine::Arm(arms.model, engine::server_trial(arms.config.arm, t), arms.config.chunk)
        .run_chunk(tokens, nullptr, trial);
    for (size_t p = 0; p < n; ++p) {
      const std::span<const float> a(plain.data() + p * v, v), b(trial.data() + p * v, v);
      const double kl = analysis::kl_divergence(a, b, scratch);
      const int32_t top1 = argmax(b);
      ServerFloorRow& r = rows[p];
      r.kl_mean += kl;  // the sum until the last trial
      r.kl_max = std::max(r.kl_max, kl);
      r.flips += top1 != r.top1;
      if (t == 0) first_top1[p] = top1;
      r.varies = r.varies || top1 != first_top1[p];
    }
  }
  // The mean never above the largest: a sum of equal KLs divided back may round past it.
  for (ServerFloorRow& r : rows)
    r.kl_mean = std::min(r.kl_mean / static_cast<double>(trials), r.kl_max);
  return rows;
}

// The summary show prints (meta "server_floor"), from every stored row.
nlohmann::json summary(const store::Experiment& e, const ServerFloorConfig& c) {
  const std::vector<ServerFloorRow> rows = read_server_floor_rows(e);
  std::vector<double> dependent, varying;
  std::vector<int> chunk_of;
  double kl_sum = 0, kl_max = 0;
  std::set<int> chunks;
  for (const ServerFloorRow& r : rows) {
    chunks.insert(r.chunk);
    chunk_of.push_back(r.chunk);
    dependent.push_back(r.flips > 0 ? 1.0 : 0.0);
    varying.push_back(r.varies ? 1.0 : 0.0);
    kl_sum += r.kl_mean;
    kl_max = std::max(kl_max, r.kl_max);
  }
  // Never above the largest: a sum divided back may round past it.
  const double kl_mean =
      rows.empty() ? 0 : std::min(kl_sum / static_cast<double>(rows.size()), kl_max);
  return {{"model", c.arm.model},
          {"server", engine::server_flags(c.arm)},
          {"trials", c.trials},
          {"n_chunks", chunks.size()},
          {"n_positions", rows.size()},
          {"dependent", report::rate_json(analysis::cluster_rate(dependent, chunk_of))},
          {"varying", report::rate_json(analysis::cluster_rate(varying, chunk_of))},
          {"kl_mean", json_number(kl_mean)},
          {"kl_max", json_number(kl_max)}};
}

run::RunEnd run_chunks(store::Experiment& e, Arms& arms, const ServerFloorConfig& c,
                       const std::vector<std::vector<int32_t>>& chunks, std::set<int> done,
                       const ProgressFn& progress) {
  run::ChunkLoop loop;
  loop.command = std::string(kServerFloorKind);
  loop.total = static_cast<int>(chunks.size());
  loop.done = std::move(done);
  loop.run_chunk = [&](int ch, int) {
    const auto t0 = std::chrono::steady_clock::now();
    put_server_floor_chunk(e, floor_chunk(arms, ch, chunks[static_cast<size_t>(ch)]));
    return run::ChunkDone{
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  loop.before_seal = [&] { e.set_meta(std::string(kServerFloorKind), summary(e, c).dump()); };
  return run::run_chunk_loop(e, loop, progress);
}

struct Stored {
  ServerFloorConfig config;
  nlohmann::json provenance;
};

void check_config(const ServerFloorConfig& c) {
  if (c.chunk < 2) throw InputError("--chunk must be at least 2 (a position and the next)");
  if (c.max_chunks < 0) throw InputError("--max-chunks must be 0 (all) or more");
  if (c.trials < 1 || c.trials > 256)
    throw InputError("--trials must be between 1 and 256, not " + std::to_string(c.trials));
  // server_trial divides by the slots and adds to the seed (engine checks the rest of the arm).
  if (c.arm.slots < 1) throw InputError("slots must be at least 1");
  if (c.arm.slot < 0 || c.arm.slot >= c.arm.slots) {
    throw InputError("slot " + std::to_string(c.arm.slot) + " is not one of the " +
                     std::to_string(c.arm.slots) + " slots: give --slots above it");
  }
  if (c.arm.neighbour_seed < 0 || c.arm.neighbour_seed > (1 << 30))
    throw InputError("the neighbour seed must be between 0 and 2^30");
}

Stored read_stored(const store::Experiment& e) {
  Stored s{server_floor_config_from_json(nlohmann::json::parse(e.stored_config())),
           nlohmann::json::parse(e.required_meta("provenance"))};
  check_config(s.config);
  return s;
}

std::string stored_model_sha256(const Stored& s) {
  return s.provenance.at("arms").at("plain").at("model_sha256").get<std::string>();
}

std::vector<std::vector<int32_t>> stored_chunks(const Stored& s, const engine::Model& model,
                                                const run::InputPath& again,
                                                const std::string& how, const ProgressFn& progress) {
  const ServerFloorConfig& c = s.config;
  const run::Input input = run::read_stored_input({c.text_file, c.token_ids}, s.provenance, again, how);
  auto chunks = run::input_chunks(model, input, c.skip_unencodable, c.chunk, c.max_chunks, progress);
  if (run::tokens_record(chunks) != s.provenance.at("tokens"))
    throw InputError("the text tokenizes differently than when the server floor began");
  return chunks;
}

}  // namespace

run::RunEnd server_floor_run(const ServerFloorConfig& c, const std::string& out, bool replace,
                             const std::string& command_line, const ProgressFn& progress) {
  check_config(c);
  store::Experiment::check_creatable(out, replace, {c.arm.model, c.text_file});
  const run::Input input = run::read_input({c.text_file, c.token_ids}, c.skip_unencodable);
  auto model = engine::model_load(c.arm.model);
  const auto chunks = run::input_chunks(*model, input, c.skip_unencodable, c.chunk, c.max_chunks, progress);
  Arms arms = make_arms(model, c);
  nlohmann::json prov = run::run_provenance(input, chunks, command_line);
  const std::string sha = sha256_file(c.arm.model);
  {  // trial 0's arm, made once to refuse its settings and record its facts, then freed
    const engine::Arm first_trial(model, engine::server_trial(c.arm, 0), c.chunk);
    prov["arms"] = {{"plain", run::arm_facts(*arms.plain, sha)},
                    {"server", run::arm_facts(first_trial, sha)}};
  }
  store::Experiment e = store::Experiment::create(out, replace, {c.arm.model, c.text_file});
  store::set_kind(e, kServerFloorKind);
  e.set_meta("config", to_json(c).dump());
  e.set_meta("provenance", prov.dump());
  create_server_floor_table(e);
  return run_chunks(e, arms, c, chunks, {}, progress);
}

run::RunEnd server_floor_resume(const std::string& path, const std::string& command_line,
                                const ProgressFn& progress, const run::InputPath& again) {
  auto opened = open_to_resume(path, kServerFloorKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, false, true);
  const std::set<int> done = resumable_server_floor_chunks(e);
  if (stored_model_sha256(s) != sha256_file(s.config.arm.model))
    throw InputError("the model is not the one this server floor used: cannot resume");
  auto model = engine::model_load(s.config.arm.model);
  const auto chunks = stored_chunks(s, *model, again, "heterodyne server-floor --resume " + path, progress);
  Arms arms = make_arms(model, s.config);
  s.provenance["resumed"].push_back({{"command_line", command_line}, {"at", run::now_utc()}});
  e.set_meta("provenance", s.provenance.dump());
  return run_chunks(e, arms, s.config, chunks, done, progress);
}

void server_floor_verify(const std::string& path, const run::VerifyOptions& options,
                         const ProgressFn& progress) {
  const store::Experiment e = store::Experiment::open(path, false);
  const Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, options.force);
  if (!options.force && stored_model_sha256(s) != sha256_file(s.config.arm.model))
    throw InputError("the model is not the one this run used (--force to compare anyway)");
  auto model = engine::model_load(s.config.arm.model);
  const auto chunks = stored_chunks(s, *model, options.input, "heterodyne verify " + path, progress);
  Arms arms = make_arms(model, s.config);
  const std::vector<ServerFloorRow> stored = read_server_floor_rows(e);
  size_t i = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (const ServerFloorRow& r : floor_chunk(arms, static_cast<int>(c), chunks[c])) {
      const bool same = i < stored.size() && stored[i].chunk == r.chunk && stored[i].pos == r.pos &&
                        std::memcmp(&stored[i].kl_mean, &r.kl_mean, sizeof r.kl_mean) == 0 &&
                        std::memcmp(&stored[i].kl_max, &r.kl_max, sizeof r.kl_max) == 0 &&
                        stored[i].flips == r.flips && stored[i].varies == r.varies &&
                        stored[i].top1 == r.top1;
      if (!same) {
        throw RuntimeError(fmt::format("verify failed: chunk {} position {}: mean KL {} recomputed, "
                                       "the stored row differs", r.chunk, r.pos, r.kl_mean));
      }
      ++i;
    }
    progress(fmt::format("chunk {}/{}: identical", c + 1, chunks.size()));
  }
  if (i != stored.size()) throw RuntimeError("verify failed: the file holds rows no chunk gives");
  if (nlohmann::json::parse(e.required_meta(std::string(kServerFloorKind))) != summary(e, s.config))
    throw RuntimeError("verify failed: the stored summary is not the one its rows give");
  progress(Progress::result(fmt::format("verify: all {} chunks reproduce bitwise", chunks.size())));
}

}  // namespace hd::kinds
