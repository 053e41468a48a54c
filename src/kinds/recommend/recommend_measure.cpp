#include "kinds/recommend/recommend_measure.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "common/output_file.h"
#include "engine/arm.h"
#include "errors.h"
#include "kinds/recommend/recommend_variants.h"

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
                   ScoredText held_out, bool reuse)
    : a_(std::move(a)), reuse_(reuse), calibration_(std::move(calibration)),
      held_out_(std::move(held_out)), runner_(a_, chunk, reuse) {
  if (reuse_) {  // --no-reuse scores each position whole, as recommend did before
    keep_a_reference(calibration_, static_cast<size_t>(a_->info().n_vocab));
    keep_a_reference(held_out_, static_cast<size_t>(a_->info().n_vocab));
  }
}

Measurer::~Measurer() = default;

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
  return runner_.score(model_path, text);
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

// The round's start, made (spliced) and passed over both texts once, its rows kept for the
// variants; a resumed round makes it again from the same types, to the same bytes.
const Measurer::RoundStart& Measurer::round_start(int round, const RecipePlan& plan,
                                                  const Start& start, const std::string& scratch,
                                                  const ProgressFn& progress) {
  if (round_.round == round) return round_;
  round_ = RoundStart{};
  round_.path = plan.base_path;  // round 0: the stock file
  if (round > 0) {
    round_.file = std::make_unique<OutputFile>(
        (std::filesystem::path(scratch).parent_path() / "start.gguf").string(),
        OutputPolicy(true));  // never committed: removed when done
    maker_->make(plan.base_path, plan.base_types, start.types, round_.file->temporary());
    if (const auto wrong = types_not_taken(round_.file->temporary(), start.types); !wrong.empty())
      throw RuntimeError("round " + std::to_string(round) + "'s start did not take: " +
                         wrong.front());
    round_.path = round_.file->temporary();
  }
  PassRunner::Contexts model = runner_.open(round_.path, calibration_.chunks.size());
  round_.calibration =
      runner_.score(model, calibration_, &round_.calibration_rows, nullptr, 0, nullptr);
  // The held-out text only in round 0: it is for the rank check, which reads round 0.
  round_.held_out = round == 0
                        ? runner_.score(model, held_out_, &round_.held_out_rows, nullptr, 0,
                                        nullptr)
                        : TextScore{NAN, NAN};
  const std::string why_not =
      runner_.prove_starts(round_.path, calibration_, round_.calibration_rows);
  if (!why_not.empty()) {
    progress(fmt::format("round {}'s start: every variant's pass runs from the tokens: {}", round,
                         why_not));
    if (!round_.calibration_rows.chunks.empty()) {
      // Passes that kept rows gave other logits: scored again without, as plain passes.
      round_.calibration_rows = {};
      round_.held_out_rows = {};
      round_.calibration = runner_.score(model, calibration_, nullptr, nullptr, 0, nullptr);
      if (round == 0)
        round_.held_out = runner_.score(model, held_out_, nullptr, nullptr, 0, nullptr);
    }
  } else if (const auto [proven, points] = runner_.proven_starts(); points > 0) {
    progress(fmt::format("round {}'s start: variants' passes may start at {} of its {} points "
                         "(each proven on the start)",
                         round, proven, points));
  }
  round_.round = round;
  return round_;
}

store::SensitivityRow Measurer::variant_row(int round, int g, const RecipePlan& plan,
                                            const Start& start, size_t t,
                                            const std::vector<std::string>& types,
                                            const std::string& scratch,
                                            const ProgressFn& progress) {
  const analysis::TensorGroup& group = plan.groups[static_cast<size_t>(g - 1)];
  store::SensitivityRow r{round, g, group.name, types[t], plan.bytes[g - 1][t], "",
                          NAN, NAN, NAN};
  if (r.bytes == 0) {
    r.status = "does not fit its rows";
    return r;
  }
  if (start.label[g - 1] == types[t]) {
    r.status = "start";  // the round's start already gives the group this type
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const RoundStart& from = round_start(round, plan, start, scratch, progress);
  std::map<std::string, std::string> expected = start.types;
  for (const auto& name : group.tensors) expected[name] = types[t];
  OutputFile variant(scratch, OutputPolicy(true));  // never committed: removed when done
  maker_->make(from.path, start.types, expected, variant.temporary());
  const auto wrong = types_not_taken(variant.temporary(), expected);
  for (const auto& w : wrong) {
    const std::string name = w.substr(0, w.find(' '));
    if (std::find(group.tensors.begin(), group.tensors.end(), name) == group.tensors.end())
      throw RuntimeError("moving " + group.name + " to " + types[t] +
                         " changed a tensor outside the group: " + w);
  }
  if (!wrong.empty()) {
    r.status = "falls back: " + wrong.front();
  } else {
    // Every tensor before the group's first point is the start's: its passes start there, once
    // the group's first variant proved it.
    int k = runner_.start_for(group.tensors);
    PassRunner::Contexts model = runner_.open(variant.temporary(), calibration_.chunks.size());
    std::string proof;
    const bool proving = k > 0 && !round_.group_proofs.count(g);
    if (k > 0 && !proving && !round_.group_proofs.at(g).empty()) k = -1;
    const TextScore c = runner_.score(model, calibration_, nullptr, &from.calibration_rows, k,
                                      proving ? &proof : nullptr);
    if (proving) {
      round_.group_proofs[g] = proof;
      if (!proof.empty()) {
        progress("note: " + group.name + "'s variants run from the tokens: " + proof);
        k = -1;
      }
    }
    const TextScore h = round == 0
                            ? runner_.score(model, held_out_, nullptr, &from.held_out_rows, k,
                                            nullptr)
                            : TextScore{NAN, NAN};
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
  return r;
}

void Measurer::release() {
  maker_.reset();
  round_ = RoundStart{};
}

std::vector<store::SensitivityRow> Measurer::group_rows(
    int round, int g, const RecipePlan& plan, const Start& start, const std::string& model_a,
    const std::string& base_type, const std::vector<std::string>& types,
    const std::string& scratch, const ProgressFn& progress) {
  if (!maker_) {
    maker_ = std::make_unique<VariantMaker>(
        plan, model_a, base_type, types,
        std::filesystem::path(scratch).parent_path().string(), reuse_, progress);
  }
  if (g == 0) {  // the start itself, what every delta of the round is measured from
    uint64_t bytes = 0;
    for (uint64_t b : start.bytes) bytes += b;
    const RoundStart& s = round_start(round, plan, start, scratch, progress);
    return {{round, 0, round == 0 ? "(base)" : fmt::format("(recipe {})", round),
             round == 0 ? base_type : "start", bytes, "measured", s.calibration.kl_mean,
             s.held_out.kl_mean, s.calibration.top1_change_rate}};
  }
  std::vector<store::SensitivityRow> rows;
  for (size_t t = 0; t < types.size(); ++t)
    rows.push_back(variant_row(round, g, plan, start, t, types, scratch, progress));
  return rows;
}

}  // namespace hd::run
