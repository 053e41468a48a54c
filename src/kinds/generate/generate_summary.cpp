#include "kinds/generate/generate_summary.h"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/stats.h"
#include "common/json_number.h"
#include "kinds/generate/generate_rows.h"
#include "report/rates.h"
#include "run/config.h"
#include "store/experiment.h"

namespace hd::kinds {

namespace {

std::vector<int32_t> ids(const Completion& c) {
  std::vector<int32_t> out;
  for (const auto& t : c.tokens) out.push_back(t.token);
  return out;
}

nlohmann::json distinct_json(const std::vector<PromptResult>& rows) {
  std::map<int, int> histogram;  // distinct completions -> prompts
  double sum = 0;
  int most = 0, with_a = 0;
  for (const PromptResult& r : rows) {
    std::set<std::vector<int32_t>> seen;
    for (const Completion& b : r.b) seen.insert(ids(b));
    const int n = static_cast<int>(seen.size());
    ++histogram[n];
    sum += n;
    most = std::max(most, n);
    with_a += seen.count(ids(r.a)) > 0 ? 1 : 0;
  }
  nlohmann::json h = nlohmann::json::array();
  for (const auto& [n, prompts] : histogram) h.push_back({{"distinct", n}, {"prompts", prompts}});
  return {{"mean", rows.empty() ? nlohmann::json() : nlohmann::json(sum / static_cast<double>(rows.size()))},
          {"max", most},
          {"histogram", h},
          {"a_among_them", with_a}};
}

nlohmann::json transplants_json(const std::vector<PromptResult>& rows, const std::string& why_not) {
  if (!why_not.empty()) return {{"why_not", why_not}};
  std::map<std::pair<int, std::string>, int> verdicts;
  int not_parting = 0, run = 0;
  for (const PromptResult& r : rows) {
    for (const Parting& p : r.partings) {
      if (p.transplant.empty()) continue;
      ++run;
      const auto j = nlohmann::json::parse(p.transplant);
      if (!j.value("parts", false)) {
        ++not_parting;
      } else {
        ++verdicts[{j["verdict"]["layer"].get<int>(), j["verdict"]["point"].get<std::string>()}];
      }
    }
  }
  nlohmann::json v = nlohmann::json::array();
  for (const auto& [key, n] : verdicts) v.push_back({{"layer", key.first}, {"point", key.second}, {"prompts", n}});
  return {{"run", run}, {"verdicts", v}, {"not_parting_teacher_forced", not_parting}};
}

}  // namespace

nlohmann::json generate_summary(const store::Experiment& e, const GenerateConfig& c,
                                const std::string& no_transplants) {
  const std::vector<PromptResult> rows = read_generate_prompts(e);
  std::vector<double> parted, parted_any, at;
  std::vector<int> cluster;
  for (const PromptResult& r : rows) {
    cluster.push_back(r.prompt);
    parted.push_back(r.partings.at(0).parted >= 0 ? 1.0 : 0.0);
    bool any = false;
    for (const Parting& p : r.partings) any = any || p.parted >= 0;
    parted_any.push_back(any ? 1.0 : 0.0);
    if (r.partings[0].parted >= 0) at.push_back(r.partings[0].parted);
  }
  nlohmann::json j = {
      {"a", run::to_json(c.a)},
      {"b", run::to_json(c.b)},
      {"n_prompts", rows.size()},
      {"max_tokens", c.max_tokens},
      {"trials", c.trials},
      {"temperature", c.temperature},
      {"chat", c.chat},
      {"parted", report::rate_json(analysis::cluster_rate(parted, cluster), "prompts")},
      {"median_parting", at.empty() ? nlohmann::json() : json_number(analysis::median(at))},
      {"transplants", transplants_json(rows, no_transplants)}};
  if (c.temperature > 0) j["seed"] = c.seed;
  if (c.trials > 1) {
    j["parted_any"] = report::rate_json(analysis::cluster_rate(parted_any, cluster), "prompts");
    j["distinct"] = distinct_json(rows);
  }
  return j;
}

namespace {

std::vector<std::string> pieces(const Completion& c) {
  std::vector<std::string> out;
  for (const auto& t : c.tokens) out.push_back(t.piece);
  return out;
}

nlohmann::json trial_json(const PromptResult& r, size_t t) {
  const Parting& x = r.partings[t];
  nlohmann::json b = {{"pieces", pieces(r.b[t])}, {"ended", r.b[t].ended},
                      {"parted", x.parted}, {"common", x.common}};
  if (x.parted >= 0) {
    const GeneratedToken& ta = r.a.tokens[static_cast<size_t>(x.parted)];
    const GeneratedToken& tb = r.b[t].tokens[static_cast<size_t>(x.parted)];
    b["top_a"] = top5_json(ta.top, ta.top_pieces);
    b["top_b"] = top5_json(tb.top, tb.top_pieces);
    b["margin_a"] = margin(ta.top);
    b["margin_b"] = margin(tb.top);
  }
  if (!x.transplant.empty()) b["transplant"] = nlohmann::json::parse(x.transplant);
  return b;
}

}  // namespace

void add_generate_prompts(const store::Experiment& e, nlohmann::json& result) {
  nlohmann::json list = nlohmann::json::array();
  for (const PromptResult& r : read_generate_prompts(e)) {
    nlohmann::json trials = nlohmann::json::array();
    for (size_t t = 0; t < r.b.size(); ++t) trials.push_back(trial_json(r, t));
    list.push_back({{"prompt", r.prompt},
                    {"text", r.text},
                    {"n_tokens", r.tokens.size()},
                    {"a", {{"pieces", pieces(r.a)}, {"ended", r.a.ended}}},
                    {"b", std::move(trials)}});
  }
  result["prompts"] = std::move(list);
}

}  // namespace hd::kinds
