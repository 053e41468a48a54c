// The coverage matrix: llama.cpp's fixture of every architecture (engine/fixtures.h) through
// every analysis its proven points allow (engine/point_survey.h), against known answers, and
// docs/architectures.md's table checked against what `heterodyne points --fixtures` prints.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "analysis/transplant_summary.h"
#include "engine/fixtures.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"
#include "kinds/views.h"
#include "run/capture.h"
#include "kinds/diff/diff_run.h"
#include "run/calibrate.h"
#include "kinds/check/check.h"
#include "run/session.h"
#include "test_support.h"

using namespace hd;

namespace {

struct Fixture {
  std::string name;  // "gemma2 (dense)"
  std::string path;
};

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> all = [] {
    std::vector<Fixture> out;
    for (const engine::FixtureArch& a : engine::fixture_archs()) {
      for (const bool moe : {false, true}) {
        if (moe ? a.moe : a.dense) {
          out.push_back({a.name + (moe ? " (moe)" : " (dense)"), engine::ensure_fixture(a.name, moe, 1)});
        }
      }
    }
    return out;
  }();
  return all;
}

constexpr int kChunk = 16;

std::vector<int32_t> tokens() {
  std::vector<int32_t> t(kChunk);
  for (int i = 0; i < kChunk; ++i) t[static_cast<size_t>(i)] = (i * 29 + 5) % 128;
  return t;
}

run::DiffConfig config(const std::string& model, const engine::PointMap& m) {
  run::DiffConfig c;
  c.a.model = c.b.model = model;
  // One thread: ctest runs two tests at once on two cores, where threads that spin-wait for
  // each other cost far more than they give (DESIGN.md §9: 14.3 s against 0.59 s), and 16-token
  // passes of these models gain nothing from a second.
  c.a.n_threads = c.b.n_threads = 1;
  c.chunk = kChunk;
  c.floor = m.floor();  // the same arm split into other ubatches: exactly as A where it splits
  c.transplants = m.transplants();
  c.components = m.components();
  if (m.routing()) c.analyses = {"routing", "routing_load"};
  if (m.routing_transplant()) c.analyses.push_back("routing_transplant");
  // The lens checks itself at the last layer on every chunk (the arm's own logits, bitwise):
  // a model on which that fails fails its run here.
  if (m.transplants()) c.analyses.push_back("lens");
  return c;
}

analysis::ChunkResult compute(const run::DiffConfig& c) {
  run::Session s(c);
  return s.compute(0, tokens());
}

void expect_all_zero(const analysis::ChunkResult& r) {
  if (r.floor) {  // A against A split otherwise: rounding only, but a number
    for (const auto& p : r.floor->positions) ASSERT_TRUE(std::isfinite(p.score.kl));
  }
  for (const auto& p : r.diff.positions) {
    ASSERT_EQ(p.score.kl, 0.0) << "position " << p.pos;
    ASSERT_EQ(p.score.nll_a, p.score.nll_b) << "position " << p.pos;
    ASSERT_EQ(p.score.top_a.id, p.score.top_b.id) << "position " << p.pos;
  }
  for (const auto& l : r.diff.layers) {
    ASSERT_EQ(l.diff.max_abs, 0.0) << "layer " << l.layer << " position " << l.pos;
  }
  if (r.transplants) {
    for (const auto* rows : {&r.transplants->denoise, &r.transplants->noise}) {
      for (const auto& row : *rows) ASSERT_EQ(row.kl, 0.0) << "restore step " << row.step;
    }
  }
  // Routing (analysis/routing.cpp's columns): the same experts, router and weights; nothing
  // left to transplant.
  if (r.analyses.count("routing")) {
    ASSERT_FALSE(r.analyses.at("routing").empty());
    for (const auto& row : r.analyses.at("routing")) {
      if (std::get<std::string>(row[0]) != "b") continue;
      ASSERT_EQ(std::get<int64_t>(row[3]), 0) << "layer " << std::get<int64_t>(row[1]);
      ASSERT_EQ(std::get<double>(row[6]), 0.0) << "router KL, layer " << std::get<int64_t>(row[1]);
      ASSERT_EQ(std::get<double>(row[7]), 0.0) << "weight moved";
    }
  }
  if (r.analyses.count("routing_transplant")) {
    for (const auto& row : r.analyses.at("routing_transplant")) {
      ASSERT_EQ(std::get<double>(row[3]), 0.0) << "routing transplant " << std::get<std::string>(row[0]);
    }
  }
  // The lens (analysis/lens.cpp's columns): the same at every layer in both arms.
  if (r.analyses.count("lens")) {
    ASSERT_FALSE(r.analyses.at("lens").empty());
    for (const auto& row : r.analyses.at("lens")) {
      ASSERT_EQ(std::get<double>(row[4]), 0.0) << "lens, layer " << std::get<int64_t>(row[0]);
      ASSERT_EQ(std::get<double>(row[2]), std::get<double>(row[3]));
    }
  }
}

// Every analysis a run stored summarizes from its rows.
void expect_summaries(const analysis::ChunkResult& r) {
  for (const auto& [name, rows] : r.analyses) {
    std::vector<analysis::StoredRow> stored;
    for (const auto& row : rows) stored.push_back({r.chunk, row});
    const auto t = analysis::find_chunk_analysis(name)->summarize(stored);
    EXPECT_FALSE(t.rows.empty()) << name;
  }
}

// The KL at every position after a restore point, by its label.
std::vector<double> denoise_at(const analysis::ChunkResult& r, const std::string& label) {
  std::vector<double> out;
  const auto& pts = r.transplants->points;
  const int step = static_cast<int>(std::find(pts.begin(), pts.end(), label) - pts.begin()) + 1;
  for (const auto& row : r.transplants->denoise) {
    if (row.step == step) out.push_back(row.kl);
  }
  return out;
}

// Whether a K cache of q8_0 applies: attention with a head dim of whole q8_0 blocks.
bool q8_k_cache_applies(const engine::ModelInfo& info, const engine::PointMap& m) {
  return m.has_per_head() && info.head_dim_k > 0 && info.head_dim_k % 32 == 0;
}

}  // namespace

// docs/architectures.md's table is what `heterodyne points --fixtures` prints now.
TEST(Architectures, DocsTableIsCurrent) {
  const auto r = test::run_cli({"points", "--fixtures"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(std::string(HD_SOURCE_DIR) + "/docs/architectures.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const std::string begin = "<!-- table: heterodyne points --fixtures -->\n";
  const std::string end = "<!-- end of table -->";
  const size_t b = text.find(begin);
  const size_t e = text.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/architectures.md lacks the table's begin marker";
  ASSERT_NE(e, std::string::npos) << "docs/architectures.md lacks the table's end marker";
  EXPECT_EQ(text.substr(b + begin.size(), e - b - begin.size()), r.out)
      << "regenerate the table: heterodyne points --fixtures";
}

struct Counts {
  int decode = 0, transplants = 0, components = 0, per_head = 0, k_cache = 0, routing = 0,
      routing_transplant = 0;
};

namespace {

// A q8_0 K cache changes attention alone: every MLP step is exactly 0, and so is the denoise at
// the last residual (B's head is A's). The steps telescope.
void check_k_cache(const run::DiffConfig& same, const engine::PointMap& m) {
  run::DiffConfig k = same;
  k.b.cache_type_k = "q8_0";
  const auto r = compute(k);
  for (const auto& p : r.diff.positions) ASSERT_TRUE(std::isfinite(p.score.kl));
  if (m.transplants()) {
    const std::string last = "l_out-" + std::to_string(m.n_layer - 1);
    for (double kl : denoise_at(r, last)) ASSERT_EQ(kl, 0.0) << "denoise at " << last;
  }
  if (m.components()) {
    const auto s = analysis::summarize_transplants({r});
    ASSERT_TRUE(s && s->has_components);
    for (const auto* d : {&s->denoise_components, &s->noise_components}) {
      for (const auto& l : d->layers) EXPECT_EQ(l.mlp.mean, 0.0) << "layer " << l.layer;
    }
    test::expect_steps_telescope(*s);
  }
}

// B = A quantized to Q8_0: finite KL above 0, and steps that telescope.
void check_q8_0(const run::DiffConfig& same, const engine::PointMap& m) {
  run::DiffConfig q = same;
  q.b_quant = "Q8_0";
  const auto r = compute(q);
  double kl = 0;
  for (const auto& p : r.diff.positions) {
    ASSERT_TRUE(std::isfinite(p.score.kl));
    kl += p.score.kl;
  }
  EXPECT_GT(kl, 0.0) << "Q8_0 changed nothing";
  expect_summaries(r);
  if (m.components()) test::expect_steps_telescope(*analysis::summarize_transplants({r}));
}

// The gate on the fixture: capture a reference of the token ids (every tap the points offer,
// every row, finite), calibrate it, and check the same arm against it: passed, every Δ 0.
void check_gate(const engine::ArmSettings& arm) {
  static const std::string dir = test::temp_dir("architectures-gate");
  const std::string ids = dir + "/ids.txt";
  std::ofstream(ids) << "5 34 63 92 121 22 51 80 109 10 39 68 97 126 27 56\n";
  run::CaptureConfig c;
  c.arm = arm;
  c.text_file = ids;
  c.token_ids = true;
  c.max_tokens = kChunk;
  const std::string ref = dir + "/ref";
  run::capture_reference(c, ref, true, "test", [](const std::string&) {});
  // Calibration re-splits the batch where the model splits it, else other threads only.
  run::calibrate_reference({ref, 2.0, 1e-3, true});
  hd::kinds::CheckConfig check;
  check.reference = ref;
  check.arm = arm;
  const nlohmann::json r = hd::kinds::check_reference(check);
  EXPECT_TRUE(r["passed"].get<bool>()) << r.dump();
  ASSERT_FALSE(r["taps"].empty());
  for (const auto& tap : r["taps"]) EXPECT_EQ(tap["max_abs"].get<double>(), 0.0) << tap.dump();
}

void check_fixture(const Fixture& f, Counts& n) {
  SCOPED_TRACE(f.name);
  const auto model = engine::model_load(f.path);
  // qwen3tts masks the logits past its codec head at -inf: masked tokens, which it runs with.
  const engine::PointMap m = engine::survey_points(model);
  ++n.decode;
  n.transplants += m.transplants() ? 1 : 0;
  n.components += m.components() ? 1 : 0;
  n.per_head += m.has_per_head() ? 1 : 0;
  n.routing += m.routing() ? 1 : 0;
  n.routing_transplant += m.routing_transplant() ? 1 : 0;
  // A model that does not route, or whose routing is not proven, says why in one line.
  for (const std::string* why : {&m.no_routing, &m.no_routing_transplant}) {
    EXPECT_EQ(why->find('\n'), std::string::npos) << *why;
  }
  if (!m.routing()) EXPECT_FALSE(m.no_routing.empty());
  const run::DiffConfig same = config(f.path, m);
  expect_all_zero(compute(same));
  if (q8_k_cache_applies(model->info(), m)) {
    ++n.k_cache;
    check_k_cache(same, m);
  }
  check_q8_0(same, m);
  check_gate(same.a);
}

}  // namespace

namespace {

// Every number a stored run shows is possible (issue 40): in show --json no KL below 0 (a key
// that starts with "kl", and everything under one) and every rate object {rate, lo, hi} inside
// [0, 1] with lo <= rate <= hi; in show's text no NaN and no negative KL.
void expect_possible(const nlohmann::json& j, const std::string& where, bool under_kl = false) {
  if (j.is_object()) {
    if (j.contains("rate") && j.contains("lo") && j.contains("hi")) {
      const auto& r = j["rate"];
      if (r.is_null()) {  // no rate at all ("no positions"): it says why
        EXPECT_TRUE(j.contains("why") && j["why"].is_string()) << where << ": " << j.dump();
        return;
      }
      ASSERT_TRUE(r.is_number()) << where << ": " << j.dump();
      EXPECT_GE(r.get<double>(), 0.0) << where;
      EXPECT_LE(r.get<double>(), 1.0) << where;
      if (j["lo"].is_number() && j["hi"].is_number()) {
        EXPECT_GE(j["lo"].get<double>(), 0.0) << where;
        EXPECT_LE(j["hi"].get<double>(), 1.0) << where;
        EXPECT_LE(j["lo"].get<double>(), r.get<double>()) << where;
        EXPECT_GE(j["hi"].get<double>(), r.get<double>()) << where;
      } else {
        EXPECT_TRUE(j.contains("why")) << where << ": a rate without an interval says why";
      }
    }
    for (const auto& [key, value] : j.items()) {
      expect_possible(value, where + "." + key, under_kl || key.rfind("kl", 0) == 0);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) expect_possible(j[i], where + "[" + std::to_string(i) + "]", under_kl);
  } else if (j.is_number() && under_kl) {
    EXPECT_GE(j.get<double>(), 0.0) << where;
  }
}

void expect_printable(const std::string& text, const std::string& what) {
  static const std::regex nan(R"((^|[^A-Za-z])nan([^A-Za-z]|$))", std::regex::icase);
  EXPECT_FALSE(std::regex_search(text, nan)) << what << ":\n" << text;
}

// B = A in Q8_0 with the floor and every analysis the points allow plus confidence, stored over
// two chunks and read back by show (text and --json, --routing and --lens where stored).
void check_views(const Fixture& f, const run::DiffConfig& same, const engine::PointMap& m) {
  static const std::string dir = test::temp_dir("architectures-views");
  const std::string ids = dir + "/ids.txt";
  {
    std::ofstream out(ids);
    for (int i = 0; i < 2 * kChunk; ++i) out << (i * 37 + 11) % 128 << ' ';
  }
  run::DiffConfig c = same;
  c.b_quant = "Q8_0";
  c.transplants = c.components = false;  // the matrix above checks them; here the views
  std::erase(c.analyses, "routing_transplant");  // likewise: its passes cost most, its view little
  c.text_file = ids;
  c.token_ids = true;
  c.analyses.push_back("confidence");
  std::string name = f.name;
  for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  const std::string out = dir + "/" + name + ".hdy";
  run::diff_run(c, out, true, "test", [](const Progress&) {});
  kinds::ShowRequest text;
  expect_printable(kinds::show_experiment(out, text).text, "show");
  kinds::ShowRequest json;
  json.json = true;
  expect_possible(nlohmann::json::parse(kinds::show_experiment(out, json).text), "show --json");
  if (m.routing()) {
    kinds::ShowRequest routing;
    routing.alone = "routing";
    expect_printable(kinds::show_experiment(out, routing).text, "show --routing");
  }
  if (m.transplants()) {
    kinds::ShowRequest lens;
    lens.alone = "lens";
    expect_printable(kinds::show_experiment(out, lens).text, "show --lens");
  }
}

}  // namespace

TEST(Architectures, EveryFixturesViewsShowOnlyPossibleNumbers) {
  int checked = 0;
  for (const Fixture& f : fixtures()) {
    SCOPED_TRACE(f.name);
    try {
      const auto model = engine::model_load(f.path);
      const engine::PointMap m = engine::survey_points(model);
      check_views(f, config(f.path, m), m);
      ++checked;
    } catch (const std::exception& e) {
      ADD_FAILURE() << f.name << ": " << e.what();
    }
  }
  EXPECT_GE(checked, 100);
}

// The whole matrix: identical arms are 0 everywhere; a q8_0 K cache and B = A in Q8_0 meet
// their known answers (above); the gate passes the arm against its own reference.
TEST(Architectures, EveryFixtureMeetsTheKnownAnswersItsPointsAllow) {
  const auto t0 = std::chrono::steady_clock::now();
  Counts counts;
  for (const Fixture& f : fixtures()) {
    try {
      check_fixture(f, counts);
    } catch (const std::exception& e) {
      ADD_FAILURE() << f.name << ": " << e.what();
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu fixtures: %d decode, %d transplants, %d components, %d per-head, %d with a "
              "q8_0 K cache, %d routing read, %d written; %.1f s\n",
              fixtures().size(), counts.decode, counts.transplants, counts.components,
              counts.per_head, counts.k_cache, counts.routing, counts.routing_transplant, s);
  EXPECT_GE(counts.decode, 100);
  EXPECT_GE(counts.routing, 40);  // of the 42 MoE fixtures that name ffn_moe_probs-N
  EXPECT_GE(counts.routing_transplant, 30);
}
