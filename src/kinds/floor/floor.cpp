#include "kinds/floor/floor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "common/sha256.h"
#include "engine/arm.h"
#include "engine/model.h"
#include "engine/threads.h"
#include "errors.h"
#include "run/chunk_loop.h"
#include "kinds/floor/floor_explore.h"
#include "run/input.h"
#include "run/provenance.h"
#include "run/session.h"
#include "kinds/registry.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"
#include "kinds/floor/floor_rows.h"

namespace hd::run {

std::vector<int> parse_int_list(const std::string& spec) {
  std::vector<int> out;
  size_t start = 0;
  auto number = [&](const std::string& s) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size() || v < 1) {
      throw InputError("'" + spec + "' is not a list of positive integers (like 1..64,128,256)");
    }
    return v;
  };
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    if (const size_t dots = item.find(".."); dots != std::string::npos) {
      const int lo = number(item.substr(0, dots)), hi = number(item.substr(dots + 2));
      if (hi < lo || hi - lo > 100000) throw InputError("'" + item + "' is not a range lo..hi");
      for (int v = lo; v <= hi; ++v) out.push_back(v);
    } else {
      out.push_back(number(item));
    }
    start = comma + 1;
  }
  return out;
}

const std::set<std::string>& floor_swept_settings() {
  static const std::set<std::string> swept = {"n_ubatch", "n_threads", "flash_attn"};
  return swept;
}

// The arm's settings sit at the top level, beside the lists (its "flash_attn" is the list):
// files from before device, layers, RPC and llama.cpp build read as this binary's CPU.
nlohmann::json to_json(const FloorConfig& c) {
  nlohmann::json j = {{"text_file", c.text_file},
                      {"ubatches", c.ubatches},
                      {"threads", c.threads},
                      {"flash_attn", c.flash_attn},
                      {"reference_ubatch", c.reference_ubatch},
                      {"chunk", c.chunk},
                      {"max_chunks", c.max_chunks},
                      {"score_from", c.score_from}};
  arm_settings_into_json(j, c.arm, floor_swept_settings(), true);
  if (c.skip_unencodable) j["skip_unencodable"] = true;
  if (c.token_ids) j["token_ids"] = true;
  return j;
}

FloorConfig floor_config_from_json(const nlohmann::json& j) {
  FloorConfig c;
  arm_settings_from_json(j, c.arm, floor_swept_settings());
  c.text_file = j.at("text_file");
  c.ubatches = j.at("ubatches").get<std::vector<int>>();
  c.threads = j.at("threads").get<std::vector<int>>();
  c.flash_attn = j.at("flash_attn").get<std::vector<std::string>>();
  c.reference_ubatch = j.at("reference_ubatch");
  c.chunk = j.at("chunk");
  c.max_chunks = j.at("max_chunks");
  c.score_from = j.at("score_from");
  c.skip_unencodable = j.value("skip_unencodable", false);
  c.token_ids = j.value("token_ids", false);
  return c;
}

namespace {

void check_config(const FloorConfig& c) {
  DiffConfig dc;  // for the shared checks of chunk and score-from
  dc.chunk = c.chunk;
  dc.max_chunks = c.max_chunks;
  dc.score_from = c.score_from;
  validate(dc);
  if (c.ubatches.empty() || c.threads.empty() || c.flash_attn.empty()) {
    throw InputError("floor needs at least one ubatch, thread count and flash-attention value");
  }
}

// The groups not yet in the file (`done` are), one transaction each; meta "floor" (the
// header show prints above the rows) is written when the last is stored.
RunEnd run_groups(store::Experiment& e, FloorExplorer& x, const std::set<int>& done,
                  const ProgressFn& progress) {
  ChunkLoop loop;
  loop.command = "floor";
  loop.unit = "group";
  loop.total = x.groups();
  loop.done = done;
  loop.run_chunk = [&](int g, int) {
    const auto t0 = std::chrono::steady_clock::now();
    store::put_floor_group(e, x.group(g));
    return ChunkDone{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  loop.before_seal = [&] { e.set_meta("floor", x.header().dump()); };
  return run_chunk_loop(e, loop, progress);
}

// The model, the text and its chunks of a stored floor, checked against its provenance.
struct Loaded {
  std::shared_ptr<engine::Model> model;
  std::vector<std::vector<int32_t>> chunks;
};
Loaded load_stored(const FloorConfig& c, const nlohmann::json& prov, const InputPath& again,
                   const std::string& again_command, const ProgressFn& progress) {
  const Input input = read_stored_input({c.text_file, c.token_ids}, prov, again, again_command);
  Loaded l{engine::model_load(c.arm.model), {}};
  l.chunks = input_chunks(*l.model, input, c.skip_unencodable, c.chunk, c.max_chunks, progress);
  return l;
}

// Thread count 0 means this machine's default and a device is found by name: groups run here
// must run as the stored ones did, or the file would mix two machines' references.
void require_same_arm(const nlohmann::json& prov, const engine::ArmSettings& reference,
                      const std::shared_ptr<engine::Model>& model, int chunk) {
  const nlohmann::json stored = prov.at("arms").at("reference");
  const nlohmann::json now =
      arm_facts(engine::Arm(model, reference, chunk), prov.value("model_sha256", ""));
  if (stored.at("n_threads_used") != now.at("n_threads_used") ||
      stored.at("runs_on") != now.at("runs_on") ||
      prov.value("default_threads", engine::allowed_cpus()) != engine::allowed_cpus()) {
    throw InputError("this floor ran with " + stored.at("n_threads_used").dump() + " threads on " +
                     stored.at("runs_on").dump() +
                     ": resume it where it ran (here: " + now.at("n_threads_used").dump() +
                     " threads on " + now.at("runs_on").dump() + ")");
  }
}

}  // namespace

RunEnd floor_run(const FloorConfig& c, const std::string& out, bool replace,
                 const std::string& command_line, const ProgressFn& progress) {
  check_config(c);
  store::Experiment::check_creatable(out, replace, {c.arm.model, c.text_file});
  const Input input = read_input({c.text_file, c.token_ids}, c.skip_unencodable);
  auto model = engine::model_load(c.arm.model);
  size_t dropped = 0;
  const auto chunks =
      input_chunks(*model, input, c.skip_unencodable, c.chunk, c.max_chunks, progress, &dropped);
  nlohmann::json prov = run_provenance(input, chunks, command_line);
  if (c.skip_unencodable) prov["text"]["unencodable_lines_dropped"] = dropped;
  prov["model_sha256"] = sha256_file(c.arm.model);
  prov["default_threads"] = engine::allowed_cpus();  // what a thread count of 0 ran with
  store::Experiment e = store::Experiment::create(out, replace, {c.arm.model, c.text_file});
  store::set_kind(e, kinds::kFloorKind);
  e.set_meta("config", to_json(c).dump());
  FloorExplorer x(c, model, chunks, progress);
  // The reference run's arm; the others differ from it in n_ubatch, n_threads or flash_attn.
  prov["arms"] = {{"reference", arm_facts(engine::Arm(model, x.reference_settings(), c.chunk),
                                          prov["model_sha256"])}};
  e.set_meta("provenance", prov.dump());
  store::create_floor_tables(e);
  return run_groups(e, x, {}, progress);
}

RunEnd floor_resume(const std::string& path, const std::string& command_line,
                    const ProgressFn& progress, const InputPath& again) {
  auto opened = kinds::open_to_resume(path, kinds::kFloorKind, progress);
  if (!opened) return {0, true, "group"};
  store::Experiment& e = *opened;
  if (!store::has_floor_tables(e))
    throw InputError("'" + path + "' is damaged: its floor tables are missing");
  const FloorConfig c = floor_config_from_json(nlohmann::json::parse(e.stored_config()));
  check_config(c);
  auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_numerics(prov, false, true);  // never rows of two builds in one file
  // Before minutes of loading, and before anything is written: never add to edited rows.
  const int n_groups = static_cast<int>(c.flash_attn.size() * c.threads.size());
  const auto done = store::stored_floor_groups(e, n_groups);
  if (prov.value("model_sha256", "") != sha256_file(c.arm.model))
    throw InputError("the model is not the one this floor used: cannot resume");
  const Loaded l = load_stored(c, prov, again, "heterodyne floor --resume " + path, progress);
  if (tokens_record(l.chunks) != prov.at("tokens"))
    throw InputError("the text tokenizes differently than when the floor began: cannot resume");
  FloorExplorer x(c, l.model, l.chunks, progress);
  require_same_arm(prov, x.reference_settings(), l.model, c.chunk);
  prov["resumed"].push_back({{"command_line", command_line}, {"at", now_utc()}});
  e.set_meta("provenance", prov.dump());
  progress(fmt::format("resuming: {} of {} groups already stored", done.size(), n_groups));
  return run_groups(e, x, done, progress);
}

// The first measurement of `again` (recomputed) that differs from `stored`, described; the
// pattern sentences aside: they follow from the rows, and their wording may be made more
// careful between versions (issue 16).
static std::optional<std::string> first_difference(const std::vector<store::FloorGroup>& stored,
                                                   const std::vector<store::FloorGroup>& again) {
  if (stored.size() != again.size())
    return fmt::format("{} groups stored, {} recomputed", stored.size(), again.size());
  for (size_t g = 0; g < stored.size(); ++g) {
    auto as_json = [](const store::FloorGroup& x) {
      store::FloorGroup y = x;
      y.summary.clear();
      return store::floor_groups_json({y});
    };
    const nlohmann::json s = as_json(stored[g]), a = as_json(again[g]);
    if (s["patterns"] != a["patterns"] || s["rows"].size() != a["rows"].size())
      return fmt::format("group {}: stored {}, recomputed {}", g, s["patterns"][0].dump(),
                         a["patterns"][0].dump());
    for (size_t i = 0; i < s["rows"].size(); ++i) {
      // Dumped, so that every double compares by its shortest exact digits (-0 and 0 differ).
      if (s["rows"][i].dump() != a["rows"][i].dump())
        return fmt::format("group {}: stored {}, recomputed {}", g, s["rows"][i].dump(),
                           a["rows"][i].dump());
    }
  }
  return std::nullopt;
}

void floor_verify(const std::string& path, const VerifyOptions& options,
                  const ProgressFn& progress) {
  const bool force = options.force;
  const InputPath& input_again = options.input;
  const store::Experiment e = store::Experiment::open(path, false);
  const FloorConfig c = floor_config_from_json(nlohmann::json::parse(e.stored_config()));
  const auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_numerics(prov, force);
  if (!force && prov["model_sha256"] != sha256_file(c.arm.model)) {
    throw InputError("the model is not the one this run used (--force to compare anyway)");
  }
  check_config(c);
  const nlohmann::json header = nlohmann::json::parse(e.required_meta("floor"));
  if (!store::has_floor_tables(e))
    throw InputError("'" + path + "' is damaged: its floor tables are missing");
  const std::vector<store::FloorGroup> stored = store::read_floor_groups(e);
  const Loaded l = load_stored(c, prov, input_again, "heterodyne verify " + path, progress);
  FloorExplorer x(c, l.model, l.chunks, [](const Progress&) {});
  if (x.header() != header)
    throw RuntimeError("verify failed: the floor's model or chunks are not those stored");
  std::vector<store::FloorGroup> again;
  for (int g = 0; g < x.groups(); ++g) {
    again.push_back(x.group(g));
    progress(fmt::format("group {}/{} recomputed", g + 1, x.groups()));
  }
  if (const auto d = first_difference(stored, again))
    throw RuntimeError("verify failed: the floor exploration does not reproduce: " + *d);
  progress(Progress::result("verify: every run of the floor exploration reproduces bitwise"));
}

}  // namespace hd::run
