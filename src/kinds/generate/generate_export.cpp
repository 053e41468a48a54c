// `heterodyne export gen.hdy --table prompts|tokens`: a generate run's rows for pandas.
//   prompts  one row per prompt and B's trial: the prompt, both completions' texts and lengths,
//            the parting (-1: never), the common prefix, both arms' tokens and margins there,
//            and what makes it part (the transplant's verdict, "" where none ran)
//   tokens   one row per generated token of A and of each of B's trials: its id and text, its
//            log-probability, the top-1's probability and margin, and the top-5 as JSON text
#include "kinds/generate/generate_export.h"

#include "errors.h"
#include "kinds/generate/generate_rows.h"
#include "store/experiment.h"

namespace hd::kinds {

namespace {

std::string joined(const Completion& c) {
  std::string s;
  for (const auto& t : c.tokens) s += t.piece;
  return s;
}

report::KindRows prompt_rows(const store::Experiment& e) {
  report::KindRows t{{"prompt", "trial", "prompt_text", "prompt_tokens", "a_text", "b_text",
                      "a_tokens", "b_tokens", "ended_a", "ended_b", "parted", "common", "a_token",
                      "b_token", "margin_a", "margin_b", "verdict_point", "verdict_layer"},
                     {},
                     {}};
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
      if (!p.transplant.empty()) {  // its shape checked by the reader
        const auto j = nlohmann::json::parse(p.transplant);
        if (j.contains("verdict")) {
          point = j["verdict"]["point"];
          layer = j["verdict"]["layer"];
        }
      }
      t.rows.push_back({r.prompt, trial, r.text, r.tokens.size(), joined(r.a), joined(r.b[k]),
                        r.a.tokens.size(), r.b[k].tokens.size(),
                        r.a.ended, r.b[k].ended, p.parted, p.common, a_token, b_token, margin_a,
                        margin_b, point, layer});
    }
  }
  return t;
}

void add_token_rows(report::KindRows& t, int prompt, const char* arm, int trial, const Completion& c) {
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    const GeneratedToken& g = c.tokens[i];
    t.rows.push_back({prompt, arm, trial, i, g.token, g.piece, g.logprob, g.top.p[0], margin(g.top),
                      top5_json(g.top, g.top_pieces).dump()});
  }
}

report::KindRows token_rows(const store::Experiment& e) {
  report::KindRows t{{"prompt", "arm", "trial", "i", "token_id", "token_text", "logprob", "p_top1",
                      "margin", "top5"},
                     {},
                     {}};
  for (const PromptResult& r : read_generate_prompts(e)) {
    add_token_rows(t, r.prompt, "a", 0, r.a);
    for (size_t k = 0; k < r.b.size(); ++k) add_token_rows(t, r.prompt, "b", static_cast<int>(k), r.b[k]);
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
  if (table != "prompts" && table != "tokens")
    throw InputError("a generate file's tables are prompts and tokens, not '" + table + "'");
  report::KindRows t = table == "prompts" ? prompt_rows(e) : token_rows(e);
  t.integrity = e.integrity_verdict();
  return t;
}

}  // namespace hd::kinds
