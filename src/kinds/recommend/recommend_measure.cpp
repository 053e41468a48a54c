#include "kinds/recommend/recommend_measure.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "analysis/kl.h"
#include "common/output_file.h"
#include "engine/arm.h"
#include "errors.h"
#include "run/scoring.h"

namespace hd::run {
namespace {

engine::ArmSettings arm_of(const std::string& path) {
  engine::ArmSettings s;
  s.model = path;
  return s;
}

}  // namespace

RecipePlan plan_recipe(const std::string& model, const std::string& base_type,
                       const std::vector<std::string>& types, int layers_per_group,
                       int n_threads) {
  RecipePlan p;
  p.base_path = engine::ensure_quantized(model, base_type, n_threads);
  p.base = engine::gguf_layout(p.base_path);
  std::vector<std::string> names;
  uint64_t grouped = 0;
  for (const engine::GgufTensor& t : p.base.tensors) {
    p.base_types[t.name] = t.type;
    if (!engine::is_quantized_type(t.type)) continue;
    names.push_back(t.name);
    p.tensors[t.name] = t;
    grouped += engine::padded(t.bytes, p.base.alignment);
  }
  if (names.empty())
    throw InputError(base_type + " quantizes no tensor of '" + model + "': nothing to choose");
  p.fixed_bytes = p.base.file_size - grouped;
  p.groups = analysis::tensor_groups(names, layers_per_group);
  for (const analysis::TensorGroup& g : p.groups) {
    std::vector<uint64_t> per_type;
    for (const std::string& type : types) {
      uint64_t sum = 0;
      for (const std::string& name : g.tensors) {
        const engine::GgufTensor& t = p.tensors.at(name);
        const auto b = engine::tensor_bytes(type, t.ne0, t.n_elements);
        if (!b) {
          sum = 0;
          break;
        }
        sum += engine::padded(*b, p.base.alignment);
      }
      per_type.push_back(sum);
    }
    p.bytes.push_back(std::move(per_type));
  }
  return p;
}

Start start_at(const RecipePlan& plan, const std::map<std::string, std::string>& types) {
  Start s{types, {}, {}};
  for (const analysis::TensorGroup& g : plan.groups) {
    uint64_t bytes = 0;
    std::vector<std::string> seen;
    for (const std::string& name : g.tensors) {
      const engine::GgufTensor& t = plan.tensors.at(name);
      const std::string& type = types.at(name);
      // A type the start holds was read back from a file: its bytes divide the rows.
      bytes += engine::padded(*engine::tensor_bytes(type, t.ne0, t.n_elements), plan.base.alignment);
      if (std::find(seen.begin(), seen.end(), type) == seen.end()) seen.push_back(type);
    }
    std::string label;
    for (const auto& t : seen) label += (label.empty() ? "" : "+") + t;
    s.bytes.push_back(bytes);
    s.label.push_back(label);
  }
  return s;
}

Measurer::Measurer(std::shared_ptr<engine::Model> a, int chunk, ScoredText calibration,
                   ScoredText held_out)
    : a_(std::move(a)), chunk_(chunk), calibration_(std::move(calibration)),
      held_out_(std::move(held_out)) {}

ScoredText Measurer::score_a(const std::shared_ptr<engine::Model>& a, int chunk,
                             std::vector<std::vector<int32_t>> chunks) {
  ScoredText t;
  engine::Arm arm(a, arm_of(a->info().path), chunk);
  const size_t n_vocab = static_cast<size_t>(a->info().n_vocab);
  for (const auto& c : chunks) {
    std::vector<float> logits;
    arm.run_chunk(c, nullptr, logits);
    logits.resize((c.size() - 1) * n_vocab);  // the last position predicts nothing in the chunk
    t.logits_a.push_back(std::move(logits));
  }
  t.chunks = std::move(chunks);
  return t;
}

TextScore Measurer::score(const std::string& model_path, const ScoredText& text) const {
  engine::Arm arm(engine::model_load(model_path), arm_of(model_path), chunk_);
  const size_t n_vocab = static_cast<size_t>(a_->info().n_vocab);
  analysis::ScoreScratch scratch;
  ScoreTotals totals;
  std::vector<float> logits;
  for (size_t c = 0; c < text.chunks.size(); ++c) {
    const auto& tokens = text.chunks[c];
    arm.run_chunk(tokens, nullptr, logits);
    const PassRows rows{text.logits_a[c], logits, n_vocab, tokens, 0};
    score_positions(rows, 0, static_cast<int>(tokens.size()) - 1, scratch,
                    [&](int, const analysis::PositionScore& s) { totals.add(s); });
  }
  return {totals.kl_mean(), totals.flip_rate()};
}

std::vector<engine::TensorTypeOverride> pinned_overrides(
    const RecipePlan& plan, const std::map<std::string, std::string>& types) {
  std::vector<engine::TensorTypeOverride> out;
  for (const engine::GgufTensor& t : plan.base.tensors) {
    if (!engine::is_quantized_type(t.type)) continue;
    out.push_back({analysis::exact_name_pattern(t.name), types.at(t.name)});
  }
  return out;
}

std::vector<std::string> types_not_taken(const std::string& path,
                                         const std::map<std::string, std::string>& expected) {
  std::vector<std::string> out;
  for (const engine::GgufTensor& t : engine::gguf_layout(path).tensors) {
    const auto it = expected.find(t.name);
    if (it == expected.end()) {
      out.push_back(t.name + " is in the file but not in the base");
    } else if (it->second != t.type) {
      out.push_back(t.name + " is " + t.type + ", not " + it->second);
    }
  }
  return out;
}

std::vector<store::SensitivityRow> Measurer::group_rows(
    int round, int g, const RecipePlan& plan, const Start& start, const std::string& model_a,
    const std::string& base_type, const std::vector<std::string>& types,
    const std::string& scratch, const ProgressFn& progress) const {
  if (g == 0) {  // the start itself, what every delta of the round is measured from
    uint64_t bytes = 0;
    for (uint64_t b : start.bytes) bytes += b;
    std::string path = plan.base_path;  // round 0: the stock file
    OutputFile made(scratch, OutputPolicy(true));  // never committed: removed when done
    if (round > 0) {
      engine::quantize_with_overrides(model_a, made.temporary(), base_type,
                                      pinned_overrides(plan, start.types), 0, OutputPolicy(true));
      if (const auto wrong = types_not_taken(made.temporary(), start.types); !wrong.empty())
        throw RuntimeError("round " + std::to_string(round) + "'s start did not take: " +
                           wrong.front());
      path = made.temporary();
    }
    // The held-out text only in round 0: it is for the rank check, which reads round 0.
    const TextScore c = score(path, calibration_);
    const TextScore h = round == 0 ? score(path, held_out_) : TextScore{NAN, NAN};
    return {{round, 0, round == 0 ? "(base)" : fmt::format("(recipe {})", round),
             round == 0 ? base_type : "start", bytes, "measured", c.kl_mean, h.kl_mean,
             c.top1_change_rate}};
  }
  const analysis::TensorGroup& group = plan.groups[static_cast<size_t>(g - 1)];
  std::vector<store::SensitivityRow> rows;
  for (size_t t = 0; t < types.size(); ++t) {
    store::SensitivityRow r{round, g, group.name, types[t], plan.bytes[g - 1][t], "",
                            NAN, NAN, NAN};
    if (r.bytes == 0) {
      r.status = "does not fit its rows";
    } else if (start.label[g - 1] == types[t]) {
      r.status = "start";  // the round's start already gives the group this type
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      std::map<std::string, std::string> expected = start.types;
      for (const auto& name : group.tensors) expected[name] = types[t];
      OutputFile variant(scratch, OutputPolicy(true));  // never committed: removed when done
      engine::quantize_with_overrides(model_a, variant.temporary(), base_type,
                                      pinned_overrides(plan, expected), 0, OutputPolicy(true));
      const auto wrong = types_not_taken(variant.temporary(), expected);
      bool outside = false;
      for (const auto& w : wrong) {
        const std::string name = w.substr(0, w.find(' '));
        if (std::find(group.tensors.begin(), group.tensors.end(), name) == group.tensors.end())
          outside = true;
      }
      if (outside) {
        throw RuntimeError("moving " + group.name + " to " + types[t] +
                           " changed a tensor outside the group: " + wrong.front());
      }
      if (!wrong.empty()) {
        r.status = "falls back: " + wrong.front();
      } else {
        const TextScore c = score(variant.temporary(), calibration_);
        const TextScore h = round == 0 ? score(variant.temporary(), held_out_) : TextScore{NAN, NAN};
        r.status = "measured";
        r.kl_calibration = c.kl_mean;
        r.kl_held_out = h.kl_mean;
        r.top1_calibration = c.top1_change_rate;
      }
      Progress p(fmt::format("  {}{} at {}: {}", round > 0 ? fmt::format("round {}: ", round) : "",
                             group.name, types[t], r.status));
      p.event = Progress::Event::kPass;
      p.pass = static_cast<int>(t + 1);
      p.passes = static_cast<int>(types.size());
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      progress(p);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace hd::run
