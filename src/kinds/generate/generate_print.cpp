// show FILE for a generate run: the headline (how many prompts part, where, how many distinct
// completions the trials give, which layers make them part), then every prompt: both
// completions with the parting token marked ⟦…⟧, the top-5 and margins there, the transplant.
#include <fmt/format.h>

#include "common/utf8.h"
#include "kinds/arms_text.h"
#include "kinds/generate/generate_summary.h"

namespace hd::kinds {

namespace {

std::string rate(const nlohmann::json& r, const char* key) {
  return r.contains(key) && r[key].is_object() ? r[key].value("text", std::string("—")) : "—";
}

// The completion's text with its token at `mark` (-1: none) between ⟦ and ⟧; control bytes
// and invalid UTF-8 as \xHH (a token's text is the model's, and a terminal draws what it gets).
std::string completion_text(const nlohmann::json& pieces, int mark) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string p = printable(pieces[i].get<std::string>(), 400);
    out += static_cast<int>(i) == mark ? "⟦" + p + "⟧" : p;
  }
  return out;
}

std::string top_text(const nlohmann::json& top) {
  std::string out;
  for (const auto& t : top) {
    out += fmt::format("{}'{}' {:.3f}", out.empty() ? "" : ", ", printable(t[2].get<std::string>(), 40),
                       t[1].get<double>());
  }
  return out;
}

std::string verdict_text(const nlohmann::json& v, int n_layer) {
  const int layer = v.value("layer", 0);
  if (layer < 0) return "B's token embeddings";
  if (layer >= n_layer) return "B's output head (the final norm and output matrix)";
  return fmt::format("layer {}", layer);
}

void print_transplant(std::ostream& out, const nlohmann::json& t, int n_layer) {
  if (!t.value("parts", false)) {
    out << fmt::format("    transplant: teacher-forced, A and B both predict '{}' here: the parting "
                       "comes from the decode steps' kernels, not from a layer\n",
                       printable(t.value("a_piece", std::string()), 40));
    return;
  }
  out << fmt::format("    transplant: made to part by {} (A's state copied into B past it gives back "
                     "'{}')\n", verdict_text(t["verdict"], n_layer),
                     printable(t.value("a_piece", std::string()), 40));
  std::string steps;
  for (const auto& s : t["steps"]) {
    steps += fmt::format("{}{}{}", steps.empty() ? "" : " ", s["point"].get<std::string>(),
                         s.value("restores", false) ? "✓" : "✗");
  }
  out << "      A's state copied into B at each point gives back A's token: " << steps << "\n";
}

void print_prompt(std::ostream& out, const nlohmann::json& p, int n_layer) {
  out << fmt::format("\nprompt {} ({} tokens): {}\n", p["prompt"].get<int>(), p["n_tokens"].get<int>(),
                     printable(p["text"].get<std::string>(), 160));
  const auto& trials = p["b"];
  const auto& first = trials.at(0);
  const int parted = first["parted"].get<int>();
  if (parted < 0) {
    out << fmt::format("  parted: never ({} tokens in common)\n", first["common"].get<int>());
  } else {
    out << fmt::format("  parted at generated token {} (common prefix {})\n", parted, first["common"].get<int>());
  }
  out << "    A: " << completion_text(p["a"]["pieces"], parted) << "\n";
  out << "    B: " << completion_text(first["pieces"], parted) << "\n";
  if (parted >= 0) {
    out << fmt::format("    A's top-5 there: {} (margin {:.3f})\n", top_text(first["top_a"]), first["margin_a"].get<double>());
    out << fmt::format("    B's top-5 there: {} (margin {:.3f})\n", top_text(first["top_b"]), first["margin_b"].get<double>());
  }
  for (const auto& b : trials) {
    if (b.contains("transplant")) print_transplant(out, b["transplant"], n_layer);
  }
  if (trials.size() > 1) {
    int parted_trials = 0;
    for (const auto& b : trials) parted_trials += b["parted"].get<int>() >= 0 ? 1 : 0;
    out << fmt::format("  over {} trials: {} part from A\n", trials.size(), parted_trials);
  }
}

}  // namespace

void print_generate(std::ostream& out, const report::LoadedResult& l) {
  const nlohmann::json& r = l.result;
  out << arms_text(r.value("a", nlohmann::json()), r.value("b", nlohmann::json()));
  const double temp = r.value("temperature", 0.0);
  out << fmt::format("{} prompts, up to {} generated tokens each, {}\n", r.value("n_prompts", 0),
                     r.value("max_tokens", 0),
                     temp > 0 ? fmt::format("sampled at temperature {} with seed {} on both arms "
                                            "(parting then also measures the sampler's sensitivity)",
                                            temp, r.value("seed", 0u))
                              : std::string("greedy"));
  out << "  parted (B's first trial against A): " << rate(r, "parted") << "\n";
  const auto& median = r.value("median_parting", nlohmann::json());
  out << "  median parting token: " << (median.is_number() ? fmt::format("{:g}", median.get<double>()) : "—") << "\n";
  if (r.contains("distinct")) {
    const auto& d = r["distinct"];
    out << fmt::format("  over {} trials of B: parted in any: {}; distinct completions per prompt: "
                       "mean {:.2f}, most {}; A's completion among them in {} prompts\n",
                       r.value("trials", 0), rate(r, "parted_any"),
                       d.value("mean", nlohmann::json(0.0)).get<double>(), d.value("max", 0),
                       d.value("a_among_them", 0));
  }
  const auto& t = r.value("transplants", nlohmann::json::object());
  int n_layer = 0;
  if (l.provenance.contains("points")) n_layer = l.provenance["points"].value("n_layer", 0);
  if (t.contains("why_not")) {
    out << "  transplants: none (" << t["why_not"].get<std::string>() << ")\n";
  } else {
    std::string verdicts;
    for (const auto& v : t.value("verdicts", nlohmann::json::array())) {
      verdicts += fmt::format("{}{}: {}", verdicts.empty() ? "" : ", ", verdict_text(v, n_layer),
                              v["prompts"].get<int>());
    }
    out << fmt::format("  what makes it part (transplants at {} partings): {}{}\n", t.value("run", 0),
                       verdicts.empty() ? "—" : verdicts,
                       t.value("not_parting_teacher_forced", 0) > 0
                           ? fmt::format("; teacher-forced, no parting at {}", t["not_parting_teacher_forced"].get<int>())
                           : "");
  }
  for (const auto& p : r.value("prompts", nlohmann::json::array())) print_prompt(out, p, n_layer);
}

}  // namespace hd::kinds
