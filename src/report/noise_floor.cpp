#include "report/noise_floor.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "analysis/floor_sample.h"
#include "common/json_number.h"
#include "report/figures.h"
#include "report/rates.h"

namespace hd::report {

using analysis::MeanCI;
using analysis::Standing;

namespace {

// One floor's figure: "0 (bitwise)" when that comparison was bitwise identical.
std::string floor_cell(const analysis::ComparisonSummary& f, const MeanCI& m, double scale = 1) {
  return f.bitwise_identical ? "0 (bitwise)" : with_ci(m, scale);
}

double hi(const analysis::Summary& s, const MeanCI& larger) {
  if (!s.has_floor) return std::numeric_limits<double>::quiet_NaN();
  return s.noise.bitwise_identical ? 0 : analysis::upper_end(larger);
}

// The figure a ratio is taken to: the floor's mean (0 when it is bitwise).
double floor_mean(const analysis::Summary& s, const MeanCI& larger) {
  return s.noise.bitwise_identical ? 0 : larger.mean;
}

analysis::FloorRef floor_of(const analysis::Summary& s, const MeanCI& larger) {
  if (!s.has_floor) return {};
  return {hi(s, larger), floor_mean(s, larger)};
}

// "A′ at ubatch 65, B′ at 65" for one split; the splits' ubatches from the provenance.
std::string split_ubatches(const Loaded& l, int split) {
  const char* a = split == 0 ? "floor_ubatch" : "floor_ubatch_2";
  const char* b = split == 0 ? "floor_ubatch_b" : "floor_ubatch_b_2";
  std::string out = fmt::format("A′ at ubatch {}", l.provenance.value(a, 0));
  if (l.provenance.value(b, 0) > 0) out += fmt::format(", B′ at {}", l.provenance.value(b, 0));
  return out;
}

}  // namespace

// How many of the run's chunks the floor covers, where it is not every one.
std::string floor_coverage_note(const Loaded& l) {
  const auto& s = l.summary;
  const std::string choice = l.config.value("floor_chunks", std::string("all"));
  // A part of a sharded run may hold none of the sample's chunks: its merge has the floor.
  const auto sample = l.provenance.find("floor_chunks");
  if (!s.has_floor && l.provenance.contains("shard") &&
      l.provenance.value("floor_ubatch", 0) > 0 && sample != l.provenance.end() &&
      sample->is_array() && !sample->empty()) {
    return fmt::format("floor: none of this file's {} chunks is in the floor's sample ({} "
                       "chunks of the run, --floor-chunks {}); merge the parts to read it",
                       s.n_chunks, sample->size(), choice);
  }
  if (!s.has_floor || s.floor_chunks >= s.n_chunks) return "";
  return fmt::format("floor: measured on {} of {} chunks (--floor-chunks {}: {}), its interval "
                     "and PPLs over those{}; --floor-chunks all measures every chunk",
                     s.floor_chunks, s.n_chunks, choice, analysis::floor_rule_text(choice),
                     s.floor_chunks < analysis::kFewChunks ? ", the interval wide over so few"
                                                           : "");
}

// Which splits the floor was measured on, and where they disagree by more than
// analysis::kSplitsDisagree, that one split alone would have understated the noise.
std::string floor_splits_note(const Loaded& l) {
  const auto& s = l.summary;
  if (!s.has_floor) return "";
  if (s.splits.empty()) {
    return fmt::format("floor: one split ({}; no second: the chunk is too short for one, "
                       "--floor-ub names one, or the file is from before two)",
                       split_ubatches(l, 0));
  }
  const auto kl = [](double v) { return v == 0 ? std::string("0 (bitwise)") : num(v); };
  const auto part = [&](const analysis::SplitFloor& f) {
    return fmt::format("{} ({} chunks, KL {})", split_ubatches(l, f.split),
                       f.split == 0 ? "even" : "odd", kl(f.kl));
  };
  if (s.splits.size() == 1) {  // a run of one chunk, or a part of a sharded run
    return fmt::format("floor: one split in this file: {}; the run alternates two, chunk by chunk",
                       part(s.splits[0]));
  }
  std::string out = fmt::format("floor: two splits, chunks alternating: {}; {}; ",
                                part(s.splits[0]), part(s.splits[1]));
  out += s.splits_read_alone
             ? "the KL and top-1 floors are the larger split's, the layers' and the analyses' "
               "pool both"
             : "a split of one chunk has no interval, so every floor pools both";
  // NaN: both bitwise (or a value missing), no disagreement; +inf: one bitwise, the other not.
  if (std::isinf(s.split_ratio)) {
    out += "; the splits disagree: one is bitwise, the other not";
  } else if (s.split_ratio > analysis::kSplitsDisagree) {
    out += fmt::format("; the splits disagree by {:.0f}×: one split alone would have understated "
                       "the noise",
                       s.split_ratio);
  }
  return out;
}

nlohmann::json comparison_json(const analysis::ComparisonSummary& s) {
  nlohmann::json pct;
  for (const auto& p : s.kl_percentiles) pct[p.label] = p.value;
  return {{"n_scored", s.n_scored},
          {"kl_mean", s.kl.mean},
          {"kl_ci95", s.kl.ci95},
          {"kl_percentiles", pct},
          {"top1_change_rate", s.top1_rate.rate},
          {"top1_change", rate_json(s.top1_rate)},
          {"ppl_a", s.ppl_a},
          {"ppl_b", s.ppl_b},
          {"bitwise_identical", s.bitwise_identical},
          {"kl_infinite_positions", s.n_kl_infinite},
          {"first_kl_infinite",
           s.n_kl_infinite == 0
               ? nlohmann::json()
               : nlohmann::json{{"chunk", s.first_infinite_chunk}, {"pos", s.first_infinite_pos}}},
          {"nll_infinite_positions", s.n_nll_infinite}};
}

namespace {

void print_kl_table(std::ostream& os, const Loaded& l) {
  const auto& s = l.summary;
  // "ub 65" for one split, "ub 65, 43" for two (the columns pool both; the note below splits them).
  // "ub 65" for one split, "ub 65, 43" for two: the splits this file holds (the columns pool
  // them; the note below splits them).
  const auto ubs = [&](const char* first, const char* second) {
    const int u[2] = {l.provenance.value(first, 0), l.provenance.value(second, 0)};
    if (s.splits.empty()) return fmt::format("ub {}", u[0]);
    std::string out = "ub";
    for (const analysis::SplitFloor& f : s.splits)
      out += (out == "ub" ? " " : ", ") + std::to_string(u[f.split]);
    return out;
  };
  const std::string head_a = fmt::format("A vs A′ ({})", ubs("floor_ubatch", "floor_ubatch_2"));
  const std::string head_b = s.has_floor_b
                                 ? fmt::format("B vs B′ ({})", ubs("floor_ubatch_b", "floor_ubatch_b_2"))
                                 : "B vs B′: not measured";
  if (!s.has_floor) {
    os << fmt::format("\n  {:<16} {:<28} {}\n", "", "A vs B", "floor: not measured");
  } else {
    os << fmt::format("\n  {:<16} {:<28} {:<22} {:<22} {:<22} {}\n", "", "A vs B",
                      "floor (larger)", head_a, head_b, "against the floor");
  }
  const auto row = [&](const char* label, const MeanCI& v, const MeanCI& fl, const MeanCI& fa,
                       const MeanCI& fb, double scale) {
    if (!s.has_floor) {
      os << fmt::format("  {:<16} {}\n", label, with_ci(v, scale));
      return;
    }
    const Standing st = analysis::standing(v, floor_of(s, fl));
    os << fmt::format("  {:<16} {:<28} {:<22} {:<22} {:<22} {}\n", label, with_ci(v, scale),
                      s.noise.bitwise_identical ? "0 (bitwise)" : with_ci(fl, scale),
                      floor_cell(s.floor, fa, scale),
                      s.has_floor_b ? floor_cell(s.floor_b, fb, scale) : "", standing_text(st));
  };
  row("mean KL", s.diff.kl, s.noise.kl, s.floor.kl, s.floor_b.kl, 1);
  // A rate's interval stays inside [0, 1] (analysis::RateCI), and so is read against the floor's.
  const auto rate = [](const analysis::ComparisonSummary& f) {
    return f.bitwise_identical ? std::string("0 (bitwise)") : rate_text(f.top1_rate);
  };
  if (!s.has_floor) {
    os << fmt::format("  {:<16} {}\n", "top-1 change", rate_text(s.diff.top1_rate));
  } else {
    os << fmt::format("  {:<16} {:<28} {:<22} {:<22} {:<22} {}\n", "top-1 change",
                      rate_text(s.diff.top1_rate),
                      s.noise.bitwise_identical ? "0 (bitwise)" : rate_text(s.noise.top1_rate),
                      rate(s.floor), s.has_floor_b ? rate(s.floor_b) : "",
                      analysis::rate_standing_text(s.diff.top1_rate, s.noise.top1_rate));
  }
  // A floor's PPL is that of the re-split arm: A′ beside A, B′ beside B.
  // Over a sample of the chunks, A′ is read beside A on the same chunks, not on all of them.
  const bool sampled = s.floor_chunks < s.n_chunks;
  const auto resplit = [&](const analysis::ComparisonSummary& f, const char* arm) {
    return ppl_text(f.ppl_b) + " (" + arm + "′" +
           (sampled ? std::string("; ") + arm + " on its chunks " + ppl_text(f.ppl_a) : "") + ")";
  };
  const std::string pad(s.has_floor ? 22 : 0, ' ');
  os << fmt::format("  {:<16} {:<28} {}{}\n", "PPL A", ppl_text(s.diff.ppl_a), pad,
                    s.has_floor ? resplit(s.floor, "A") : "");
  os << fmt::format("  {:<16} {:<28} {}{:<22} {}\n", "PPL B", ppl_text(s.diff.ppl_b), pad, "",
                    s.has_floor_b ? resplit(s.floor_b, "B") : "");
}

void print_percentiles(std::ostream& os, const analysis::Summary& s) {
  os << "\n  KL percentiles  ";
  for (const auto& p : s.diff.kl_percentiles) os << fmt::format("{} {}  ", p.label, num(p.value));
  if (!s.has_floor) {
    os << "\n";
    return;
  }
  os << "\n  floor (larger)  ";
  std::string below;
  for (size_t i = 0; i < s.noise.kl_percentiles.size(); ++i) {
    const auto& f = s.noise.kl_percentiles[i];
    os << fmt::format("{} {}  ", f.label, num(f.value));
    if (i < s.diff.kl_percentiles.size() && f.value > 0 && s.diff.kl_percentiles[i].value <= f.value)
      below += std::string(below.empty() ? "" : ", ") + f.label;
  }
  os << "\n";
  if (!below.empty()) os << "  " << analysis::kBelowFloor << ": " << below << "\n";
}

void print_layers(std::ostream& os, const analysis::Summary& s) {
  os << "\n  residual after each layer (l_out-N), scored positions:\n";
  os << fmt::format("  {:>5}  {:<26} {:>10} {:>12} {:>14} {:>10} {:>10}  {}\n", "layer",
                    "rel. L2 error", "cosine", "max |Δ|", "floor rel err", "A vs A′", "B vs B′",
                    "against the floor");
  for (const auto& r : s.layers) {
    const Standing st = analysis::standing(r.rel_err, r.floor_rel_err_mean);
    // A floor not measured (a model that keeps no KV cache cannot be re-split) is "n/a".
    const auto floor = [](double v) { return std::isnan(v) ? "n/a" : fmt::format("{:.3g}", v); };
    os << fmt::format("  {:>5}  {:<26} {:>10.6f} {:>12.5g} {:>14} {:>10} {:>10}  {}\n", r.layer,
                      with_ci(r.rel_err), r.cosine_mean, r.max_abs, floor(r.floor_rel_err_mean),
                      floor(r.floor_a_rel_err_mean), floor(r.floor_b_rel_err_mean),
                      standing_text(st));
  }
}

}  // namespace

analysis::FloorRef kl_floor(const analysis::Summary& s) {
  return {hi(s, s.noise.kl), s.has_floor ? floor_mean(s, s.noise.kl) : hi(s, s.noise.kl)};
}

// The top-1 change rate's standing, as the text table words it (one statement or none).
static nlohmann::json rate_standing_json(const analysis::Summary& s) {
  nlohmann::json a = nlohmann::json::array();
  if (!s.has_floor) return a;
  const std::string t = analysis::rate_standing_text(s.diff.top1_rate, s.noise.top1_rate);
  if (!t.empty()) a.push_back(t);
  return a;
}

nlohmann::json standing_json(const Standing& s) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& n : analysis::standing_notes(s)) a.push_back(n);
  return a;
}

std::string floor_kl_cell(const analysis::Summary& s) {
  if (!s.has_floor) return "not measured";
  return s.noise.bitwise_identical ? "0 (bitwise)" : with_ci(s.noise.kl);
}

void print_against_floor(std::ostream& os, const Loaded& l) {
  const auto& s = l.summary;
  print_kl_table(os, l);
  if (const std::string note = analysis::few_chunks_note(s.n_chunks); !note.empty())
    os << "  " << note << "\n";
  if (const std::string note = analysis::infinite_kl_note(s.diff); !note.empty())
    os << "  " << note << "\n";
  if (const std::string note = floor_coverage_note(l); !note.empty()) os << "  " << note << "\n";
  if (const std::string note = floor_splits_note(l); !note.empty()) os << "  " << note << "\n";
  print_percentiles(os, s);
  print_layers(os, s);
}

void add_floor_json(nlohmann::json& j, const Loaded& l) {
  const auto& s = l.summary;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  j["floor_kl_mean"] = s.has_floor ? s.noise.kl.mean : nan;
  j["floor_kl_ci95"] = s.has_floor ? s.noise.kl.ci95 : nan;
  j["floor_top1_change_rate"] = s.has_floor ? s.noise.top1_rate.rate : nan;
  j["floor_top1_change"] = s.has_floor ? rate_json(s.noise.top1_rate) : nlohmann::json();
  j["floor"] = nullptr;
  j["floor_a"] = s.has_floor ? comparison_json(s.floor) : nlohmann::json();
  j["floor_b"] = s.has_floor_b ? comparison_json(s.floor_b) : nlohmann::json();
  if (s.has_floor) {
    nlohmann::json pct;
    for (const auto& p : s.noise.kl_percentiles) pct[p.label] = p.value;
    j["floor"] = {{"kl_mean", s.noise.kl.mean},
                  {"kl_ci95", s.noise.kl.ci95},
                  {"kl_percentiles", pct},
                  {"top1_change_rate", s.noise.top1_rate.rate},
                  {"top1_change", rate_json(s.noise.top1_rate)},
                  {"bitwise_identical", s.noise.bitwise_identical},
                  {"ppl_a_resplit", s.floor.ppl_b},
                  {"ppl_b_resplit", s.has_floor_b ? s.floor_b.ppl_b : nan},
                  {"ubatch_a", l.provenance.value("floor_ubatch", 0)},
                  {"ubatch_b", l.provenance.value("floor_ubatch_b", 0)},
                  {"chunks_measured", s.floor_chunks},
                  {"chunks_rule", analysis::floor_rule_text(
                                      l.config.value("floor_chunks", std::string("all")))},
                  {"splits", nlohmann::json::array()},
                  {"split_ratio", s.splits.empty() ? nlohmann::json() : json_number(s.split_ratio)}};
    if (s.floor_chunks < s.n_chunks) {  // A's and B's own PPL on the floor's sample of chunks
      j["floor"]["ppl_a_on_floor_chunks"] = s.floor.ppl_a;
      j["floor"]["ppl_b_on_floor_chunks"] = s.has_floor_b ? s.floor_b.ppl_a : nan;
    }
    for (const analysis::SplitFloor& f : s.splits) {
      const bool second = f.split == 1;
      j["floor"]["splits"].push_back(
          {{"split", f.split},
           {"chunks", second ? "odd" : "even"},
           {"ubatch_a", l.provenance.value(second ? "floor_ubatch_2" : "floor_ubatch", 0)},
           {"ubatch_b", l.provenance.value(second ? "floor_ubatch_b_2" : "floor_ubatch_b", 0)},
           {"kl_mean", f.kl},
           {"floor_a", comparison_json(f.a)},
           {"floor_b", f.has_b ? comparison_json(f.b) : nlohmann::json()}});
    }
  }
  const std::string coverage = floor_coverage_note(l);
  j["floor_coverage_note"] = coverage.empty() ? nlohmann::json() : nlohmann::json(coverage);
  const std::string splits_note = floor_splits_note(l);
  j["floor_splits_note"] = splits_note.empty() ? nlohmann::json() : nlohmann::json(splits_note);
  j["standing"] = {
      {"kl", standing_json(analysis::standing(s.diff.kl, floor_of(s, s.noise.kl)))},
      {"top1_change", rate_standing_json(s)}};
  const std::string note = analysis::few_chunks_note(s.n_chunks);
  j["intervals_note"] = note.empty() ? nlohmann::json() : nlohmann::json(note);
  const std::string infinite = analysis::infinite_kl_note(s.diff);
  j["infinite_note"] = infinite.empty() ? nlohmann::json() : nlohmann::json(infinite);
  j["layers"] = nlohmann::json::array();
  for (const auto& r : s.layers) {
    j["layers"].push_back(
        {{"layer", r.layer},
         {"rel_err_mean", r.rel_err.mean},
         {"rel_err_ci95", r.rel_err.ci95},
         {"cosine_mean", r.cosine_mean},
         {"max_abs", r.max_abs},
         {"floor_rel_err_mean", r.floor_rel_err_mean},
         {"floor_a_rel_err_mean", r.floor_a_rel_err_mean},
         {"floor_b_rel_err_mean", r.floor_b_rel_err_mean},
         {"standing", standing_json(analysis::standing(r.rel_err, r.floor_rel_err_mean))}});
  }
}

}  // namespace hd::report
