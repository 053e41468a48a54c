#include "run/floor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "analysis/invariance.h"
#include "analysis/kl.h"
#include "common/sha256.h"
#include "engine/arm.h"
#include "engine/model.h"
#include "engine/system.h"
#include "errors.h"
#include "run/session.h"
#include "run/text.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

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
  return c;
}

namespace {

// Every row of the exploration, and the pattern per thread count and flash-attention value.
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

// Memory: two runs' logits for every chunk (chunks × chunk × n_vocab floats each).
nlohmann::json explore(const FloorConfig& c, const std::shared_ptr<engine::Model>& model,
                       const std::vector<std::vector<int32_t>>& chunks,
                       const ProgressFn& progress) {
  const int first_output = first_scored_target(c.score_from, c.chunk) - 1;
  const size_t v = static_cast<size_t>(model->info().n_vocab);
  auto settings = [&](int ub, int threads, const std::string& fa) {
    engine::ArmSettings s = c.arm;
    s.flash_attn = fa;
    s.n_ubatch = std::min(ub, c.chunk);
    s.n_threads = threads > 0 ? threads : engine::default_threads();
    return s;
  };
  // A run's logits for every chunk, kept while the runs compared with it go.
  auto run_all = [&](const engine::ArmSettings& s) {
    engine::Arm arm(model, s, c.chunk);
    std::vector<std::vector<float>> out(chunks.size());
    for (size_t k = 0; k < chunks.size(); ++k) arm.run_chunk(chunks[k], nullptr, out[k], first_output);
    return out;
  };
  const engine::ArmSettings ref_s = settings(c.reference_ubatch, c.threads[0], c.flash_attn[0]);
  const std::vector<std::vector<float>> global_ref = run_all(ref_s);
  auto bitwise_equal = [&](const std::vector<std::vector<float>>& x,
                           const std::vector<std::vector<float>>& y) {
    for (size_t k = 0; k < x.size(); ++k) {
      if (std::memcmp(x[k].data(), y[k].data(), x[k].size() * sizeof(float)) != 0) return false;
    }
    return true;
  };
  std::set<int> effective;
  for (int ub : c.ubatches) effective.insert(std::min(ub, c.chunk));
  if (effective.size() < c.ubatches.size()) {
    progress(fmt::format("ubatches above the chunk ({}) run as one batch: {} distinct sizes",
                         c.chunk, effective.size()));
  }
  nlohmann::json rows = nlohmann::json::array(), patterns = nlohmann::json::array();
  analysis::ScoreScratch scratch;
  std::vector<float> logits;
  const size_t total = effective.size() * c.threads.size() * c.flash_attn.size();
  size_t done = 0;
  for (const std::string& fa : c.flash_attn) {
    for (int threads : c.threads) {
      // Batch invariance is about the split: each thread count and flash-attention value is
      // compared with its own run at the reference ubatch, which is compared with the reference.
      const engine::ArmSettings group_s = settings(c.reference_ubatch, threads, fa);
      const auto group_ref = run_all(group_s);
      std::vector<analysis::InvarianceRow> group;
      for (int ub : effective) {
        const engine::ArmSettings s = settings(ub, threads, fa);
        engine::Arm arm(model, s, c.chunk);
        size_t positions = 0, differing = 0, flips = 0;
        double kl_sum = 0, kl_max = 0;
        for (size_t k = 0; k < chunks.size(); ++k) {
          arm.run_chunk(chunks[k], nullptr, logits, first_output);
          const auto& ref = group_ref[k];
          for (int p = first_output; p < c.chunk - 1; ++p) {
            const size_t off = static_cast<size_t>(p - first_output) * v;
            ++positions;
            // Bitwise, not float ==: -0 and 0 differ, as a kernel's output bits do.
            if (std::memcmp(ref.data() + off, logits.data() + off, v * sizeof(float)) == 0) continue;
            ++differing;
            const auto sc = analysis::score_position({ref.data() + off, v}, {logits.data() + off, v},
                                                     chunks[k][static_cast<size_t>(p + 1)], scratch);
            kl_sum += sc.kl;
            kl_max = std::max(kl_max, sc.kl);
            flips += sc.top_a.id[0] != sc.top_b.id[0];
          }
        }
        group.push_back({ub, differing == 0});
        rows.push_back({{"n_ubatch", ub},
                        {"n_threads", s.n_threads},
                        {"flash_attn", fa},
                        {"identical", differing == 0},
                        {"positions", positions},
                        {"positions_differing", differing},
                        {"kl_mean", kl_sum / static_cast<double>(positions)},
                        {"kl_max", kl_max},
                        {"top1_change_rate", static_cast<double>(flips) / static_cast<double>(positions)}});
        if (++done % 16 == 0 || done == total) {
          progress(Progress::chunk(static_cast<int>(done), static_cast<int>(total),
                                   fmt::format("{}/{} runs", done, total)));
        }
      }
      patterns.push_back({{"n_threads", group_s.n_threads},
                          {"flash_attn", fa},
                          {"summary", analysis::invariance_pattern(group, c.chunk)},
                          {"same_as_reference", bitwise_equal(group_ref, global_ref)}});
    }
  }
  return {{"model", model->info().description},
          {"reference",
           {{"n_ubatch", ref_s.n_ubatch}, {"n_threads", ref_s.n_threads}, {"flash_attn", ref_s.flash_attn}}},
          {"cache_type_k", c.arm.cache_type_k},
          {"cache_type_v", c.arm.cache_type_v},
          {"chunk", c.chunk},
          {"chunks", chunks.size()},
          {"rows", rows},
          {"patterns", patterns}};
}

}  // namespace

void floor_run(const FloorConfig& c, const std::string& out, bool replace,
               const std::string& command_line, const ProgressFn& progress) {
  check_config(c);
  store::Experiment::check_creatable(out, replace, {c.arm.model, c.text_file});
  const std::string text = read_text_file(c.text_file);
  auto model = engine::model_load(c.arm.model);
  size_t dropped = 0;
  const auto chunks =
      chunk_text(*model, encodable_text(*model, text, c.skip_unencodable, progress, &dropped),
                 c.chunk, c.max_chunks);
  nlohmann::json prov = run_provenance(c.text_file, text, chunks, command_line);
  if (c.skip_unencodable) prov["text"]["unencodable_lines_dropped"] = dropped;
  prov["model_sha256"] = sha256_file(c.arm.model);
  const nlohmann::json result = explore(c, model, chunks, progress);
  store::Experiment e = store::Experiment::create(out, replace, {c.arm.model, c.text_file});
  store::set_kind(e, store::Kind::kFloor);
  e.set_meta("config", to_json(c).dump());
  prov["finished_at"] = now_utc();
  e.set_meta("provenance", prov.dump());
  e.set_meta("floor", result.dump());
  e.seal();
  e.publish();
}

// Each group's summary sentence follows from its rows, and its wording may be made more careful
// between versions (issue 16): verify compares every measurement, not the sentence.
static nlohmann::json without_wording(nlohmann::json floor) {
  for (auto& p : floor["patterns"]) p.erase("summary");
  return floor;
}

void floor_verify(const std::string& path, bool force, const ProgressFn& progress,
                  const std::string& text_again) {
  const store::Experiment e = store::Experiment::open(path, false);
  const FloorConfig c = floor_config_from_json(nlohmann::json::parse(e.required_meta("config")));
  const auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_llama_commit(prov, force);
  if (!force && prov["model_sha256"] != sha256_file(c.arm.model)) {
    throw InputError("the model is not the one this run used (--force to compare anyway)");
  }
  check_config(c);
  const std::string text =
      read_stored_text(c.text_file, prov, text_again, "heterodyne verify " + path);
  auto model = engine::model_load(c.arm.model);
  const auto chunks = chunk_text(*model, encodable_text(*model, text, c.skip_unencodable, progress),
                                 c.chunk, c.max_chunks);
  if (without_wording(explore(c, model, chunks, [](const Progress&) {})).dump() !=
      without_wording(nlohmann::json::parse(e.required_meta("floor"))).dump()) {
    throw RuntimeError("verify failed: the floor exploration does not reproduce");
  }
  progress("verify: every run of the floor exploration reproduces bitwise");
}

}  // namespace hd::run
