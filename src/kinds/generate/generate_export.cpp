// `heterodyne export gen.hdy --table prompts|tokens`: a generate run's rows for pandas.
//   prompts  one row per prompt and B's trial: the prompt, both completions' texts and lengths,
//            the parting (-1: never), the common prefix, both arms' tokens and margins there,
//            and what makes it part (the transplant's verdict, "" where none ran)
//   tokens   one row per generated token of A and of each of B's trials: its id and text, its
//            log-probability, the top-1's probability and margin, and the top-5 as JSON text
#include "kinds/generate/generate_export.h"

#include <map>
#include <tuple>

#include "errors.h"
#include "kinds/generate/generate_rows.h"
#include "report/stored_result.h"
#include "store/experiment.h"
#include "store/sqlite.h"

namespace hd::kinds {

namespace {

using Pieces = std::map<std::tuple<int, std::string, int>, std::vector<std::string>>;

Pieces read_pieces(const store::Experiment& e) {
  Pieces out;
  store::Statement q(e.database().handle(),
                     "SELECT prompt, arm, trial, piece FROM generate_tokens ORDER BY prompt, arm, trial, i");
  while (q.step()) out[{static_cast<int>(q.integer(0)), q.text(1), static_cast<int>(q.integer(2))}].push_back(q.text(3));
  return out;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string s;
  for (const auto& p : pieces) s += p;
  return s;
}

report::KindRows prompt_rows(const store::Experiment& e) {
  report::KindRows t{{"prompt", "trial", "prompt_text", "prompt_tokens", "a_text", "b_text",
                      "a_tokens", "b_tokens", "ended_a", "ended_b", "parted", "common", "a_token",
                      "b_token", "margin_a", "margin_b", "verdict_point", "verdict_layer"},
                     {}};
  Pieces pieces = read_pieces(e);
  for (const PromptResult& r : read_generate_prompts(e)) {
    for (size_t k = 0; k < r.b.size(); ++k) {
      const Parting& p = r.partings[k];
      const int trial = static_cast<int>(k);
      nlohmann::json a_token, b_token, margin_a, margin_b, point = "", layer;
      if (p.parted >= 0) {
        const auto& ta = r.a.tokens[static_cast<size_t>(p.parted)];
        const auto& tb = r.b[k].tokens[static_cast<size_t>(p.parted)];
        a_token = ta.token;
        b_token = tb.token;
        margin_a = margin(ta.top);
        margin_b = margin(tb.top);
      }
      if (!p.transplant.empty()) {
        const auto j = nlohmann::json::parse(p.transplant, nullptr, false);
        if (j.is_object() && j.contains("verdict")) {
          point = j["verdict"].value("point", "");
          layer = j["verdict"].value("layer", 0);
        }
      }
      t.rows.push_back({r.prompt, trial, r.text, r.tokens.size(), joined(pieces[{r.prompt, "a", 0}]),
                        joined(pieces[{r.prompt, "b", trial}]), r.a.tokens.size(), r.b[k].tokens.size(),
                        r.a.ended, r.b[k].ended, p.parted, p.common, a_token, b_token, margin_a,
                        margin_b, point, layer});
    }
  }
  return t;
}

report::KindRows token_rows(const store::Experiment& e) {
  report::KindRows t{{"prompt", "arm", "trial", "i", "token_id", "token_text", "logprob", "p_top1",
                      "margin", "top5"},
                     {}};
  store::Statement q(e.database().handle(),
                     "SELECT prompt, arm, trial, i, token, piece, logprob, top FROM generate_tokens "
                     "ORDER BY prompt, arm, trial, i");
  while (q.step()) {
    const auto top = nlohmann::json::parse(q.text(7), nullptr, false);
    if (!top.is_array() || top.size() < 2 || !top[0].is_array() || !top[1].is_array())
      throw InputError("'" + e.path() + "' is damaged: generate_tokens has a top-5 that is not one");
    const double p1 = top[0][1].get<double>(), p2 = top[1][1].get<double>();
    t.rows.push_back({q.integer(0), q.text(1), q.integer(2), q.integer(3), q.integer(4), q.text(5),
                      q.real(6), p1, p1 - p2, top.dump()});
  }
  return t;
}

}  // namespace

const std::vector<std::string>& generate_export_tables() {
  static const std::vector<std::string> names = {"prompts", "tokens"};
  return names;
}

report::KindRows generate_export_rows(const std::string& path, const std::string& table) {
  const store::Experiment e = store::Experiment::open(path, false);
  if (table == "prompts") return prompt_rows(e);
  if (table == "tokens") return token_rows(e);
  throw InputError("a generate file's tables are prompts and tokens, not '" + table + "'");
}

}  // namespace hd::kinds
