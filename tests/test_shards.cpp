// Sharded runs without a cluster: diff --shard K/N writes a part, merge joins the parts into
// the file one process writes (bit for bit), and refuses parts that do not fit, naming them.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "serve/catalog.h"
#include "serve/public_paths.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd;

namespace {

struct Fixture {
  std::string dir, whole;
  std::vector<std::string> parts;  // shards 0, 1, 2 of 3
};

std::vector<std::string> run_args(const std::string& out, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {"diff", "--a", test::shared_path("models/stories260K.gguf"),
                                "--b-quant", "Q8_0", "-f",
                                test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                "--max-chunks", "7", "--components", "--lens", "-o", out};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void run_ok(const std::vector<std::string>& args) {
  const auto r = test::run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.dir = test::temp_dir("shards");
    x.whole = x.dir + "/whole.hdy";
    run_ok(run_args(x.whole));
    for (int k = 0; k < 3; ++k) {
      x.parts.push_back(x.dir + "/part-" + std::to_string(k) + ".hdy");
      run_ok(run_args(x.parts.back(), {"--shard", std::to_string(k) + "/3"}));
    }
    return x;
  }();
  return f;
}

test::CliResult merge(const std::vector<std::string>& parts, const std::string& out,
                      const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {"merge"};
  a.insert(a.end(), parts.begin(), parts.end());
  a.insert(a.end(), {"-o", out});
  a.insert(a.end(), extra.begin(), extra.end());
  return test::run_cli(a);
}

// A copy of `part` whose provenance `edit` changed, sealed again as if a run had written it.
std::string edited_copy(const std::string& part, const std::string& to,
                        const std::function<void(nlohmann::json&)>& edit) {
  std::filesystem::copy_file(part, to, std::filesystem::copy_options::overwrite_existing);
  auto e = store::Experiment::open(to, true);
  auto prov = nlohmann::json::parse(*e.meta("provenance"));
  edit(prov);
  e.set_meta("provenance", prov.dump());
  e.seal();
  return to;
}

}  // namespace

TEST(Shards, MergedPartsAreTheSingleProcessRunBitwise) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  EXPECT_EQ(test::stored_chunks(f.parts[0]), 3);  // chunks 0, 3, 6
  EXPECT_EQ(test::stored_chunks(f.parts[1]), 2);
  EXPECT_EQ(test::rows_text(f.parts[1], "SELECT chunk FROM chunks"), "1|\n4|\n");
  const std::string merged = f.dir + "/merged.hdy";
  // Given in any order.
  const auto r = merge({f.parts[2], f.parts[0], f.parts[1]}, merged);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  test::expect_same_rows(f.whole, merged);
  const auto e = store::Experiment::open(merged, false);
  EXPECT_NE(r.out.find("rows sha256 " + e.rows_sha256()), std::string::npos) << r.out;
  EXPECT_FALSE(e.meta("shard").has_value());
  EXPECT_EQ(e.meta("config"), store::Experiment::open(f.whole, false).meta("config"));
  const auto prov = nlohmann::json::parse(*e.meta("provenance"));
  ASSERT_EQ(prov["parts"].size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(prov["parts"][k]["shard"]["index"], k);
    EXPECT_FALSE(prov["parts"][k]["placement"]["host"].get<std::string>().empty());
    // The run's machine once, at the top: a part's record names it only where it differs.
    EXPECT_FALSE(prov["parts"][k].contains("machine")) << prov["parts"][k].dump();
  }
  EXPECT_TRUE(prov["machine"].is_object());
  EXPECT_EQ(prov["merged"]["allow_mixed_hosts"], false);
  const auto v = test::run_cli({"verify", merged});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("rows sha256 " + e.rows_sha256()), std::string::npos) << v.out;
  // A part is a diff of its chunks: show and verify read it as any other, and say what it is.
  EXPECT_EQ(test::run_cli({"verify", f.parts[1]}).exit_code, 0);
  EXPECT_NE(test::run_cli({"show", f.parts[1]}).out.find("part 1/3 of a sharded run"),
            std::string::npos);
  EXPECT_NE(test::run_cli({"show", merged}).out.find("merged from 3 parts"), std::string::npos);
}

// serve's list says which files are parts and which were merged from them.
TEST(Shards, TheExperimentListNamesPartsAndMergedFiles) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string dir = test::temp_dir("shards-list");
  std::filesystem::copy_file(f.parts[1], dir + "/part.hdy");
  ASSERT_EQ(merge(f.parts, dir + "/merged.hdy").exit_code, 0);
  std::filesystem::copy_file(f.whole, dir + "/whole.hdy");
  const serve::PublicPaths paths(dir, dir);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& e : serve::list_experiments(serve::Sandbox(dir), paths)) by_name[e["name"]] = e;
  ASSERT_EQ(by_name.size(), 3u);
  EXPECT_EQ(by_name["part"]["shard"], "1/3");
  EXPECT_EQ(by_name["merged"]["merged_parts"], 3);
  EXPECT_FALSE(by_name["whole"].contains("shard") || by_name["whole"].contains("merged_parts"));
  EXPECT_EQ(by_name["merged"]["kl_mean"], by_name["whole"]["kl_mean"]);
}

// A sweep's chunks shard as a diff's do: the merged sweep holds the single run's rows and the
// same summary, computed from all of them (each part's is of its own chunks).
TEST(Shards, SweepPartsMergeToTheSingleSweep) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("shards-sweep");
  auto sweep = [&](const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"sweep", "--a", test::shared_path("models/stories260K.gguf"),
                                  "--b-quant", "Q8_0", "--b-ub", "16", "-f",
                                  test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                  "--max-chunks", "5", "-o", out};
    a.insert(a.end(), extra.begin(), extra.end());
    run_ok(a);
  };
  sweep(dir + "/whole.hdy", {});
  sweep(dir + "/p0.hdy", {"--shard", "0/2"});
  sweep(dir + "/p1.hdy", {"--shard", "1/2"});
  const auto r = merge({dir + "/p0.hdy", dir + "/p1.hdy"}, dir + "/merged.hdy");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto whole = store::Experiment::open(dir + "/whole.hdy", false);
  const auto merged = store::Experiment::open(dir + "/merged.hdy", false);
  EXPECT_EQ(merged.rows_sha256(), whole.rows_sha256());
  EXPECT_EQ(merged.meta("sweep"), whole.meta("sweep"));
  EXPECT_NE(store::Experiment::open(dir + "/p0.hdy", false).meta("sweep"), whole.meta("sweep"));
  for (const auto* f : {"/merged.hdy", "/p1.hdy"}) {
    const auto v = test::run_cli({"verify", dir + f});
    EXPECT_EQ(v.exit_code, 0) << f << ": " << v.err;
  }
  // A sweep's part with a diff's is refused.
  run_ok(run_args(dir + "/diff-1.hdy", {"--shard", "1/2"}));
  test::expect_refusal(merge({dir + "/p0.hdy", dir + "/diff-1.hdy"}, dir + "/mixed.hdy"), 2,
                       "is a sweep part and '" + dir + "/diff-1.hdy' a diff part: parts of two "
                       "kinds", "kinds");
}

TEST(Shards, MoreShardsThanChunksLeavesEmptyPartsThatStillMerge) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  std::vector<std::string> parts;
  for (int k = 0; k < 9; ++k) {
    parts.push_back(f.dir + "/nine-" + std::to_string(k) + ".hdy");
    run_ok(run_args(parts.back(), {"--shard", std::to_string(k) + "/9"}));
  }
  EXPECT_EQ(test::stored_chunks(parts[8]), 0);
  const auto r = merge(parts, f.dir + "/nine.hdy");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  test::expect_same_rows(f.whole, f.dir + "/nine.hdy");
}

TEST(Shards, MergeRefusesPartsThatDoNotFit) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string out = f.dir + "/refused.hdy";
  const auto& p = f.parts;
  test::expect_refusal(merge({p[0], p[2]}, out), 2, "shard 1 of 3 is missing", "missing");
  test::expect_refusal(merge({p[0], p[1], p[1], p[2]}, out), 2, "are both shard 1/3", "twice");
  test::expect_refusal(merge({p[0], p[1], f.whole}, out), 2, "is not a part of a sharded run",
                       "whole");
  // Another configuration: the same shard of a run with another --score-from.
  const std::string other = f.dir + "/other-2.hdy";
  run_ok(run_args(other, {"--shard", "2/3", "--score-from", "half"}));
  test::expect_refusal(merge({p[0], p[1], other}, out), 2, "config.score_from", "config");
  // An unfinished part (as a killed run leaves it), and one edited after it was sealed.
  const std::string open = f.dir + "/open-1.hdy";
  std::filesystem::copy_file(p[1], open);
  test::sql(open, "DELETE FROM meta WHERE key IN ('status', 'integrity_sha256')");
  test::expect_refusal(merge({p[0], open, p[2]}, out), 2, "finish it with heterodyne diff --resume",
                       "unfinished");
  const std::string edited = f.dir + "/edited-1.hdy";
  std::filesystem::copy_file(p[1], edited);
  test::sql(edited, "UPDATE positions SET kl = kl * 2 WHERE pos = 5");
  test::expect_refusal(merge({p[0], edited, p[2]}, out), 2, "changed after it was sealed",
                       "edited");
  // Another llama.cpp build: refused, whatever --allow-mixed-hosts says.
  const std::string build = edited_copy(p[1], f.dir + "/build-1.hdy", [](nlohmann::json& j) {
    j["llama_cpp"]["flags"] = "GGML_NATIVE=OFF";
  });
  test::expect_refusal(merge({p[0], build, p[2]}, out, {"--allow-mixed-hosts"}), 2,
                       "llama_cpp.flags", "build");
  EXPECT_FALSE(std::filesystem::exists(out));
  // Nothing is written over what exists, nor over a part.
  test::expect_refusal(merge(p, p[0]), 2, "is the same file as the input", "onto a part");
  test::write_file(out, "x");
  const auto existing = merge(p, out);
  test::expect_refusal(existing, 2, "already exists", "existing");
  EXPECT_EQ(existing.err.find("--resume"), std::string::npos) << "merge has no --resume: "
                                                              << existing.err;
  EXPECT_NE(existing.err.find("--force"), std::string::npos) << existing.err;
  EXPECT_EQ(test::read_file(out), "x");
}

TEST(Shards, MixedHostsAreRefusedUnlessAllowedAndThenRecorded) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string avx512 = edited_copy(f.parts[2], f.dir + "/avx512-2.hdy", [](nlohmann::json& j) {
    j["machine"]["cpu_features"] = j["machine"]["cpu_features"].get<std::string>() + " AVX512 = 1";
  });
  const std::vector<std::string> parts = {f.parts[0], f.parts[1], avx512};
  const std::string out = f.dir + "/mixed.hdy";
  test::expect_refusal(merge(parts, out), 2, "machine.cpu_features", "mixed");
  const auto r = merge(parts, out, {"--allow-mixed-hosts"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto prov =
      nlohmann::json::parse(*store::Experiment::open(out, false).meta("provenance"));
  EXPECT_EQ(prov["merged"]["allow_mixed_hosts"], true);
  ASSERT_EQ(prov["merged"]["mixed_hosts"].size(), 1u);
  EXPECT_NE(prov["merged"]["mixed_hosts"][0].get<std::string>().find("avx512-2.hdy"),
            std::string::npos);
}

TEST(Shards, TheShardFlagIsChecked) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string out = f.dir + "/bad-shard.hdy";
  test::expect_refused(run_args(out, {"--shard", "3/3"}), "K counts from 0 to 2");
  test::expect_refused(run_args(out, {"--shard", "1/0"}), "give K/N");
  test::expect_refused(run_args(out, {"--shard", "one/3"}), "K counts from 0 to 2");
  test::expect_refused({"diff", "--resume", f.parts[0], "--shard", "0/3"}, "--shard");
  EXPECT_FALSE(std::filesystem::exists(out));
}
