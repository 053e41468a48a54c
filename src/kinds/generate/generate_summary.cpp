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
#include "store/sqlite.h"

namespace hd::kinds {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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
      {"median_parting", at.empty() ? nlohmann::json() : json_number(median(at))},
      {"transplants", transplants_json(rows, no_transplants)}};
  if (c.temperature > 0) j["seed"] = c.seed;
  if (c.trials > 1) {
    j["parted_any"] = report::rate_json(analysis::cluster_rate(parted_any, cluster), "prompts");
    j["distinct"] = distinct_json(rows);
  }
  return j;
}

void add_generate_prompts(const store::Experiment& e, nlohmann::json& result) {
  const std::vector<PromptResult> rows = read_generate_prompts(e);
  // The token texts, by (prompt, arm, trial): stored beside the ids for readers.
  std::map<std::tuple<int, std::string, int>, std::vector<std::string>> pieces;
  std::map<std::tuple<int, std::string, int, int>, nlohmann::json> tops;
  store::Statement q(e.database().handle(),
                     "SELECT prompt, arm, trial, i, piece, top FROM generate_tokens ORDER BY "
                     "prompt, arm, trial, i");
  while (q.step()) {
    const int prompt = static_cast<int>(q.integer(0)), trial = static_cast<int>(q.integer(2));
    pieces[{prompt, q.text(1), trial}].push_back(q.text(4));
    tops[{prompt, q.text(1), trial, static_cast<int>(q.integer(3))}] =
        nlohmann::json::parse(q.text(5), nullptr, false);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const PromptResult& r : rows) {
    nlohmann::json p = {{"prompt", r.prompt}, {"text", r.text}, {"n_tokens", r.tokens.size()},
                        {"a", {{"pieces", pieces[{r.prompt, "a", 0}]}, {"ended", r.a.ended}}}};
    nlohmann::json trials = nlohmann::json::array();
    for (size_t t = 0; t < r.b.size(); ++t) {
      const Parting& x = r.partings[t];
      const int trial = static_cast<int>(t);
      nlohmann::json b = {{"pieces", pieces[{r.prompt, "b", trial}]}, {"ended", r.b[t].ended},
                          {"parted", x.parted}, {"common", x.common}};
      if (x.parted >= 0) {
        const auto& ta = r.a.tokens[static_cast<size_t>(x.parted)].top;
        const auto& tb = r.b[t].tokens[static_cast<size_t>(x.parted)].top;
        b["top_a"] = tops[{r.prompt, "a", 0, x.parted}];
        b["top_b"] = tops[{r.prompt, "b", trial, x.parted}];
        b["margin_a"] = margin(ta);
        b["margin_b"] = margin(tb);
      }
      if (!x.transplant.empty()) b["transplant"] = nlohmann::json::parse(x.transplant);
      trials.push_back(std::move(b));
    }
    p["b"] = std::move(trials);
    list.push_back(std::move(p));
  }
  result["prompts"] = std::move(list);
}

}  // namespace hd::kinds
