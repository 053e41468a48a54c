#include "kinds/echo/echo.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "analysis/kl.h"
#include "engine/model.h"
#include "common/sha256.h"
#include "errors.h"
#include "kinds/echo/echo_rows.h"
#include "kinds/registry.h"
#include "run/config.h"
#include "run/provenance.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::kinds {

nlohmann::json to_json(const EchoConfig& c) {
  nlohmann::json j = {{"a", run::to_json(c.a)},
                      {"text_file", c.text_file},
                      {"chunk", c.chunk},
                      {"max_chunks", c.max_chunks}};
  if (c.token_ids) j["token_ids"] = true;
  if (c.skip_unencodable) j["skip_unencodable"] = true;
  return j;
}

EchoConfig echo_config_from_json(const nlohmann::json& j) {
  EchoConfig c;
  c.a = run::arm_settings_from_json(j.at("a"));
  c.text_file = j.at("text_file");
  c.chunk = j.at("chunk");
  c.max_chunks = j.at("max_chunks");
  c.token_ids = j.value("token_ids", false);
  c.skip_unencodable = j.value("skip_unencodable", false);
  return c;
}

namespace {

// A's NLL of every next token of one chunk: position p predicts token p + 1.
std::vector<EchoRow> echo_chunk(engine::Arm& arm, int c, const std::vector<int32_t>& tokens) {
  std::vector<float> logits;
  arm.run_chunk(tokens, nullptr, logits);
  const size_t vocab = static_cast<size_t>(arm.model_info().n_vocab);
  std::vector<EchoRow> rows;
  for (size_t p = 0; p + 1 < tokens.size(); ++p) {
    const std::span<const float> row(logits.data() + p * vocab, vocab);
    rows.push_back({c, static_cast<int>(p), tokens[p + 1], analysis::nll(row, tokens[p + 1])});
  }
  return rows;
}

// The summary show prints (meta "echo"), from every stored row.
nlohmann::json summary(const store::Experiment& e, const EchoConfig& c) {
  const std::vector<EchoRow> rows = read_echo_rows(e);
  double sum = 0;
  int64_t finite = 0, infinite = 0;
  std::set<int> chunks;
  for (const EchoRow& r : rows) {
    chunks.insert(r.chunk);
    if (std::isinf(r.nll)) {
      ++infinite;
    } else {
      sum += r.nll, ++finite;
    }
  }
  const double mean = finite ? sum / static_cast<double>(finite) : NAN;
  nlohmann::json j = {{"model", c.a.model},
                      {"n_chunks", chunks.size()},
                      {"n_positions", rows.size()},
                      {"n_nll_infinite", infinite},
                      {"nll_mean", finite ? nlohmann::json(mean) : nlohmann::json()},
                      {"ppl", finite ? nlohmann::json(std::exp(mean)) : nlohmann::json()}};
  return j;
}

run::RunEnd run_chunks(store::Experiment& e, engine::Arm& arm, const EchoConfig& c,
                       const std::vector<std::vector<int32_t>>& chunks, std::set<int> done,
                       const ProgressFn& progress) {
  run::ChunkLoop loop;
  loop.command = std::string(kEchoKind);
  loop.total = static_cast<int>(chunks.size());
  loop.done = std::move(done);
  loop.run_chunk = [&](int ch, int) {
    const auto t0 = std::chrono::steady_clock::now();
    put_echo_chunk(e, echo_chunk(arm, ch, chunks[static_cast<size_t>(ch)]));
    return run::ChunkDone{
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  loop.before_seal = [&] { e.set_meta(std::string(kEchoKind), summary(e, c).dump()); };
  return run::run_chunk_loop(e, loop, progress);
}

struct Stored {
  EchoConfig config;
  nlohmann::json provenance;
};

void check_config(const EchoConfig& c) {
  if (c.chunk < 2) throw InputError("--chunk must be at least 2 (a position and the next)");
  if (c.max_chunks < 0) throw InputError("--max-chunks must be 0 (all) or more");
}

// The configuration and provenance of a stored echo, checked as a new run's.
Stored read_stored(const store::Experiment& e) {
  Stored s{echo_config_from_json(nlohmann::json::parse(e.stored_config())),
           nlohmann::json::parse(e.required_meta("provenance"))};
  check_config(s.config);
  return s;
}

// The sha256 of the model the run used, as its provenance records it.
std::string stored_model_sha256(const Stored& s) {
  return s.provenance.at("arms").at("a").at("model_sha256").get<std::string>();
}

std::vector<std::vector<int32_t>> stored_chunks(const Stored& s, const engine::Model& model,
                                                const run::InputPath& again,
                                                const std::string& how,
                                                const ProgressFn& progress) {
  const EchoConfig& c = s.config;
  const run::Input input =
      run::read_stored_input({c.text_file, c.token_ids}, s.provenance, again, how);
  auto chunks = run::input_chunks(model, input, c.skip_unencodable, c.chunk, c.max_chunks,
                                  progress);
  if (run::tokens_record(chunks) != s.provenance.at("tokens"))
    throw InputError("the text tokenizes differently than when the echo began");
  return chunks;
}

}  // namespace

run::RunEnd echo_run(const EchoConfig& c, const std::string& out, bool replace,
                     const std::string& command_line, const ProgressFn& progress) {
  check_config(c);
  store::Experiment::check_creatable(out, replace, {c.a.model, c.text_file});
  const run::Input input = run::read_input({c.text_file, c.token_ids}, c.skip_unencodable);
  auto model = engine::model_load(c.a.model);
  const auto chunks = run::input_chunks(*model, input, c.skip_unencodable, c.chunk,
                                        c.max_chunks, progress);
  engine::Arm arm(model, c.a, c.chunk);
  nlohmann::json prov = run::run_provenance(input, chunks, command_line);
  prov["arms"] = {{"a", run::arm_facts(arm, sha256_file(c.a.model))}};
  store::Experiment e = store::Experiment::create(out, replace, {c.a.model, c.text_file});
  store::set_kind(e, kEchoKind);
  e.set_meta("config", to_json(c).dump());
  e.set_meta("provenance", prov.dump());
  create_echo_table(e);
  return run_chunks(e, arm, c, chunks, {}, progress);
}

run::RunEnd echo_resume(const std::string& path, const std::string& command_line,
                        const ProgressFn& progress, const run::InputPath& again) {
  auto opened = open_to_resume(path, kEchoKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, false, true);  // never rows of two builds in one file
  const std::set<int> done = resumable_echo_chunks(e);  // never add to edited rows
  if (stored_model_sha256(s) != sha256_file(s.config.a.model))
    throw InputError("the model is not the one this echo used: cannot resume");
  auto model = engine::model_load(s.config.a.model);
  const auto chunks = stored_chunks(s, *model, again, "heterodyne echo --resume " + path, progress);
  engine::Arm arm(model, s.config.a, s.config.chunk);
  s.provenance["resumed"].push_back({{"command_line", command_line}, {"at", run::now_utc()}});
  e.set_meta("provenance", s.provenance.dump());
  return run_chunks(e, arm, s.config, chunks, done, progress);
}

void echo_verify(const std::string& path, const run::VerifyOptions& options, const ProgressFn& progress) {
  const bool force = options.force;
  const run::InputPath& again = options.input;
  const store::Experiment e = store::Experiment::open(path, false);
  const Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, force);
  if (!force && stored_model_sha256(s) != sha256_file(s.config.a.model))
    throw InputError("the model is not the one this run used (--force to compare anyway)");
  auto model = engine::model_load(s.config.a.model);
  const auto chunks = stored_chunks(s, *model, again, "heterodyne verify " + path, progress);
  engine::Arm arm(model, s.config.a, s.config.chunk);
  const std::vector<EchoRow> stored = read_echo_rows(e);
  size_t i = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (const EchoRow& r : echo_chunk(arm, static_cast<int>(c), chunks[c])) {
      const bool same = i < stored.size() && stored[i].chunk == r.chunk &&
                        stored[i].pos == r.pos && stored[i].token == r.token &&
                        std::memcmp(&stored[i].nll, &r.nll, sizeof r.nll) == 0;
      if (!same) {
        throw RuntimeError(fmt::format(
            "verify failed: chunk {} position {}: token {} NLL {} recomputed, {} stored", r.chunk,
            r.pos, r.token, r.nll,
            i < stored.size() ? fmt::format("chunk {} position {} token {} NLL {}",
                                            stored[i].chunk, stored[i].pos, stored[i].token,
                                            stored[i].nll)
                              : std::string("none")));
      }
      ++i;
    }
    progress(fmt::format("chunk {}/{}: identical", c + 1, chunks.size()));
  }
  if (i != stored.size()) throw RuntimeError("verify failed: the file holds rows no chunk gives");
  if (nlohmann::json::parse(e.required_meta(std::string(kEchoKind))) != summary(e, s.config))
    throw RuntimeError("verify failed: the stored summary is not the one its rows give");
  progress(Progress::result(fmt::format("verify: all {} chunks reproduce bitwise", chunks.size())));
}

}  // namespace hd::kinds
