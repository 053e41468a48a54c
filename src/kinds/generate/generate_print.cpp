// show FILE for a generate run: the headline (how many prompts part, where, how many distinct
// completions the trials give, which layers make them part), then every prompt: both
// completions with the parting token marked ⟦…⟧, the top-5 and margins there, the transplant.
// The stored summary is read key by key with a default for anything missing or of another type
// (a damaged file prints "—", never crashes), and every stored string is made printable: token
// texts, prompts and paths are anyone's bytes, and a terminal draws what it gets.
#include <fmt/format.h>

#include "common/utf8.h"
#include "kinds/arms_text.h"
#include "kinds/generate/generate_summary.h"

namespace hd::kinds {

namespace {

using nlohmann::json;

std::string text(const json& j, const char* key, size_t max = 200) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? printable(j[key].get<std::string>(), max) : "—";
}
int integer(const json& j, const char* key, int otherwise = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : otherwise;
}
std::string number(const json& j, const char* key, const char* format = "{:.3f}") {
  return j.is_object() && j.contains(key) && j[key].is_number()
             ? fmt::format(fmt::runtime(format), j[key].get<double>())
             : "—";
}
const json& object(const json& j, const char* key) {
  static const json none = json::object();
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : none;
}
const json& list(const json& j, const char* key) {
  static const json none = json::array();
  return j.is_object() && j.contains(key) && j[key].is_array() ? j[key] : none;
}

std::string rate(const json& r, const char* key) { return text(object(r, key), "text"); }

// The completion's text with its token at `mark` (-1: none) between ⟦ and ⟧.
std::string completion_text(const json& pieces, int mark) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string p = pieces[i].is_string() ? printable(pieces[i].get<std::string>(), 400) : "";
    out += static_cast<int>(i) == mark ? "⟦" + p + "⟧" : p;
  }
  return out;
}

std::string top_text(const json& top) {
  std::string out;
  for (const auto& t : top) {
    if (!t.is_array() || t.size() != 3 || !t[1].is_number() || !t[2].is_string()) continue;
    out += fmt::format("{}'{}' {:.3f}", out.empty() ? "" : ", ", printable(t[2].get<std::string>(), 40),
                       t[1].get<double>());
  }
  return out;
}

std::string verdict_text(const json& v, int n_layer) {
  const int layer = integer(v, "layer");
  if (layer < 0) return "B's token embeddings";
  if (text(v, "point") == "head" || layer >= n_layer) return "B's output head (the final norm and output matrix)";
  return fmt::format("layer {}", layer);
}

void print_transplant(std::ostream& out, const json& t, int n_layer) {
  if (!t.value("parts", false)) {
    out << (integer(t, "a_top1", -1) != integer(t, "a_token", -2)
                ? fmt::format("    transplant: teacher-forced, A predicts '{}' here, not its generated '{}': "
                              "the decode steps' kernels moved A's own token; no layer is named\n",
                              text(t, "a_top1_piece", 40), text(t, "a_piece", 40))
                : fmt::format("    transplant: teacher-forced, B predicts A's '{}' here too: the parting "
                              "comes from the decode steps' kernels, not from a layer\n",
                              text(t, "a_piece", 40)));
    return;
  }
  out << fmt::format("    transplant: made to part by {} (A's state copied into B past it gives back "
                     "'{}')\n", verdict_text(object(t, "verdict"), n_layer), text(t, "a_piece", 40));
  std::string steps;
  for (const auto& s : list(t, "steps")) {
    steps += fmt::format("{}{}{}", steps.empty() ? "" : " ", text(s, "point", 40),
                         s.is_object() && s.value("restores", false) ? "✓" : "✗");
  }
  out << "      A's state copied into B at each point gives back A's token: " << steps << "\n";
}

void print_prompt(std::ostream& out, const json& p, int n_layer) {
  out << fmt::format("\nprompt {} ({} tokens): {}\n", integer(p, "prompt"), integer(p, "n_tokens"),
                     text(p, "text", 160));
  const json& trials = list(p, "b");
  if (trials.empty() || !trials[0].is_object()) return;
  const json& first = trials[0];
  const int parted = integer(first, "parted", -1);
  out << (parted < 0 ? fmt::format("  parted: never ({} tokens in common)\n", integer(first, "common"))
                     : fmt::format("  parted at generated token {} (common prefix {})\n", parted,
                                   integer(first, "common")));
  out << "    A: " << completion_text(list(object(p, "a"), "pieces"), parted) << "\n";
  out << "    B: " << completion_text(list(first, "pieces"), parted) << "\n";
  if (parted >= 0) {
    out << fmt::format("    A's top-5 there: {} (margin {})\n", top_text(list(first, "top_a")), number(first, "margin_a"));
    out << fmt::format("    B's top-5 there: {} (margin {})\n", top_text(list(first, "top_b")), number(first, "margin_b"));
  }
  int parted_trials = 0;
  for (const auto& b : trials) {
    if (b.is_object() && b.contains("transplant")) print_transplant(out, b["transplant"], n_layer);
    parted_trials += integer(b, "parted", -1) >= 0 ? 1 : 0;
  }
  if (trials.size() > 1) out << fmt::format("  over {} trials: {} part from A\n", trials.size(), parted_trials);
}

void print_headline(std::ostream& out, const json& r, int n_layer) {
  const double temp = r.contains("temperature") && r["temperature"].is_number() ? r["temperature"].get<double>() : 0;
  out << fmt::format("{} prompts, up to {} generated tokens each, {}\n", integer(r, "n_prompts"),
                     integer(r, "max_tokens"),
                     temp > 0 ? fmt::format("sampled at temperature {} with seed {} on both arms "
                                            "(parting then also measures the sampler's sensitivity)",
                                            temp, number(r, "seed", "{:.0f}"))
                              : std::string("greedy"));
  out << "  parted (B's first trial against A): " << rate(r, "parted") << "\n";
  out << "  median parting token: " << number(r, "median_parting", "{:g}") << "\n";
  if (r.contains("distinct")) {
    const json& d = object(r, "distinct");
    out << fmt::format("  over {} trials of B: parted in any: {}; distinct completions per prompt: "
                       "mean {}, most {}; A's completion among them in {} prompts\n",
                       integer(r, "trials"), rate(r, "parted_any"), number(d, "mean", "{:.2f}"),
                       integer(d, "max"), integer(d, "a_among_them"));
  }
  const json& t = object(r, "transplants");
  if (t.contains("why_not")) {
    out << "  transplants: none (" << text(t, "why_not") << ")\n";
    return;
  }
  std::string verdicts;
  for (const auto& v : list(t, "verdicts")) {
    verdicts += fmt::format("{}{}: {}", verdicts.empty() ? "" : ", ", verdict_text(v, n_layer), integer(v, "prompts"));
  }
  const int not_parting = integer(t, "not_parting_teacher_forced");
  out << fmt::format("  what makes it part (transplants at {} partings): {}{}\n", integer(t, "run"),
                     verdicts.empty() ? "—" : verdicts,
                     not_parting > 0 ? fmt::format("; teacher-forced, no parting at {}", not_parting) : "");
}

}  // namespace

void print_generate(std::ostream& out, const report::LoadedResult& l) {
  const json& r = l.result;
  out << arms_text(r.value("a", json()), r.value("b", json()));
  const int n_layer = integer(object(l.provenance, "points"), "n_layer");
  print_headline(out, r, n_layer);
  for (const auto& p : list(r, "prompts")) print_prompt(out, p, n_layer);
}

}  // namespace hd::kinds
