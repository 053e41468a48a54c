#include "kinds/length_curve/length_curve.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "analysis/kl.h"
#include "analysis/tap_diff.h"
#include "common/json_number.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"
#include "kinds/length_curve/length_curve_rows.h"
#include "kinds/registry.h"
#include "run/arms.h"
#include "run/config.h"
#include "run/provenance.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::kinds {

nlohmann::json to_json(const LengthCurveConfig& c) {
  nlohmann::json j = {{"a", run::to_json(c.a)},
                      {"b", run::to_json(c.b)},
                      {"text_file", c.text_file},
                      {"lengths", c.lengths}};
  if (c.token_ids) j["token_ids"] = true;
  if (c.skip_unencodable) j["skip_unencodable"] = true;
  return j;
}

LengthCurveConfig length_curve_config_from_json(const nlohmann::json& j) {
  LengthCurveConfig c;
  c.a = run::arm_settings_from_json(j.at("a"));
  c.b = run::arm_settings_from_json(j.at("b"));
  c.text_file = j.at("text_file");
  c.lengths = j.at("lengths").get<std::vector<int>>();
  c.token_ids = j.value("token_ids", false);
  c.skip_unencodable = j.value("skip_unencodable", false);
  return c;
}

nlohmann::json curve_document(const LengthCurveConfig& c, const std::vector<LengthRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const LengthRow& r : rows) {
    // json_number: +inf (B masks a token A gives mass) as "inf", never a null it is not.
    nlohmann::json row = {{"length", r.length},
                          {"rel_err", json_number(r.rel_err)},
                          {"max_abs", json_number(r.max_abs)},
                          {"mean_kl", json_number(r.mean_kl)},
                          {"max_kl", json_number(r.max_kl)},
                          {"top1_flips", r.top1_flips}};
    if (!r.residual_measured) row["rel_err"] = row["max_abs"] = nullptr;  // not measured
    out.push_back(std::move(row));
  }
  return {{"a", run::to_json(c.a)},
          {"b", run::to_json(c.b)},
          {"tokens", c.lengths.empty() ? 0 : c.lengths.back()},
          {"rows", out}};
}

namespace {

void check_lengths(const std::vector<int>& lengths) {
  if (lengths.empty()) throw InputError("--lengths needs at least one length");
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1 || (i > 0 && lengths[i] <= lengths[i - 1]))
      throw InputError("--lengths must be positive and strictly increasing");
  }
}

struct ArmPass {
  std::vector<float> residual;  // [L][n_embd], the last layer's output
  std::vector<float> logits;    // [L][n_vocab]
};

// The two models, the text's first tokens and the last layer's residual point: what every
// length is measured with.
struct Curve {
  std::shared_ptr<engine::Model> a, b;
  std::vector<int32_t> tokens;  // the longest length's
  std::string last;             // the last layer's residual point, "" where none is proven
  run::Input input;
  analysis::ScoreScratch scratch;

  // `last`: "" where the model has none proven.
  ArmPass run_arm(const std::shared_ptr<engine::Model>& model, const engine::ArmSettings& s,
                  std::span<const int32_t> prompt) const {
    engine::Arm arm(model, s, static_cast<int>(prompt.size()));
    engine::Hook hook;
    if (!last.empty()) hook.capture(last);
    ArmPass p;
    arm.run_chunk(prompt, &hook, p.logits, 0);
    if (!last.empty()) p.residual = hook.captured(last);
    return p;
  }

  LengthRow measure(const LengthCurveConfig& c, int len) {
    const std::span<const int32_t> prompt(tokens.data(), static_cast<size_t>(len));
    const ArmPass pa = run_arm(a, c.a, prompt);
    const ArmPass pb = run_arm(b, c.b, prompt);
    LengthRow row{len};
    row.residual_measured = !last.empty();
    double sq_delta = 0, sq_ref = 0;
    for (size_t k = 0; k < pa.residual.size(); ++k) {
      const double d = static_cast<double>(pb.residual[k]) - pa.residual[k];
      sq_delta += d * d;
      sq_ref += static_cast<double>(pa.residual[k]) * pa.residual[k];
    }
    row.rel_err = last.empty() ? NAN : sq_ref > 0 ? std::sqrt(sq_delta / sq_ref) : 0.0;
    row.max_abs = last.empty() ? NAN : analysis::tap_delta(pa.residual, pb.residual).max_abs;
    const size_t n_vocab = static_cast<size_t>(a->info().n_vocab);
    double kl_sum = 0;
    for (size_t p = 0; p < static_cast<size_t>(len); ++p) {
      const std::span<const float> la(pa.logits.data() + p * n_vocab, n_vocab);
      const std::span<const float> lb(pb.logits.data() + p * n_vocab, n_vocab);
      const double kl = analysis::kl_divergence(la, lb, scratch);
      kl_sum += kl;
      row.max_kl = std::max(row.max_kl, kl);
      // The lowest id among ties, as llama-perplexity counts top-1 agreement.
      row.top1_flips += std::max_element(la.begin(), la.end()) - la.begin() !=
                        std::max_element(lb.begin(), lb.end()) - lb.begin();
    }
    row.mean_kl = kl_sum / len;
    return row;
  }
};

// Loads both models and reads the text's first tokens: InputError for bad lengths, a text too
// short, models with other vocabularies or widths. `input` is the text read (again, to resume or
// verify: the caller checked it against the stored hash).
Curve open_curve(const LengthCurveConfig& c, run::Input input, const ProgressFn& progress) {
  check_lengths(c.lengths);
  Curve k;
  k.a = engine::model_load(c.a.model);
  k.b = c.b.model == c.a.model ? k.a : engine::model_load(c.b.model);
  // The curve compares logits and the last layer's residual: one vocabulary, one width.
  run::check_comparable(*k.a, *k.b, run::Pairing::kLogits);
  if (k.a->info().n_embd != k.b->info().n_embd)
    throw InputError("the arms' models differ in width: their residuals cannot be compared");
  const int longest = c.lengths.back();
  k.tokens = run::input_tokens(*k.a, input, c.skip_unencodable, static_cast<size_t>(longest),
                               progress);
  if (k.tokens.size() < static_cast<size_t>(longest)) {
    throw InputError(input.name() + " gives " + std::to_string(k.tokens.size()) +
                     " tokens, fewer than " + std::to_string(longest));
  }
  const engine::PointMap points = engine::survey_points(k.a);
  k.last = points.name(engine::Role::kResidual, k.a->info().n_layer - 1);
  if (k.last.empty()) progress("residuals: no (" + points.no_residuals + ")");
  k.input = std::move(input);
  return k;
}

run::RunEnd run_lengths(store::Experiment& e, Curve& k, const LengthCurveConfig& c,
                        const std::set<int>& stored, const ProgressFn& progress) {
  run::ChunkLoop loop;
  loop.command = std::string(kLengthCurveKind);
  loop.unit = "length";
  loop.total = static_cast<int>(c.lengths.size());
  for (size_t i = 0; i < c.lengths.size(); ++i) {
    if (stored.count(c.lengths[i])) loop.done.insert(static_cast<int>(i));
  }
  loop.run_chunk = [&](int i, int) {
    const auto t0 = std::chrono::steady_clock::now();
    const LengthRow row = k.measure(c, c.lengths[static_cast<size_t>(i)]);
    put_length_row(e, row);
    return run::ChunkDone{
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
        row.mean_kl};
  };
  loop.before_seal = [&] {
    e.set_meta(std::string(kLengthCurveKind), curve_document(c, read_length_rows(e)).dump());
  };
  return run::run_chunk_loop(e, loop, progress);
}

struct Stored {
  LengthCurveConfig config;
  nlohmann::json provenance;
};

Stored read_stored(const store::Experiment& e) {
  Stored s{length_curve_config_from_json(nlohmann::json::parse(e.stored_config())),
           nlohmann::json::parse(e.required_meta("provenance"))};
  check_lengths(s.config.lengths);
  return s;
}

// InputError unless both models hash as the run's provenance records (`what`: the message's
// ending).
void require_stored_models(const Stored& s, const std::string& what) {
  for (const auto& [arm, settings] : {std::pair{"a", &s.config.a}, std::pair{"b", &s.config.b}}) {
    const std::string recorded =
        s.provenance.at("arms").at(arm).at("model_sha256").get<std::string>();
    if (recorded != sha256_file(settings->model))
      throw InputError(fmt::format("arm {}'s model is not the one this curve used: {}", arm, what));
  }
}

// The stored input read again and loaded as when the curve began.
Curve reopen(const Stored& s, const run::InputPath& again, const std::string& how,
             const ProgressFn& progress) {
  const LengthCurveConfig& c = s.config;
  run::Input input = run::read_stored_input({c.text_file, c.token_ids}, s.provenance, again, how);
  Curve k = open_curve(c, std::move(input), progress);
  if (run::tokens_record({k.tokens}) != s.provenance.at("tokens"))
    throw InputError("the text tokenizes differently than when the curve began");
  return k;
}

}  // namespace

nlohmann::json length_curve(const LengthCurveConfig& c, const ProgressFn& progress) {
  check_lengths(c.lengths);  // before the input is read: the lengths' message first
  Curve k = open_curve(c, run::read_input({c.text_file, c.token_ids}, c.skip_unencodable),
                       progress);
  std::vector<LengthRow> rows;
  for (int len : c.lengths) {
    progress("length " + std::to_string(len));
    rows.push_back(k.measure(c, len));
  }
  return curve_document(c, rows);
}

run::RunEnd length_curve_run(const LengthCurveConfig& c, const std::string& out, bool replace,
                             const std::string& command_line, const ProgressFn& progress) {
  check_lengths(c.lengths);
  store::Experiment::check_creatable(out, replace, {c.a.model, c.b.model, c.text_file});
  Curve k = open_curve(c, run::read_input({c.text_file, c.token_ids}, c.skip_unencodable),
                       progress);
  nlohmann::json prov = run::run_provenance(k.input, {k.tokens}, command_line);
  {
    const int n_ctx = c.lengths.back();  // as the longest length's arms are built
    const engine::Arm a(k.a, c.a, n_ctx), b(k.b, c.b, n_ctx);  // what each runs on, resolved
    prov["arms"] = {{"a", run::arm_facts(a, sha256_file(c.a.model))},
                    {"b", run::arm_facts(b, sha256_file(c.b.model))}};
  }
  store::Experiment e =
      store::Experiment::create(out, replace, {c.a.model, c.b.model, c.text_file});
  store::set_kind(e, kLengthCurveKind);
  e.set_meta("config", to_json(c).dump());
  e.set_meta("provenance", prov.dump());
  create_length_curve_table(e);
  return run_lengths(e, k, c, {}, progress);
}

run::RunEnd length_curve_resume(const std::string& path, const std::string& command_line,
                                const ProgressFn& progress, const run::InputPath& again) {
  auto opened = open_to_resume(path, kLengthCurveKind, progress);
  if (!opened) return {};
  store::Experiment& e = *opened;
  Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, false, true);  // never rows of two builds in one file
  const std::set<int> stored = resumable_lengths(e);      // never add to edited rows
  require_stored_models(s, "cannot resume");
  Curve k = reopen(s, again, "heterodyne length-curve --resume " + path, progress);
  s.provenance["resumed"].push_back({{"command_line", command_line}, {"at", run::now_utc()}});
  e.set_meta("provenance", s.provenance.dump());
  return run_lengths(e, k, s.config, stored, progress);
}

void length_curve_verify(const std::string& path, const run::VerifyOptions& options,
                         const ProgressFn& progress) {
  const bool force = options.force;
  const run::InputPath& again = options.input;
  const store::Experiment e = store::Experiment::open(path, false);
  const Stored s = read_stored(e);
  run::require_same_numerics(s.provenance, force);
  if (!force) require_stored_models(s, "--force to compare anyway");
  Curve k = reopen(s, again, "heterodyne verify " + path, progress);
  const std::vector<LengthRow> stored = read_length_rows(e);
  if (stored.size() != s.config.lengths.size())
    throw RuntimeError("verify failed: the file holds other lengths than its configuration");
  for (size_t i = 0; i < stored.size(); ++i) {
    const LengthRow& was = stored[i];
    const LengthRow now = k.measure(s.config, s.config.lengths[i]);
    const auto same = [](double x, double y) {
      return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0;
    };
    if (was.length != now.length || was.residual_measured != now.residual_measured ||
        !same(was.rel_err, now.rel_err) ||
        !same(was.max_abs, now.max_abs) || !same(was.mean_kl, now.mean_kl) ||
        !same(was.max_kl, now.max_kl) || was.top1_flips != now.top1_flips) {
      throw RuntimeError(fmt::format(
          "verify failed: length {}: rel err {} mean KL {} flips {} recomputed, length {}: "
          "rel err {} mean KL {} flips {} stored",
          now.length, now.rel_err, now.mean_kl, now.top1_flips, was.length, was.rel_err,
          was.mean_kl, was.top1_flips));
    }
    progress(fmt::format("length {}: identical", now.length));
  }
  // Through its text, as stored.
  if (nlohmann::json::parse(e.required_meta(std::string(kLengthCurveKind))) !=
      nlohmann::json::parse(curve_document(s.config, stored).dump()))
    throw RuntimeError("verify failed: the stored curve is not the one its rows give");
  progress(Progress::result(fmt::format("verify: all {} lengths reproduce bitwise", stored.size())));
}

}  // namespace hd::kinds
