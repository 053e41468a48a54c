#include "kinds/generate/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/sha256.h"
#include "engine/generation.h"
#include "engine/point_survey.h"
#include "engine/quantize.h"
#include "engine/server_schedule.h"
#include "errors.h"
#include "kinds/generate/generate_prompts.h"
#include "kinds/generate/generate_rows.h"
#include "kinds/generate/generate_summary.h"
#include "kinds/generate/generate_transplant.h"
#include "kinds/registry.h"
#include "run/arms.h"
#include "run/config.h"
#include "run/provenance.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::kinds {

nlohmann::json to_json(const GenerateConfig& c) {
  nlohmann::json j = {{"a", run::to_json(c.a)},          {"b", run::to_json(c.b)},
                      {"prompts_file", c.prompts_file},  {"max_tokens", c.max_tokens},
                      {"max_prompts", c.max_prompts},    {"trials", c.trials},
                      {"transplants", c.transplants}};
  if (c.chat) j["chat"] = true;
  if (!c.b_quant.empty()) j["b_quant"] = c.b_quant;
  if (c.temperature > 0) {
    j["temperature"] = c.temperature;
    j["seed"] = c.seed;
  }
  return j;
}

GenerateConfig generate_config_from_json(const nlohmann::json& j) {
  GenerateConfig c;
  c.a = run::arm_settings_from_json(j.at("a"));
  c.b = run::arm_settings_from_json(j.at("b"));
  c.prompts_file = j.at("prompts_file");
  c.max_tokens = j.at("max_tokens");
  c.max_prompts = j.at("max_prompts");
  c.trials = j.at("trials");
  c.transplants = j.at("transplants");
  c.chat = j.value("chat", false);
  c.b_quant = j.value("b_quant", std::string());
  c.temperature = j.value("temperature", 0.0);
  c.seed = j.value("seed", 0u);
  return c;
}

void check_generate_config(const GenerateConfig& c) {
  if (c.max_tokens < 1 || c.max_tokens > 4096)
    throw InputError("--max-tokens must be between 1 and 4096, not " + std::to_string(c.max_tokens));
  if (c.max_prompts < 0) throw InputError("--max-prompts must be 0 (all) or more");
  if (c.trials < 1 || c.trials > 256)
    throw InputError("--trials must be between 1 and 256, not " + std::to_string(c.trials));
  if (c.trials > 1 && !engine::is_server_arm(c.b)) {
    throw InputError("--trials " + std::to_string(c.trials) + " needs B to be a server arm (--b-server, "
                     "--b-slots, --b-neighbours …): a plain arm generates the same tokens every time");
  }
  if (c.trials > 1 && (c.b.slots < 1 || c.b.neighbour_seed < 0 || c.b.neighbour_seed > (1 << 30)))
    throw InputError("B's slots must be at least 1 and its neighbour seed between 0 and 2^30");
  // The trials take slot (K + t) mod slots: a K past the slots would be moved, not refused.
  if (c.trials > 1 && (c.b.slot < 0 || c.b.slot >= c.b.slots)) {
    throw InputError("slot " + std::to_string(c.b.slot) + " is not one of B's " +
                     std::to_string(c.b.slots) + " slots: give --b-slots above it");
  }
  if (!(c.temperature >= 0 && c.temperature <= 100))
    throw InputError("--temp must be between 0 (greedy) and 100");
  if (c.temperature > 0 && c.seed == engine::kRandomSeed)
    throw InputError("--seed 4294967295 is llama.cpp's \"draw a random seed\": give another, so that "
                     "both arms (and verify) draw the same");
}

namespace {

// With --b-quant, B's model is A's quantized (made once and cached, engine/quantize.h): made again
// where a resume or verify runs on a machine without the cached file. Called once A has loaded:
// a file llama.cpp cannot read then fails with its own line, not in the quantizer.
void resolve_quantized_b(GenerateConfig& c) {
  if (c.b_quant.empty()) return;
  c.b.model = engine::ensure_quantized(c.a.model, c.b_quant, c.a.n_threads > 0 ? c.a.n_threads : 2);
}

// The prompts' tokens, as provenance "tokens" records them.
std::vector<std::vector<int32_t>> prompt_tokens(const std::vector<Prompt>& prompts) {
  std::vector<std::vector<int32_t>> ids;
  for (const Prompt& p : prompts) ids.push_back(p.tokens);
  return ids;
}

// The arms of one run: A, and B's trial 0 (a later trial's arm is made for its prompt and freed
// after it: one context per trial at once would hold every trial's KV cache).
struct Generator {
  GenerateConfig config;
  std::shared_ptr<engine::Model> model_a, model_b;
  int n_ctx = 0;
  std::unique_ptr<engine::Arm> a, b;
  std::optional<engine::PointMap> map;  // where transplants run
  std::string no_transplants;           // why they do not ("" where they do)
};

// `model_a`: A's model, already loaded to read the prompts.
Generator make_generator(const GenerateConfig& c, std::shared_ptr<engine::Model> model_a,
                         const std::vector<Prompt>& prompts) {
  Generator g;
  g.config = c;
  g.model_a = std::move(model_a);
  g.model_b = c.b.model == c.a.model ? g.model_a : engine::model_load(c.b.model);
  run::check_comparable(*g.model_a, *g.model_b, run::Pairing::kLayers);
  size_t longest = 0;
  for (const Prompt& p : prompts) longest = std::max(longest, p.tokens.size());
  g.n_ctx = static_cast<int>(longest) + c.max_tokens;
  for (const auto* m : {g.model_a.get(), g.model_b.get()}) {
    if (m->info().n_ctx_train > 0 && g.n_ctx > m->info().n_ctx_train) {
      throw InputError(fmt::format("the longest prompt ({} tokens) and --max-tokens {} need {} "
                                   "positions, and '{}' was trained on {}: give shorter prompts "
                                   "or fewer tokens", longest, c.max_tokens, g.n_ctx,
                                   m->info().path, m->info().n_ctx_train));
    }
  }
  // A server arm's slots share the training context (check_server_settings says so for a chunk):
  // said here in generate's terms.
  for (const auto* arm : {&c.a, &c.b}) {
    const int train = (arm == &c.a ? g.model_a : g.model_b)->info().n_ctx_train;
    if (arm->slots > 1 && train > 0 && static_cast<int64_t>(g.n_ctx) * arm->slots > train) {
      throw InputError(fmt::format("a server of {} slots holds {} tokens per slot of this model's "
                                   "{}-token context, less than the longest prompt and --max-tokens "
                                   "({}): give fewer slots, shorter prompts or fewer tokens",
                                   arm->slots, train / arm->slots, train, g.n_ctx));
    }
  }
  g.a = std::make_unique<engine::Arm>(g.model_a, c.a, g.n_ctx);
  g.b = std::make_unique<engine::Arm>(g.model_b, c.trials > 1 ? engine::server_trial(c.b, 0) : c.b,
                                      g.n_ctx);
  if (!c.transplants) {
    g.no_transplants = "not asked for (--no-transplants)";
  } else if (c.temperature > 0) {
    g.no_transplants = "sampled tokens are draws, not top-1s: a transplant restores a top-1";
  } else {
    engine::PointMap map = engine::survey_points(g.model_a);
    if (map.transplants()) {
      g.map = std::move(map);
    } else {
      g.no_transplants = map.no_transplants;
    }
  }
  return g;
}

std::unique_ptr<engine::Sampler> sampler_of(const Generator& g) {
  if (g.config.temperature <= 0) return nullptr;
  return std::make_unique<engine::Sampler>(*g.model_a, static_cast<float>(g.config.temperature),
                                           g.config.seed);
}

PromptResult generate_prompt(Generator& g, int index, const Prompt& prompt) {
  const GenerateConfig& c = g.config;
  PromptResult r{index, prompt.text, prompt.tokens, {}, {}, {}};
  r.a = generate_completion(*g.a, *g.model_a, prompt.tokens, c.max_tokens, sampler_of(g).get());
  bool transplanted = false;
  for (int t = 0; t < c.trials; ++t) {
    std::unique_ptr<engine::Arm> own;
    if (t > 0) own = std::make_unique<engine::Arm>(g.model_b, engine::server_trial(c.b, t), g.n_ctx);
    engine::Arm& b = own ? *own : *g.b;
    r.b.push_back(generate_completion(b, *g.model_a, prompt.tokens, c.max_tokens, sampler_of(g).get()));
    Parting p;
    p.parted = parting_index(r.a, r.b.back());
    p.common = p.parted >= 0 ? p.parted
                             : static_cast<int>(std::min(r.a.tokens.size(), r.b.back().tokens.size()));
    if (p.parted >= 0 && g.map && !transplanted) {  // the first trial that parts
      std::vector<int32_t> sequence = prompt.tokens;
      for (int i = 0; i < p.parted; ++i) sequence.push_back(r.a.tokens[static_cast<size_t>(i)].token);
      p.transplant = parting_transplant(*g.a, b, *g.map, sequence,
                                        r.a.tokens[static_cast<size_t>(p.parted)].token)
                         .dump();
      transplanted = true;
    }
    r.partings.push_back(std::move(p));
  }
  return r;
}

run::RunEnd run_prompts(store::Experiment& e, Generator& g, const std::vector<Prompt>& prompts,
                        std::set<int> done, const ProgressFn& progress) {
  run::ChunkLoop loop;
  loop.command = std::string(kGenerateKind);
  loop.unit = "prompt";
  loop.total = static_cast<int>(prompts.size());
  loop.done = std::move(done);
  if (const auto shard = run::stored_shard(e)) loop.owns = [s = *shard](int p) { return s.owns(p); };
  loop.run_chunk = [&](int p, int) {
    const auto t0 = std::chrono::steady_clock::now();
    put_generate_prompt(e, *g.model_a, generate_prompt(g, p, prompts[static_cast<size_t>(p)]));
    return run::ChunkDone{
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  // The summary names the arms as the file stores them (a --b-quant B is the cache path of the
  // machine that began the run, wherever it is resumed).
  loop.before_seal = [&] {
    const GenerateConfig stored = generate_config_from_json(nlohmann::json::parse(e.stored_config()));
    e.set_meta(std::string(kGenerateKind), generate_summary(e, stored, g.no_transplants).dump());
  };
  return run::run_chunk_loop(e, loop, progress);
}

// The texts readers see (show, the page, export) are the model's: an edited piece is caught here,
// as every number is by the regeneration.
bool pieces_are_the_models(const PromptResult& r, const engine::Model& m) {
  const auto same = [&](const Completion& c) {
    for (const GeneratedToken& t : c.tokens) {
      if (t.piece != token_piece(m, t.token)) return false;
      for (size_t k = 0; k < analysis::kTopK; ++k) {
        if (t.top_pieces[k] != token_piece(m, t.top.id[k])) return false;
      }
    }
    return true;
  };
  return same(r.a) && std::all_of(r.b.begin(), r.b.end(), same);
}

struct Stored {
  GenerateConfig config;
  nlohmann::json provenance;
};

Stored read_stored(const store::Experiment& e) {
  Stored s{generate_config_from_json(nlohmann::json::parse(e.stored_config())),
           nlohmann::json::parse(e.required_meta("provenance"))};
  check_generate_config(s.config);
  return s;
}

// The models on disk are the run's (each hashed as its provenance recorded): `what` is refused.
void require_same_models(const Stored& s, const std::string& what) {
  for (const char* arm : {"a", "b"}) {
    const std::string& path = arm[0] == 'a' ? s.config.a.model : s.config.b.model;
    if (s.provenance.at("arms").at(arm).at("model_sha256").get<std::string>() != sha256_file(path))
      throw InputError("'" + path + "' is not the model this generate run used: " + what);
  }
}

// `how` and `flag`: the command that reads them again and its flag for them, for the messages.
std::vector<Prompt> stored_prompts(const Stored& s, const engine::Model& model,
                                   const run::InputPath& again, const std::string& how,
                                   const std::string& flag) {
  const GenerateConfig& c = s.config;
  const run::Input input =
      run::read_stored_input({c.prompts_file, false}, s.provenance, again, how, flag);
  auto prompts = read_prompts(model, c.prompts_file, input.bytes, c.chat, c.max_prompts);
  if (run::tokens_record(prompt_tokens(prompts)) != s.provenance.at("tokens"))
    throw InputError("the prompts tokenize differently than when this generate run began");
  return prompts;
}

}  // namespace

run::RunEnd generate_run(const GenerateConfig& config, const std::string& out, bool replace,
                         const std::string& command_line, const ProgressFn& progress,
                         const std::optional<run::Shard>& shard) {
  check_generate_config(config);
  // Before a quantization of minutes: the output must be writable (and, once B is known, not B).
  store::Experiment::check_creatable(out, replace, {config.a.model, config.prompts_file});
  auto model_a = engine::model_load(config.a.model);
  GenerateConfig c = config;
  resolve_quantized_b(c);
  store::Experiment::check_creatable(out, replace, {c.a.model, c.b.model, c.prompts_file});
  const run::Input input = run::read_input({c.prompts_file, false}, false);
  const auto prompts = read_prompts(*model_a, c.prompts_file, input.bytes, c.chat, c.max_prompts);
  Generator g = make_generator(c, model_a, prompts);
  nlohmann::json prov = run::run_provenance(input, prompt_tokens(prompts), command_line);
  prov["arms"] = {{"a", run::arm_facts(*g.a, sha256_file(c.a.model))},
                  {"b", run::arm_facts(*g.b, sha256_file(c.b.model))}};
  if (g.map) prov["points"] = engine::to_json(*g.map);
  prov["no_transplants"] = g.no_transplants;
  store::Experiment e = store::Experiment::create(out, replace, {c.a.model, c.b.model, c.prompts_file});
  store::set_kind(e, kGenerateKind);
  if (shard) {
    run::store_shard(e, *shard);
    prov["shard"] = {{"index", shard->index}, {"count", shard->count}};
    prov["placement"] = run::placement_facts();
    progress(fmt::format("shard {}: its {} prompts", shard->name(),
                         shard->chunks_of(static_cast<int>(prompts.size()))));
  }
  e.set_meta("config", to_json(c).dump());
  e.set_meta("provenance", prov.dump());
  create_generate_tables(e);
  return run_prompts(e, g, prompts, {}, progress);
}

run::RunEnd generate_resume(const std::string& path, const std::string& command_line,
                            const ProgressFn& progress, const run::InputPath& again) {
  auto opened = open_to_resume(path, kGenerateKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, false, true);
  const std::set<int> done = resumable_generate_prompts(e);
  auto model_a = engine::model_load(s.config.a.model);
  resolve_quantized_b(s.config);  // --b-quant: this machine's cached file, hashed below
  require_same_models(s, "cannot resume");
  const auto prompts =
      stored_prompts(s, *model_a, again, "heterodyne generate --resume " + path, "--prompts");
  Generator g = make_generator(s.config, model_a, prompts);
  nlohmann::json resumed = {{"command_line", command_line}, {"at", run::now_utc()}};
  if (run::stored_shard(e)) resumed["placement"] = run::placement_facts();
  s.provenance["resumed"].push_back(resumed);
  e.set_meta("provenance", s.provenance.dump());
  return run_prompts(e, g, prompts, done, progress);
}

void generate_verify(const std::string& path, const run::VerifyOptions& options,
                     const ProgressFn& progress) {
  const store::Experiment e = store::Experiment::open(path, false);
  Stored s = read_stored(e);
  const GenerateConfig as_stored = s.config;  // what the summary names
  run::require_same_numerics(s.provenance, options.force);
  auto model_a = engine::model_load(s.config.a.model);
  resolve_quantized_b(s.config);  // --b-quant: this machine's cached file, hashed below
  if (!options.force) require_same_models(s, "--force to compare anyway");
  const auto prompts = stored_prompts(s, *model_a, options.input, "heterodyne verify " + path, "-f");
  Generator g = make_generator(s.config, model_a, prompts);
  const std::vector<PromptResult> stored = read_generate_prompts(e);
  const auto shard = run::stored_shard(e);
  const int total = static_cast<int>(prompts.size());
  if (static_cast<int>(stored.size()) != (shard ? shard->chunks_of(total) : total))
    throw RuntimeError("verify failed: the file holds another number of prompts than its input gives");
  for (const PromptResult& r : stored) {
    if (r.prompt < 0 || r.prompt >= total || (shard && !shard->owns(r.prompt)))
      throw RuntimeError("verify failed: the file holds a prompt its input does not give it");
    if (!same_result(generate_prompt(g, r.prompt, prompts[static_cast<size_t>(r.prompt)]), r) ||
        !pieces_are_the_models(r, *g.model_a)) {
      throw RuntimeError(fmt::format("verify failed: prompt {} generates another completion, "
                                     "parting or transplant than the file holds", r.prompt));
    }
    progress(fmt::format("prompt {}/{}: identical", r.prompt + 1, prompts.size()));
  }
  if (nlohmann::json::parse(e.required_meta(std::string(kGenerateKind))) !=
      generate_summary(e, as_stored, g.no_transplants))
    throw RuntimeError("verify failed: the stored summary is not the one its rows give");
  progress(Progress::result(fmt::format("verify: all {} prompts generate the same tokens, bit for bit", stored.size())));
}

std::vector<int> stored_generate_prompts(const store::Experiment& part) {
  std::vector<int> out;
  for (const PromptResult& r : read_generate_prompts(part)) out.push_back(r.prompt);
  return out;
}

std::optional<std::string> finish_merged_generate(store::Experiment& merged, int n_prompts) {
  try {
    const std::set<int> stored = resumable_generate_prompts(merged);
    for (int p = 0; p < n_prompts; ++p) {
      if (!stored.count(p)) return "the parts hold no rows of prompt " + std::to_string(p);
    }
    if (static_cast<int>(stored.size()) != n_prompts) return std::string("the parts hold prompts the run has not");
  } catch (const InputError& altered) {
    return std::string(altered.what());
  }
  const Stored s = read_stored(merged);
  merged.set_meta(std::string(kGenerateKind),
                  generate_summary(merged, s.config, s.provenance.value("no_transplants", "")).dump());
  return std::nullopt;
}

}  // namespace hd::kinds
