// MoE routing through the whole tool (analysis/routing.h, engine/route_survey.h) on
// tiny-qwen3moe (8 experts, 2 used, head dim 64), against known answers:
//   - identical arms: no routing change, router KL 0, every routing transplant KL 0;
//   - B = A with only its routers (ffn_gate_inp) perturbed: routing changes, and B with A's
//     experts and weights written at every MoE layer is A, bit for bit (KL exactly 0), while A
//     with B's is B (its KL is the diff's, bit for bit);
//   - an arm's own routing written back into it changes nothing, bitwise;
//   - a dense model refuses --routing in one line.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "engine/arm.h"
#include "engine/model.h"
#include "engine/model_maker.h"
#include "engine/point_survey.h"
#include "test_support.h"

using namespace hd;

namespace {

const std::string& dir() {
  static const std::string d = test::temp_dir("routing");
  return d;
}

// A, and A with its routers perturbed; 2 chunks of 48 token ids.
struct Files {
  std::string a, b, ids;
};
const Files& files() {
  static const Files f = [] {
    Files out{dir() + "/moe.gguf", dir() + "/moe-router.gguf", dir() + "/ids.txt"};
    engine::make_model({"tiny-qwen3moe", 1, "f16"}, out.a);
    engine::ModelSpec b{"tiny-qwen3moe", 1, "f16"};
    b.perturb = "ffn_gate_inp";
    engine::make_model(b, out.b);
    std::ofstream ids(out.ids);
    for (int i = 0; i < 96; ++i) ids << (i * 7919 + 13) % 150000 << ' ';
    return out;
  }();
  return f;
}

test::CliResult diff(const std::string& b, const std::string& out) {
  return test::run_cli({"diff", "--a", files().a, "--b", b, "--tokens", files().ids, "--chunk",
                        "48", "--threads", "2", "--routing", "--routing-transplant", "-o", out,
                        "--force"});
}

// One number from the run's file.
double query(const std::string& file, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  const double v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_double(q, 0) : NAN;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

}  // namespace

TEST(Routing, IdenticalArmsRouteAlikeAndTransplantNothing) {
  const std::string out = dir() + "/same.hdy";
  const auto r = diff(files().a, out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(query(out, "SELECT count(*) FROM analysis_routing WHERE pair = 'b'"), 4 * 2 * 47);
  EXPECT_EQ(query(out, "SELECT max(set_changed) + max(router_kl) + max(weight_moved) "
                       "FROM analysis_routing WHERE pair = 'b'"), 0.0);
  EXPECT_EQ(query(out, "SELECT count(*) FROM analysis_routing_transplant"), 2 * 5 * 2 * 47);
  EXPECT_EQ(query(out, "SELECT max(kl) FROM analysis_routing_transplant"), 0.0);
  EXPECT_EQ(query(out, "SELECT sum(tokens_a) - sum(tokens_b) FROM analysis_routing_load"), 0.0);
  const auto show = test::run_cli({"show", out});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  for (const char* title : {"MoE routing, A vs B", "MoE expert load", "MoE routing transplant"}) {
    EXPECT_NE(show.out.find(title), std::string::npos) << show.out;
  }
}

TEST(Routing, RouterOnlyChangeIsAllRoutingAndVerifies) {
  const std::string out = dir() + "/router.hdy";
  const auto r = diff(files().b, out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(query(out, "SELECT sum(set_changed) FROM analysis_routing WHERE pair = 'b'"), 0);
  EXPECT_GT(query(out, "SELECT sum(router_kl) FROM analysis_routing WHERE pair = 'b'"), 0);
  EXPECT_GT(query(out, "SELECT sum(kl_ab) FROM analysis_routing_transplant"), 0);
  // B with A's routing at every MoE layer is A: KL exactly 0 at every position.
  EXPECT_EQ(query(out, "SELECT max(kl) FROM analysis_routing_transplant "
                       "WHERE direction = 'b_with_a' AND layer = -1"), 0.0);
  // A with B's routing at every MoE layer is B: its KL is the diff's, bit for bit.
  EXPECT_EQ(query(out, "SELECT count(*) FROM analysis_routing_transplant "
                       "WHERE direction = 'a_with_b' AND layer = -1 AND kl != kl_ab"), 0.0);
  // One layer alone leaves some of it.
  EXPECT_GT(query(out, "SELECT sum(kl) FROM analysis_routing_transplant "
                       "WHERE direction = 'b_with_a' AND layer = 3"), 0);
  const auto js = test::run_cli({"show", out, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  const auto& every = j.at("analyses").at("routing_transplant").at("rows").at(0);
  EXPECT_EQ(every.at(0), "every MoE layer");
  EXPECT_EQ(every.at(4).get<double>(), 1.0);  // explained by routing: all of it
  const auto v = test::run_cli({"verify", out});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

TEST(Routing, AnArmsOwnRoutingWrittenBackChangesNothing) {
  const auto model = engine::model_load(files().b);
  const engine::PointMap m = engine::survey_points(model);
  ASSERT_TRUE(m.routing_transplant()) << m.no_routing_transplant;
  std::vector<int32_t> tokens;
  std::ifstream ids(files().ids);
  for (int32_t t; ids >> t && tokens.size() < 48;) tokens.push_back(t);
  engine::ArmSettings s;
  s.model = files().b;
  s.n_threads = 2;
  engine::Arm arm(model, s, 48);
  engine::Hook read;
  engine::tell_rows(m, read);
  for (int l = 0; l < m.n_layer; ++l) {
    read.capture(m.route_experts[static_cast<size_t>(l)]);
    read.capture(m.route_weights[static_cast<size_t>(l)]);
  }
  std::vector<float> logits, again;
  arm.run_chunk(tokens, &read, logits, 0);
  engine::Hook own;
  engine::tell_rows(m, own);
  for (const std::string& p : read.captures()) own.overwrite(p, read.first_row(p), read.captured(p));
  arm.run_chunk(tokens, &own, again, 0);
  EXPECT_TRUE(logits == again) << "writing B's own routing back changed its logits";
}

TEST(Routing, ADenseModelRefusesRoutingInOneLine) {
  const std::string dense = dir() + "/dense.gguf";
  engine::make_model({"tiny-llama", 1, "f16"}, dense, OutputPolicy(true));
  const std::string ids = dir() + "/dense-ids.txt";
  std::ofstream(ids) << "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
  const auto r = test::run_cli({"diff", "--a", dense, "--b-ctk", "q8_0", "--b", dense, "--tokens",
                                ids, "--chunk", "16", "--routing", "-o",
                                dir() + "/dense.hdy", "--force"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("routes no tokens to experts"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}
