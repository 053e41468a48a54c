#include "run/sweep.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>

#include "analysis/attribution.h"
#include "analysis/kl.h"
#include "analysis/stats.h"
#include "build_info.h"
#include "common/json_number.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "errors.h"
#include "run/session.h"
#include "store/experiment.h"

namespace hd::run {

const std::vector<std::string>& sweep_setting_names() {
  static const std::vector<std::string> names = engine::arm_field_keys();
  return names;
}

std::vector<std::string> differing_settings(const engine::ArmSettings& a,
                                            const engine::ArmSettings& b) {
  const nlohmann::json ja = to_json(a), jb = to_json(b);
  std::vector<std::string> out;
  for (const auto& n : sweep_setting_names()) {
    if (ja[n] != jb[n]) out.push_back(n);
  }
  return out;
}

engine::ArmSettings combination(const engine::ArmSettings& a, const engine::ArmSettings& b,
                                const std::vector<std::string>& settings, unsigned mask) {
  nlohmann::json j = to_json(a);
  const nlohmann::json jb = to_json(b);
  for (size_t i = 0; i < settings.size(); ++i) {
    if (mask & (1u << i)) j[settings[i]] = jb[settings[i]];
  }
  return arm_settings_from_json(j);
}

namespace {

// The arms of a sweep: one per combination that can run (mask 0 is A), and the floor arm.
class Sweeper {
 public:
  Sweeper(const DiffConfig& c, int max_arms) : c_(c), names_(differing_settings(c.a, c.b)) {
    const size_t n = size_t{1} << names_.size();
    if (names_.size() > 20 || static_cast<int>(n) > max_arms) {
      throw InputError(fmt::format("the arms differ in {} settings: {} combinations, more than "
                                   "--max-arms {}",
                                   names_.size(), n, max_arms));
    }
    auto model_a = load(c.a.model), model_b = load(c.b.model);
    if (auto why = engine::vocab_difference(*model_a, *model_b)) {
      throw InputError("the arms have different vocabularies (" + *why + ")");
    }
    arms_.resize(n);
    reasons_.resize(n);
    for (size_t m = 0; m < n; ++m) {
      const engine::ArmSettings s = combination(c.a, c.b, names_, static_cast<unsigned>(m));
      try {
        arms_[m] = std::make_unique<engine::Arm>(load(s.model), s, c.chunk);
      } catch (const InputError& e) {
        if (m == 0 || m == n - 1) throw;  // A and B themselves must run
        reasons_[m] = e.what();
      }
    }
    if (c.floor) {
      engine::ArmSettings fs = c.a;
      fs.n_ubatch = c.floor_ubatch > 0 ? c.floor_ubatch : floor_ubatch_for(c.chunk, c.a.n_ubatch);
      floor_ = std::make_unique<engine::Arm>(model_a, fs, c.chunk);
    }
  }

  const engine::Model& model_a() const { return arms_[0]->model(); }
  const std::vector<std::string>& names() const { return names_; }

  nlohmann::json combinations() const {
    nlohmann::json out = nlohmann::json::array();
    for (size_t m = 0; m < arms_.size(); ++m) {
      const nlohmann::json s = to_json(combination(c_.a, c_.b, names_, static_cast<unsigned>(m)));
      nlohmann::json values = nlohmann::json::object();
      for (const auto& n : names_) values[n] = s[n];
      out.push_back({{"mask", m},
                     {"values", values},
                     {"possible", arms_[m] != nullptr},
                     {"reason", reasons_[m]},
                     {"model_sha256", sha256_.at(s["model"].get<std::string>())}});
    }
    return out;
  }

  int floor_ubatch() const { return floor_ ? floor_->settings().n_ubatch : 0; }

  // Every scored position of one chunk: A's NLL, and per combination (and the floor) KL(A || it),
  // its NLL and how many top-1 tokens changed.
  nlohmann::json compute(int chunk, const std::vector<int32_t>& tokens) {
    const int n = static_cast<int>(tokens.size());
    const int first_output = first_scored_target(c_.score_from, n) - 1;
    arms_[0]->run_chunk(tokens, nullptr, logits_a_, first_output);
    const size_t v = static_cast<size_t>(arms_[0]->model_info().n_vocab);
    nlohmann::json nll_a = nlohmann::json::array();
    for (int p = first_output; p < n - 1; ++p) {
      const std::span<const float> row(logits_a_.data() + static_cast<size_t>(p - first_output) * v, v);
      nll_a.push_back(analysis::log_sum_exp(row) - row[static_cast<size_t>(tokens[p + 1])]);
    }
    auto score = [&](engine::Arm& arm) {
      arm.run_chunk(tokens, nullptr, logits_b_, first_output);
      nlohmann::json kl = nlohmann::json::array(), nll = nlohmann::json::array();
      int flips = 0;
      for (int p = first_output; p < n - 1; ++p) {
        const size_t off = static_cast<size_t>(p - first_output) * v;
        const auto s = analysis::score_position({logits_a_.data() + off, v},
                                                {logits_b_.data() + off, v}, tokens[p + 1], scratch_);
        kl.push_back(s.kl);
        nll.push_back(s.nll_b);
        flips += s.top_a.id[0] != s.top_b.id[0];
      }
      return nlohmann::json{{"kl", kl}, {"nll", nll}, {"flips", flips}};
    };
    nlohmann::json combos = nlohmann::json::array();
    for (size_t m = 1; m < arms_.size(); ++m) {
      nlohmann::json row = arms_[m] ? score(*arms_[m]) : nlohmann::json::object();
      row["mask"] = m;
      combos.push_back(row);
    }
    nlohmann::json out = {{"chunk", chunk}, {"nll_a", nll_a}, {"combos", combos}};
    if (floor_) out["floor"] = score(*floor_);
    return out;
  }

 private:
  std::shared_ptr<engine::Model> load(const std::string& path) {
    auto& m = models_[path];
    if (!m) {
      m = engine::model_load(path);
      sha256_[path] = sha256_file(path);
    }
    return m;
  }

  DiffConfig c_;
  std::vector<std::string> names_;
  std::map<std::string, std::shared_ptr<engine::Model>> models_;
  std::map<std::string, std::string> sha256_;
  std::vector<std::unique_ptr<engine::Arm>> arms_;  // [mask]; null where it cannot run
  std::vector<std::string> reasons_;
  std::unique_ptr<engine::Arm> floor_;
  std::vector<float> logits_a_, logits_b_;
  analysis::ScoreScratch scratch_;
};

nlohmann::json sweep_config_json(const DiffConfig& c, int max_arms) {
  nlohmann::json j = to_json(c);
  j["max_arms"] = max_arms;
  return j;
}

std::string chunk_key(int c) { return "sweep_chunk_" + std::to_string(c); }

// A mean with its interval over chunks: one value per chunk, each its own cluster.
analysis::MeanCI over_chunks(const std::vector<double>& per_chunk) {
  std::vector<int> cluster(per_chunk.size());
  for (size_t i = 0; i < cluster.size(); ++i) cluster[i] = static_cast<int>(i);
  return analysis::cluster_mean(per_chunk, cluster);
}


}  // namespace

nlohmann::json sweep_summary(const nlohmann::json& config, const std::vector<nlohmann::json>& chunks,
                             const nlohmann::json& combinations) {
  const engine::ArmSettings a = arm_settings_from_json(config.at("a"));
  const engine::ArmSettings b = arm_settings_from_json(config.at("b"));
  const std::vector<std::string> names = differing_settings(a, b);
  const size_t k = names.size(), n_comb = size_t{1} << k, G = chunks.size();
  if (G == 0) throw InputError("the sweep has no finished chunk");
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  // v[chunk][mask]: the chunk's mean KL(A || combination); NaN where it cannot run.
  std::vector<std::vector<double>> v(G, std::vector<double>(n_comb, kNaN));
  nlohmann::json combos = nlohmann::json::array();
  std::vector<double> nll_a;
  std::vector<int> nll_a_cluster;
  for (size_t g = 0; g < G; ++g) {
    for (const auto& x : chunks[g]["nll_a"]) nll_a.push_back(x), nll_a_cluster.push_back(int(g));
    v[g][0] = 0;  // A against its own logits
  }
  for (size_t m = 0; m < n_comb; ++m) {
    nlohmann::json row = combinations.at(m);
    if (m == 0) {
      row.update({{"kl_mean", 0.0}, {"kl_ci95", 0.0}, {"top1_change_rate", 0.0}});
    } else if (row["possible"].get<bool>()) {
      std::vector<double> kl, nll;
      std::vector<int> cluster;
      size_t flips = 0;
      for (size_t g = 0; g < G; ++g) {
        const auto& c = chunks[g]["combos"].at(m - 1);
        double sum = 0;
        for (const auto& x : c["kl"]) kl.push_back(x), sum += x.get<double>(), cluster.push_back(int(g));
        for (const auto& x : c["nll"]) nll.push_back(x);
        flips += c["flips"].get<size_t>();
        v[g][m] = sum / static_cast<double>(c["kl"].size());
      }
      const auto mk = analysis::cluster_mean(kl, cluster);
      const auto mn = analysis::cluster_mean(nll, cluster);
      row.update({{"kl_mean", mk.mean},
                  {"kl_ci95", json_number(mk.ci95)},
                  {"top1_change_rate", static_cast<double>(flips) / static_cast<double>(kl.size())},
                  {"ppl", std::exp(mn.mean)}});
    }
    combos.push_back(row);
  }
  combos[0]["ppl"] = std::exp(analysis::cluster_mean(nll_a, nll_a_cluster).mean);

  nlohmann::json floor = nullptr;
  double floor_hi = 0;
  if (chunks[0].contains("floor")) {
    std::vector<double> kl;
    std::vector<int> cluster;
    size_t flips = 0;
    for (size_t g = 0; g < G; ++g) {
      for (const auto& x : chunks[g]["floor"]["kl"]) kl.push_back(x), cluster.push_back(int(g));
      flips += chunks[g]["floor"]["flips"].get<size_t>();
    }
    const auto m = analysis::cluster_mean(kl, cluster);
    floor = {{"kl_mean", m.mean},
             {"kl_ci95", json_number(m.ci95)},
             {"top1_change_rate", static_cast<double>(flips) / static_cast<double>(kl.size())}};
    floor_hi = m.mean + (std::isnan(m.ci95) ? 0 : m.ci95);
  }

  // Settings that cannot move alone (a quantized V cache needs flash attention) are one player
  // for the Shapley values, so that every combination of players ran.
  std::vector<bool> possible(n_comb);
  for (size_t m = 0; m < n_comb; ++m) possible[m] = combos[m]["possible"].get<bool>();
  const std::vector<unsigned> players = analysis::coupled_players(possible);
  std::vector<std::string> player_names;
  for (unsigned p : players) {
    std::string name;
    for (size_t i = 0; i < k; ++i) {
      if (!(p & (1u << i))) continue;
      if (!name.empty()) name += '+';
      name += names[i];
    }
    player_names.push_back(name);
  }

  // Attribution per chunk, then each quantity's mean and interval over chunks.
  std::vector<analysis::Attribution> per(G), per_player(G);
  for (size_t g = 0; g < G; ++g) {
    per[g] = analysis::attribute(v[g]);
    per_player[g] = analysis::attribute(analysis::player_values(v[g], players));
  }
  auto across = [&](const std::vector<analysis::Attribution>& from, auto get) {
    std::vector<double> xs(G);
    for (size_t g = 0; g < G; ++g) xs[g] = get(from[g]);
    return over_chunks(xs);
  };
  nlohmann::json main = nlohmann::json::object(), main_ci = nlohmann::json::object(),
                 shapley = nlohmann::json::object(), shapley_ci = nlohmann::json::object(),
                 interactions = nlohmann::json::array(), within = nlohmann::json::array();
  for (size_t i = 0; i < k; ++i) {
    const auto me = across(per, [i](const analysis::Attribution& at) { return at.main[i].value; });
    main[names[i]] = json_number(me.mean);
    main_ci[names[i]] = json_number(me.ci95);
    for (size_t j = i + 1; j < k; ++j) {
      const auto in = across(
          per, [i, j](const analysis::Attribution& at) { return at.interaction[i][j].value; });
      interactions.push_back({{"settings", {names[i], names[j]}},
                              {"value", json_number(in.mean)},
                              {"ci95", json_number(in.ci95)}});
    }
  }
  for (size_t p = 0; p < players.size(); ++p) {
    const auto sh =
        across(per_player, [p](const analysis::Attribution& at) { return at.shapley[p]; });
    shapley[player_names[p]] = json_number(sh.mean);
    shapley_ci[player_names[p]] = json_number(sh.ci95);
    // Within the floor: the interval of the value reaches down to the floor's upper end.
    if (std::fabs(sh.mean) - (std::isnan(sh.ci95) ? 0 : sh.ci95) <= floor_hi) {
      within.push_back(player_names[p]);
    }
  }
  size_t impossible = 0;
  for (const auto& c : combos) impossible += c["possible"].get<bool>() ? 0 : 1;
  return {{"settings", names},
          {"a", to_json(a)},
          {"b", to_json(b)},
          {"chunks", G},
          {"combinations", combos},
          {"impossible", impossible},
          {"floor", floor},
          {"total", combos[n_comb - 1]["kl_mean"]},
          {"main_effects", main},
          {"main_effects_ci95", main_ci},
          {"interactions", interactions},
          {"shapley_players", player_names},
          {"shapley", shapley},
          {"shapley_ci95", shapley_ci},
          {"within_floor", within}};
}

void sweep_run(const DiffConfig& config, int max_arms, const std::string& out, bool replace,
               const std::string& command_line, const ProgressFn& progress) {
  validate(config);
  if (max_arms < 1) throw InputError("--max-arms must be at least 1");
  store::Experiment::check_creatable(out, replace, {config.a.model, config.b.model, config.text_file});
  const std::string text = read_text_file(config.text_file);
  Sweeper s(config, max_arms);
  const auto chunks = chunk_text(s.model_a(), text, config.chunk, config.max_chunks);
  const nlohmann::json combos = s.combinations();
  size_t impossible = 0;
  for (const auto& c : combos) impossible += c["possible"].get<bool>() ? 0 : 1;
  std::string names;
  for (const auto& n : s.names()) names += (names.empty() ? "" : ", ") + n;
  progress(fmt::format("sweep over {} setting(s){}{}: {} combinations ({} cannot run), {} chunks "
                       "of {} tokens",
                       s.names().size(), names.empty() ? "" : ": ", names, combos.size(),
                       impossible, chunks.size(), config.chunk));
  for (const auto& c : combos) {
    if (!c["possible"].get<bool>()) {
      progress("  cannot run " + c["values"].dump() + ": " + c["reason"].get<std::string>());
    }
  }
  store::Experiment e =
      store::Experiment::create(out, replace, {config.a.model, config.b.model, config.text_file});
  e.set_meta("kind", "sweep");
  const nlohmann::json cfg = sweep_config_json(config, max_arms);
  e.set_meta("config", cfg.dump());
  nlohmann::json prov = run_provenance(config.text_file, text, chunks, command_line);
  prov["floor_ubatch"] = s.floor_ubatch();
  e.set_meta("provenance", prov.dump());
  e.set_meta("sweep_combinations", combos.dump());
  std::vector<nlohmann::json> rows;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (stop_requested()) {
      throw Stopped(fmt::format("stopped after {} of {} chunks; a sweep cannot be resumed yet, "
                                "so nothing was written ('{}' is as it was): run it again",
                                c, chunks.size(), out));
    }
    rows.push_back(s.compute(static_cast<int>(c), chunks[c]));
    e.set_meta(chunk_key(static_cast<int>(c)), rows.back().dump());
    progress(fmt::format("chunk {}/{}", c + 1, chunks.size()));
  }
  e.set_meta("sweep", sweep_summary(cfg, rows, combos).dump());
  prov["finished_at"] = now_utc();
  e.set_meta("provenance", prov.dump());
  e.seal();
  e.publish();  // only a whole sweep replaces what was at `out`
}

void sweep_verify(const std::string& path, bool force, const ProgressFn& progress) {
  const store::Experiment e = store::Experiment::open(path, false);
  const nlohmann::json cfg = nlohmann::json::parse(e.required_meta("config"));
  const nlohmann::json prov = nlohmann::json::parse(e.required_meta("provenance"));
  if (prov["llama_cpp"]["commit"] != build::kLlamaCommit && !force) {
    throw InputError("this sweep was made with another llama.cpp commit (--force to compare anyway)");
  }
  const DiffConfig config = diff_config_from_json(cfg);
  Sweeper s(config, cfg.at("max_arms").get<int>());
  const nlohmann::json combos = nlohmann::json::parse(e.required_meta("sweep_combinations"));
  if (s.combinations() != combos && !force) {
    throw InputError("the models or settings are not those the sweep used (--force to compare anyway)");
  }
  const auto chunks = chunk_text(s.model_a(), read_text_file(config.text_file), config.chunk,
                                 config.max_chunks);
  std::vector<nlohmann::json> rows;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const std::string again = s.compute(static_cast<int>(c), chunks[c]).dump();
    if (again != e.required_meta(chunk_key(static_cast<int>(c)))) {
      throw RuntimeError(fmt::format("verify failed: sweep chunk {} differs", c));
    }
    rows.push_back(nlohmann::json::parse(again));
    progress(fmt::format("chunk {}/{}: identical", c + 1, chunks.size()));
  }
  if (sweep_summary(cfg, rows, combos).dump() != e.required_meta("sweep")) {
    throw RuntimeError("verify failed: the stored summary does not follow from the chunks");
  }
  progress(fmt::format("verify: all {} sweep chunks reproduce bitwise", chunks.size()));
}

}  // namespace hd::run
