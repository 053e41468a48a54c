// The floor covers both arms: A vs A′ and B vs B′, each re-split by the same rule. Known answers:
// identical arms give two identical floors, bitwise; a quantized B with flash attention gets the
// floor the floor explorer measures for B's model at that split, where A's (F16, no flash
// attention) is far smaller; every figure is read against the larger.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "store/experiment.h"
#include "test_support.h"

using nlohmann::json;
using namespace hd;

namespace {

json shown(const std::string& path) {
  const auto r = test::run_cli({"show", path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

}  // namespace

TEST(Floors, IdenticalArmsHaveTwoIdenticalFloors) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("floors-identical");
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string out = dir + "/same.hdy";
  const auto r = test::run_cli({"diff", "--a", m, "--b", m, "-f",
                                test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                "--max-chunks", "3", "-t", "2", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto e = store::Experiment::open(out, false);
  for (int c : e.finished_chunks()) {
    const auto chunk = e.read_chunk(c);
    ASSERT_TRUE(chunk.floor.has_value());
    ASSERT_TRUE(chunk.floor_b.has_value());
    ASSERT_EQ(chunk.floor->positions.size(), chunk.floor_b->positions.size());
    for (size_t i = 0; i < chunk.floor->positions.size(); ++i) {
      EXPECT_EQ(chunk.floor->positions[i].score.kl, chunk.floor_b->positions[i].score.kl);
      EXPECT_EQ(chunk.floor->positions[i].score.nll_b, chunk.floor_b->positions[i].score.nll_b);
    }
  }
  const json j = shown(out);
  EXPECT_EQ(j["floor_a"]["kl_mean"], j["floor_b"]["kl_mean"]);
  EXPECT_EQ(j["floor"]["kl_mean"], j["floor_a"]["kl_mean"]);
  EXPECT_EQ(j["kl_mean"].get<double>(), 0.0);
  // Three chunks: every interval is flagged.
  EXPECT_EQ(j["intervals_note"], "3 chunks: intervals are wide");
  EXPECT_EQ(test::run_cli({"verify", out}).exit_code, 0);
}

TEST(Floors, AQuantizedBWithFlashAttentionGetsItsOwnFloor) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("floors-b");
  const std::string a = dir + "/a-f16.gguf", out = dir + "/q.hdy";
  ASSERT_EQ(test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", a})
                .exit_code,
            0);
  const std::string text = test::shared_path("corpora/tom-sawyer.txt");
  const auto r = test::run_cli({"diff", "--a", a, "--b-quant", "Q4_K_M", "--b-fa", "on", "-f",
                                text, "--chunk", "128", "--max-chunks", "4", "-t", "2", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = shown(out);
  const int ub = j["provenance"]["floor_ubatch_b"];
  EXPECT_EQ(ub, 65);  // 128 tokens in ubatches of 512: the odd half, as for A
  EXPECT_EQ(j["provenance"]["floor_ubatch"], 65);
  // The second split (odd chunks): the odd third.
  EXPECT_EQ(j["provenance"]["floor_ubatch_2"], 43);
  EXPECT_EQ(j["provenance"]["floor_ubatch_b_2"], 43);
  const double fa = j["floor_a"]["kl_mean"], fb = j["floor_b"]["kl_mean"];
  EXPECT_GT(fb, 0);
  EXPECT_GT(fb, 10 * fa) << "B's split noise (flash attention, Q4_K_M) dwarfs A's here";
  // Each split's floor is the larger of its arms' over its own chunks; the floor beside every
  // figure is the larger split's.
  const json& splits = j["floor"]["splits"];
  ASSERT_EQ(splits.size(), 2u) << j["floor"].dump();
  double larger = 0;
  for (const json& sp : splits) {
    EXPECT_EQ(sp["kl_mean"].get<double>(), std::max(sp["floor_a"]["kl_mean"].get<double>(),
                                                    sp["floor_b"]["kl_mean"].get<double>()));
    larger = std::max(larger, sp["kl_mean"].get<double>());
  }
  EXPECT_EQ(splits[0]["ubatch_b"], 65);
  EXPECT_EQ(splits[1]["ubatch_b"], 43);
  EXPECT_EQ(j["floor"]["kl_mean"].get<double>(), larger);
  EXPECT_EQ(j["floor_kl_mean"].get<double>(), larger);
  EXPECT_FALSE(j["floor"]["bitwise_identical"].get<bool>());
  EXPECT_TRUE(j["floor_splits_note"].is_string());

  // The floor explorer on B's model at the first split, on chunk 0 (measured at it), against
  // the same reference finds what the diff stored for B′ there.
  const std::string b = j["provenance"]["arms"]["b"]["model"];
  const std::string fx = dir + "/fx.hdy";
  const auto f = test::run_cli({"floor", "-m", b, "--fa", "on", "--ub", std::to_string(ub),
                                "-t", "2", "-f", text, "--chunk", "128", "--max-chunks", "1",
                                "-o", fx});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  double stored = 0;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(out.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT avg(kl) FROM positions WHERE comparison = 'floor_b' AND "
                                 "chunk = 0 AND scored = 1",
                                 -1, &q, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    stored = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
  }
  const json x = shown(fx);
  bool found = false;
  for (const auto& row : x["floor"]["rows"]) {
    if (row["n_ubatch"] != ub) continue;
    found = true;
    EXPECT_FALSE(row["identical"].get<bool>());
    EXPECT_NEAR(row["kl_mean"].get<double>(), stored, 1e-12 * stored);
  }
  EXPECT_TRUE(found) << x.dump();

  // The same text in show: both floors beside the figures, on both splits.
  const auto s = test::run_cli({"show", out});
  EXPECT_NE(s.out.find("B vs B′ (ub 65, 43)"), std::string::npos) << s.out;
  EXPECT_EQ(test::run_cli({"verify", out}).exit_code, 0);
}

// Every diff of format version 2 measures B's floor where A's is measured: a file whose B floor
// was taken out cannot be recomputed (verify and resume say what differs); show still reads it,
// saying B's floor was not measured.
TEST(Floors, AFileWithoutBsFloorIsNotRecomputed) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("floors-old");
  const std::string out = dir + "/old.hdy";
  ASSERT_EQ(test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"),
                           "--b-quant", "Q8_0", "-f", test::shared_path("corpora/tom-sawyer.txt"),
                           "--chunk", "64", "--max-chunks", "2", "-o", out})
                .exit_code,
            0);
  test::sql(out,
            "DELETE FROM positions WHERE comparison = 'floor_b';"
            "DELETE FROM layers WHERE comparison = 'floor_b';"
            "UPDATE meta SET value = json_remove(value, '$.floor_ubatch_b', '$.floor_ubatch_b_2', "
            "'$.arms.floor_b') "
            "WHERE key = 'provenance';");
  store::Experiment::open(out, true).seal();
  const auto v = test::run_cli({"verify", out});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("the run's floor has floor_ubatch_b 0"), std::string::npos) << v.err;
  const auto s = test::run_cli({"show", out});
  EXPECT_NE(s.out.find("B vs B′: not measured"), std::string::npos) << s.out;
  const json j = shown(out);
  EXPECT_TRUE(j["floor_b"].is_null());
  EXPECT_EQ(j["floor"]["kl_mean"], j["floor_a"]["kl_mean"]);
}

// --floor-ub that splits a chunk as an arm itself does would make that arm's floor 0 by
// construction: refused in one line.
TEST(Floors, AFloorUbatchThatIsAnArmsOwnSplitIsRefused) {
  HD_REQUIRE_SHARED();
  const std::string m = test::shared_path("models/stories260K.gguf");
  test::expect_refused({"diff", "--a", m, "--b-quant", "Q8_0", "--b-ub", "32", "--floor-ub", "32",
                        "-f", test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                        "-o", test::temp_dir("floors-ub") + "/x.hdy"},
                       "splits a 64-token chunk as arm B itself does");
}

// A floor arm splits in its arm's own context where that context's ubatch holds the split; B's
// of 16 cannot hold a floor ubatch of 33, so B′ gets a context of its own while A′ splits in A's,
// and B′ runs in A′'s buffers all the same. The file says which, and verifies bitwise.
TEST(Floors, AFloorItsArmCannotSplitInPlaceHasAContextOfItsOwn) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("floors-own");
  const std::string m = test::shared_path("models/stories260K.gguf"), out = dir + "/x.hdy";
  const auto r = test::run_cli({"diff", "--a", m, "--b-quant", "Q8_0", "--b-ub", "16",
                                "--floor-ub", "33", "-f",
                                test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                "--max-chunks", "3", "-t", "1", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto e = store::Experiment::open(out, false);
  const json arms = json::parse(e.meta("provenance").value_or("{}")).at("arms");
  EXPECT_EQ(arms["floor"].value("split_in_place", false), true) << arms["floor"].dump();
  EXPECT_EQ(arms["floor"].value("n_ubatch", 0), 33);
  EXPECT_FALSE(arms["floor_b"].contains("split_in_place")) << arms["floor_b"].dump();
  EXPECT_EQ(arms["floor_b"].value("n_ubatch", 0), 33);
  for (int c : e.finished_chunks()) {
    const auto chunk = e.read_chunk(c);
    EXPECT_TRUE(chunk.floor.has_value() && chunk.floor_b.has_value()) << "chunk " << c;
  }
  const auto v = test::run_cli({"verify", out});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

namespace {

// The chunks of a stored diff that hold a floor (A's and B's both), and every chunk's diff rows
// are those of `other`, bitwise (the floor's sample changes no figure of A vs B).
std::vector<int> floor_chunks_of(const std::string& path, const std::string& other) {
  const auto e = store::Experiment::open(path, false);
  const auto o = store::Experiment::open(other, false);
  std::vector<int> out;
  for (int c : e.finished_chunks()) {
    const auto chunk = e.read_chunk(c);
    EXPECT_EQ(chunk.floor.has_value(), chunk.floor_b.has_value()) << "chunk " << c;
    if (chunk.floor) out.push_back(c);
    auto mine = chunk, theirs = o.read_chunk(c);
    mine.floor = mine.floor_b = theirs.floor = theirs.floor_b = std::nullopt;
    if (auto m = analysis::first_mismatch(mine, theirs)) ADD_FAILURE() << "chunk " << c << ": " << *m;
  }
  return out;
}

}  // namespace

// A long run measures its floor on a sample of its chunks (analysis/floor_sample.h): 4 of 20,
// in pairs spread over the text, both splits. A vs B is bitwise the run without a floor; the
// sampled chunks' floors are bitwise those of --floor-chunks all; show says what it covers, with
// A's and B's PPL on those chunks; verify recomputes it; two shards merge to the same file.
TEST(Floors, ALongRunMeasuresItsFloorOnASpreadSample) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("floors-sample");
  const std::vector<std::string> base = {
      "diff", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant", "Q8_0", "-f",
      test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64", "--max-chunks", "20"};
  const auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"-o", dir + "/" + name});
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  const auto sampled = run("sampled.hdy", {});
  EXPECT_NE(sampled.err.find("floor: measured on 4 of 20 chunks"), std::string::npos) << sampled.err;
  run("none.hdy", {"--no-floor"});
  run("all.hdy", {"--floor-chunks", "all"});
  EXPECT_EQ(floor_chunks_of(dir + "/sampled.hdy", dir + "/none.hdy"), (std::vector<int>{4, 5, 14, 15}));
  EXPECT_EQ(floor_chunks_of(dir + "/all.hdy", dir + "/none.hdy").size(), 20u);
  {
    const auto s = store::Experiment::open(dir + "/sampled.hdy", false);
    const auto a = store::Experiment::open(dir + "/all.hdy", false);
    for (int c : {4, 5, 14, 15}) {
      auto x = s.read_chunk(c), y = a.read_chunk(c);
      EXPECT_FALSE(analysis::first_mismatch(x, y).has_value()) << "chunk " << c;
    }
  }
  const json j = shown(dir + "/sampled.hdy");
  EXPECT_EQ(j["floor"]["chunks_measured"], 4);
  EXPECT_NE(j["floor_coverage_note"].get<std::string>().find("measured on 4 of 20 chunks"),
            std::string::npos) << j["floor_coverage_note"];
  EXPECT_TRUE(j["floor"]["ppl_a_on_floor_chunks"].is_number());
  EXPECT_NE(j["floor"]["ppl_a_on_floor_chunks"], j["ppl_a"]);  // A on 4 chunks, not on 20
  EXPECT_EQ(j["floor"]["splits"].size(), 2u);                  // both splits, two chunks each
  EXPECT_TRUE(shown(dir + "/all.hdy")["floor_coverage_note"].is_null());
  const auto text = test::run_cli({"show", dir + "/sampled.hdy"});
  EXPECT_NE(text.out.find("A on its chunks"), std::string::npos) << text.out;
  EXPECT_EQ(test::run_cli({"verify", dir + "/sampled.hdy"}).exit_code, 0);
  // Two shards and their merge: the same sample, the same rows.
  run("part0.hdy", {"--shard", "0/2"});
  run("part1.hdy", {"--shard", "1/2"});
  const auto m = test::run_cli({"merge", dir + "/part0.hdy", dir + "/part1.hdy", "-o",
                                dir + "/merged.hdy"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(floor_chunks_of(dir + "/merged.hdy", dir + "/sampled.hdy"),
            (std::vector<int>{4, 5, 14, 15}));
  // Shard 3 of 5 holds chunks 3, 8, 13, 18: none of the sample. It says so, not "no floor".
  run("part3of5.hdy", {"--shard", "3/5"});
  const json part = shown(dir + "/part3of5.hdy");
  EXPECT_NE(part["floor_coverage_note"].dump().find("none of this file's 4 chunks is in the "
                                                    "floor's sample (4 chunks of the run"),
            std::string::npos) << part["floor_coverage_note"];
}

TEST(Floors, AFloorChunksThatIsNotACountIsRefused) {
  HD_REQUIRE_SHARED();
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string dir = test::temp_dir("floors-chunks-bad");
  for (const std::string bad : {"0", "some", "-2"}) {
    test::expect_refused({"diff", "--a", m, "--b-quant", "Q8_0", "--floor-chunks", bad, "-f",
                          test::shared_path("corpora/tom-sawyer.txt"), "-o", dir + "/x.hdy"},
                         "--floor-chunks must be 'auto', 'all' or a number of chunks");
  }
  test::expect_refused({"sweep", "--a", m, "--b-ctk", "q8_0", "--floor-chunks", "4", "-f",
                        test::shared_path("corpora/tom-sawyer.txt"), "-o", dir + "/s.hdy"},
                       "sweep measures its floor on every chunk");
}
