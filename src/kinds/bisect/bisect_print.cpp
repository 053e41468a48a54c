#include "kinds/bisect/bisect_print.h"

#include <fmt/format.h>

#include <map>

namespace hd::kinds::bisect {

namespace {

// A mean and its 95 % interval; the mean alone where there is none (one chunk: stored null).
std::string with_ci(const nlohmann::json& mean, const nlohmann::json& ci) {
  if (!mean.is_number()) return "not measured";
  if (!ci.is_number()) return fmt::format("{:.4g} (one chunk: no interval)", mean.get<double>());
  return fmt::format("{:.4g} ± {:.2g}", mean.get<double>(), ci.get<double>());
}

std::string kl_text(const nlohmann::json& f) {
  if (f.value("bitwise_identical", false)) return "0 (exactly)";
  return with_ci(f.at("kl_mean"), f.at("kl_ci95"));
}

std::string floor_text(const nlohmann::json& f) {
  if (f.value("floor_bitwise", false)) return "0 (bitwise)";
  return with_ci(f.at("floor_kl_mean"), f.at("floor_kl_ci95"));
}



std::string flips_text(const nlohmann::json& f) {
  return fmt::format("{} of {}", f.at("flips").get<int64_t>(), f.at("n_scored").get<int64_t>());
}

std::string who(const nlohmann::json& c) {
  if (c.is_null()) return "none";
  std::string s = c.at("name").get<std::string>();
  if (c.contains("subject")) s += "  " + c["subject"].get<std::string>();
  return printable(s);
}

void print_op(std::ostream& out, const nlohmann::json& op) {
  if (op.is_null()) return;
  if (op.contains("error")) {
    out << "where the numbers part: not found (" << printable(op["error"].get<std::string>()) << ")\n";
    return;
  }
  const auto& tap = op.at("first_tap");
  if (tap.is_null()) {
    out << fmt::format("taps on the first chunk ({} tokens): all identical between the two builds\n",
                       op.at("tokens").get<int>());
  } else {
    out << fmt::format("first divergent tap on the first chunk ({} tokens): {}  max |Δ| {:.3g}{}\n",
                       op.at("tokens").get<int>(), tap.at("name").get<std::string>(),
                       tap.at("max_abs").get<double>(),
                       tap.at("rel_err").is_null() ? "" : fmt::format(", rel. error {:.3g}", tap["rel_err"].get<double>()));
    out << "  last identical tap: " << (op.at("last_same_tap").is_null() ? "none (the first differs)" : op["last_same_tap"].get<std::string>()) << "\n";
    const auto& node = op.at("first_node");
    if (!node.is_null()) {
      out << fmt::format("  first divergent graph node (names and ops of this binary's graph): {} (ggml op {})  max |Δ| {:.3g}\n",
                         node.at("name").get<std::string>(), node.at("op").get<std::string>(),
                         node.at("max_abs").get<double>());
      const std::string o = node.at("op").get<std::string>();
      if (o == "RESHAPE" || o == "VIEW" || o == "PERMUTE" || o == "TRANSPOSE") {
        out << "    (" << o << " moves no values: the change is in a node before it)\n";
      }
      for (const auto& u : node.value("uncompared_before", nlohmann::json::array())) {
        out << fmt::format("    or before it, in {} (ggml op {}), which cannot be compared: {}\n",
                           u.at("name").get<std::string>(), u.at("op").get<std::string>(),
                           u.at("why").get<std::string>());
      }
    } else {
      out << fmt::format("  no graph node between them that could be compared differs ({} "
                         "compared): the tap's own op, or one of:\n",
                         op.value("nodes_compared", 0));
      for (const auto& u : op.value("uncompared", nlohmann::json::array())) {
        out << fmt::format("    {} (ggml op {}): {}\n", u.at("name").get<std::string>(),
                           u.at("op").get<std::string>(), u.at("why").get<std::string>());
      }
    }
    if (!op.value("nodes_missing", nlohmann::json::array()).empty())
      out << "  nodes one build does not have: " << op["nodes_missing"].dump() << "\n";
  }
  const auto& d = op.at("decode");
  out << fmt::format("single-token decode ({} steps): {}\n", op.at("decode_steps").get<int>(),
                     d.at("differs").get<bool>()
                         ? "differs too, first at " + d.at("first_tap").at("name").get<std::string>()
                         : std::string("identical"));
}

}  // namespace

std::string printable(std::string s) {
  for (char& ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  }
  return s;
}

void print_bisect(std::ostream& out, const nlohmann::json& doc) {
  const auto& cands = doc.at("candidates");
  out << fmt::format("bisect of {} from {} to {} ({} candidates)\n",
                     doc.at("mode").get<std::string>(), doc.at("good").get<std::string>(),
                     doc.at("bad").get<std::string>(), cands.size());
  out << "  model " << doc.at("model").get<std::string>() << "\n";
  out << "  criterion " << doc.at("criterion").get<std::string>() << ": "
      << doc.at("criterion_text").get<std::string>() << "\n\n";
  std::map<int, const nlohmann::json*> by_candidate;
  for (const auto& p : doc.at("probes")) by_candidate[p.at("candidate").get<int>()] = &p;
  const int first_bad = doc.at("first_bad").is_null() ? -1 : doc["first_bad"].at("index").get<int>();
  const bool ambiguous = doc.at("verdict") == "ambiguous";
  out << fmt::format("  {:<14} {:<8} {:<22} {:<22} {:<14} {:>8} {:>7}\n", "candidate", "outcome",
                     "mean KL vs good", "floor (larger)", "top-1 flips", "build", "diff");
  out << fmt::format("  {:<14} {}\n", cands.at(0).at("name").get<std::string>(), "good: every probe's arm A");
  for (const auto& [i, p] : by_candidate) {
    const nlohmann::json f = p->contains("figures") ? p->at("figures") : nlohmann::json(nullptr);
    const std::string mark =
        i != first_bad ? "" : ambiguous ? "  ← the newest suspect" : "  ← first that differs";
    if (f.is_null()) {
      out << fmt::format("  {:<14} {:<8} {}{}\n", p->at("name").get<std::string>(),
                         p->at("outcome").get<std::string>(), printable(p->value("reason", "")), mark);
      continue;
    }
    out << fmt::format("  {:<14} {:<8} {:<22} {:<22} {:<14} {:>7.0f}s {:>6.1f}s{}\n",
                       p->at("name").get<std::string>(), p->at("outcome").get<std::string>(),
                       kl_text(f), floor_text(f), flips_text(f), p->value("build_seconds", 0.0),
                       p->value("diff_seconds", 0.0), mark);
  }
  out << fmt::format("\n{} probes (a search of {} candidates needs at most {} when none is skipped)\n",
                     doc.at("probes").size(), cands.size(), doc.at("probes_needed").get<int>());
  const std::string verdict = doc.at("verdict").get<std::string>();
  if (verdict == "no change") {
    out << "no change: " << doc.at("bad").get<std::string>()
        << " does not differ from the good build by this criterion\n";
  } else if (verdict == "found") {
    out << "first that differs: " << who(doc.at("first_bad")) << "\n";
    out << "last that is the same: " << who(doc.at("last_same")) << "\n";
  } else if (verdict == "ambiguous") {
    out << "the first that differs is one of (the others between do not build or run):";
    for (const auto& i : doc.at("suspects")) out << " " << cands.at(i.get<size_t>()).at("name").get<std::string>();
    out << "\nwhere the newest suspect's numbers part from the good build's:\n";
  }
  if (doc.contains("range")) {
    out << "commits from the last that is the same to the first that differs:\n";
    for (const auto& c : doc["range"]) out << "  " << who(c) << "\n";
  }
  print_op(out, doc.at("op"));
}

}  // namespace hd::kinds::bisect
