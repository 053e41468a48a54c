// Plug-in analyses (analysis/plugin.h) without llama.cpp: the confidence analysis on rows whose
// answers are known, the totals-based interval against the per-value one, and the store's
// tables for plug-in rows (round trip, hash, damage).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "analysis/compare.h"
#include "analysis/confidence.h"
#include "analysis/stats.h"
#include "errors.h"
#include "store/experiment.h"
#include "unit_support.h"

using namespace hd::analysis;
using hd::store::Experiment;

TEST(Confidence, BucketEdges) {
  EXPECT_EQ(confidence_bucket(0.0), 0);
  EXPECT_EQ(confidence_bucket(std::nextafter(0.2, 0.0)), 0);
  EXPECT_EQ(confidence_bucket(0.2), 1);
  EXPECT_EQ(confidence_bucket(0.79), 3);
  EXPECT_EQ(confidence_bucket(std::nextafter(0.95, 0.0)), 4);
  EXPECT_EQ(confidence_bucket(0.95), 5);
  EXPECT_EQ(confidence_bucket(1.0), 5);
}

TEST(Stats, ClusterMeanOfTotalsIsClusterMean) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> values, sums(5, 0), counts(5, 0);
  std::vector<int> cluster;
  for (int g = 0; g < 5; ++g) {
    const int n = g == 2 ? 0 : 3 + g;  // cluster 2 holds nothing: it is not a cluster
    for (int i = 0; i < n; ++i) {
      const double x = u(rng) * (g + 1);
      values.push_back(x), cluster.push_back(g);
      sums[static_cast<size_t>(g)] += x, counts[static_cast<size_t>(g)] += 1;
    }
  }
  const MeanCI a = cluster_mean(values, cluster), b = cluster_mean_of_totals(sums, counts);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.clusters, b.clusters);
  EXPECT_EQ(b.clusters, 4u);
  EXPECT_NEAR(a.mean, b.mean, 1e-12 * a.mean);
  EXPECT_NEAR(a.ci95, b.ci95, 1e-9 * a.ci95);
  const double one_sum[] = {2.0}, one_count[] = {4.0};
  EXPECT_TRUE(std::isnan(cluster_mean_of_totals(one_sum, one_count).ci95));
}

// A comparison whose scored positions have A's top-1 probability p[i], KL kl[i] and a top-1
// change where flip[i].
static Comparison comparison(const std::vector<float>& p, const std::vector<double>& kl,
                             const std::vector<bool>& flip) {
  Comparison c;
  for (size_t i = 0; i < p.size(); ++i) {
    PositionRow r;
    r.pos = static_cast<int>(i);
    r.scored = true;
    r.score.kl = kl[i];
    r.score.top_a.p[0] = p[i];
    r.score.top_a.id[0] = 5;
    r.score.top_b.id[0] = flip[i] ? 6 : 5;
    c.positions.push_back(r);
  }
  PositionRow unscored;
  unscored.scored = false;
  unscored.score.kl = 100;  // never counted
  c.positions.insert(c.positions.begin(), unscored);
  return c;
}

TEST(Confidence, ChunkRowsCountScoredPositionsPerBucket) {
  const auto a = make_confidence_analysis();
  const Comparison d = comparison({0.1f, 0.15f, 0.5f, 0.97f}, {0.5, 0.25, 0.125, 0.0625},
                                  {true, false, true, false});
  ChunkInput in;
  in.diff = &d;
  const auto rows = a->compute(in);
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& r : rows) EXPECT_TRUE(row_fits(a->columns(), r));
  EXPECT_EQ(std::get<int64_t>(rows[0][1]), 2);
  EXPECT_EQ(std::get<double>(rows[0][2]), 0.75);
  EXPECT_EQ(std::get<int64_t>(rows[0][3]), 1);
  EXPECT_EQ(std::get<int64_t>(rows[2][1]), 1);
  EXPECT_EQ(std::get<int64_t>(rows[5][1]), 1);
  EXPECT_EQ(std::get<double>(rows[5][2]), 0.0625);
  EXPECT_EQ(std::get<int64_t>(rows[1][1]), 0);
  EXPECT_EQ(std::get<int64_t>(rows[0][4]), 0);  // no floor given
}

// The floor column is the run's: where B vs B′ is the larger, it is B's, and named so.
TEST(Confidence, FloorIsTheLargerOfBothArms) {
  const auto a = make_confidence_analysis();
  const Comparison d = comparison({0.1f, 0.97f}, {0.5, 0.01}, {true, false});
  const Comparison fa = comparison({0.1f, 0.97f}, {1e-7, 1e-7}, {false, false});
  // B's own confidence is the other way round: its floor is still bucketed by A's.
  const Comparison fb = comparison({0.97f, 0.1f}, {1e-4, 2e-4}, {false, true});
  std::vector<StoredRow> stored;
  for (int chunk = 0; chunk < 2; ++chunk) {
    ChunkInput in;
    in.diff = &d;
    in.floor = &fa;
    in.floor_b = &fb;
    const auto rows = a->compute(in);
    for (const auto& r : rows) EXPECT_TRUE(row_fits(a->columns(), r));
    EXPECT_EQ(std::get<double>(rows[5][8]), 2e-4);  // A's [.95, 1] bucket holds B's 2e-4
    for (auto& r : rows) stored.push_back({chunk, r});
  }
  const SummaryTable t = a->summarize(stored);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][7]), 1e-4);
  EXPECT_EQ(std::get<std::string>(t.rows[0][8]), "B vs B′");
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[5][7]), 2e-4);
  // A file written before B's floor: its rows end before those columns, and still fit.
  for (auto& r : stored) r.cells.resize(7);
  EXPECT_TRUE(row_fits(a->columns(), stored[0].cells));
  const SummaryTable old = a->summarize(stored);
  EXPECT_DOUBLE_EQ(std::get<double>(old.rows[0][7]), 1e-7);
  EXPECT_EQ(std::get<std::string>(old.rows[0][8]), "A vs A′");
  EXPECT_FALSE(row_fits(a->columns(), CellRow(stored[0].cells.begin(), stored[0].cells.begin() + 6)));
}

TEST(Confidence, SummaryFromStoredRows) {
  const auto a = make_confidence_analysis();
  std::vector<StoredRow> stored;
  const Comparison c0 = comparison({0.1f, 0.1f, 0.99f}, {0.5, 0.3, 0.0}, {true, true, false});
  const Comparison c1 = comparison({0.1f, 0.99f}, {0.1, 0.02}, {false, false});
  int chunk = 0;
  for (const Comparison* cmp : {&c0, &c1}) {
    ChunkInput in;
    in.diff = cmp;
    in.floor = cmp;  // a floor equal to the diff: its bucket means are the diff's
    for (auto& r : a->compute(in)) stored.push_back({chunk, r});
    ++chunk;
  }
  const SummaryTable t = a->summarize(stored);
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_EQ(std::get<std::string>(t.rows[0][0]), "[0, 0.2)");
  EXPECT_EQ(std::get<std::string>(t.rows[5][0]), "[0.95, 1]");
  EXPECT_EQ(std::get<int64_t>(t.rows[0][1]), 3);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][2]), 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][3]), 0.9 / 0.92);  // of all the KL, 0.92
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[5][3]), 0.02 / 0.92);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][4]), 0.9 / 3);
  const auto& change = std::get<RateCI>(t.rows[0][6]);
  EXPECT_DOUBLE_EQ(change.rate, 2.0 / 3);
  EXPECT_GE(change.lo, 0.0);
  EXPECT_LE(change.hi, 1.0);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][7]), 0.9 / 3);
  EXPECT_EQ(std::get<std::string>(t.rows[0][8]), "A vs A′");
  EXPECT_TRUE(std::isnan(std::get<double>(t.rows[1][4])));   // an empty bucket has no mean
  EXPECT_FALSE(std::isnan(std::get<double>(t.rows[0][5])));  // two chunks: an interval
  bool wide = false;
  for (const auto& n : t.notes) wide = wide || n.find("intervals are wide") != std::string::npos;
  EXPECT_TRUE(wide);
}

static std::string temp_file(const std::string& name) {
  const std::string dir = hd::test::temp_dir("plugins");
  std::filesystem::remove(dir + "/" + name);
  return dir + "/" + name;
}

static ChunkResult chunk_with_analysis(int id) {
  ChunkResult c;
  c.chunk = id;
  c.tokens = {1, 2, 3};
  c.analyses["confidence"] = {
      {int64_t{0}, int64_t{2}, 0.1 / 3, int64_t{1}, int64_t{0}, 0.0, int64_t{0}, int64_t{2},
       1e-7 / 3, int64_t{0}},
      {int64_t{1}, int64_t{0}, std::nextafter(0.0, 1.0), int64_t{0}, int64_t{0}, 0.0, int64_t{0},
       int64_t{0}, 0.0, int64_t{0}}};
  return c;
}

TEST(Store, AnalysisRowsRoundTripAndAreHashed) {
  const std::string path = temp_file("rows.hdy");
  {
    Experiment e = Experiment::create(path, false, {});
    e.set_meta("kind", "diff");
    e.put_chunk(chunk_with_analysis(0), {});
    e.put_chunk(chunk_with_analysis(1), {});
    e.publish();
    e.seal();
  }
  Experiment e = Experiment::open(path, false);
  EXPECT_EQ(e.analyses(), std::vector<std::string>{"confidence"});
  EXPECT_EQ(e.read_chunk(1).analyses, chunk_with_analysis(1).analyses);
  const auto rows = e.analysis_rows("confidence");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2].chunk, 1);
  EXPECT_EQ(e.compute_integrity(), *e.meta("integrity_sha256"));
  EXPECT_FALSE(e.altered_chunks().has_value());

  // One bit of one plug-in value: the hash and the chunk hash see it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE analysis_confidence SET kl_sum = 0.1 WHERE chunk = 1 AND row = 0",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  Experiment edited = Experiment::open(path, false);
  EXPECT_NE(edited.compute_integrity(), *edited.meta("integrity_sha256"));
  ASSERT_TRUE(edited.altered_chunks().has_value());
  EXPECT_NE(edited.altered_chunks()->find("chunk 1"), std::string::npos);
}

TEST(Store, AnalysisValueOfAnotherTypeIsDamage) {
  const std::string path = temp_file("typed.hdy");
  {
    Experiment e = Experiment::create(path, false, {});
    e.put_chunk(chunk_with_analysis(0), {});
    e.publish();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE analysis_confidence SET positions = 'two' WHERE row = 0",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const Experiment e = Experiment::open(path, false);
  try {
    e.read_chunk(0);
    FAIL() << "a text in an INTEGER column was read";
  } catch (const hd::InputError& err) {
    EXPECT_NE(std::string(err.what()).find("another type in column positions"), std::string::npos)
        << err.what();
  }
}

// An analysis may return no rows for a chunk: nothing is stored, and the chunk read back (no
// entry) is the same result as the recomputed one (an empty entry).
TEST(Confidence, NoRowsIsTheSameAsNoEntry) {
  ChunkResult stored, again;
  again.analyses["none_here"] = {};
  EXPECT_FALSE(first_mismatch(stored, again).has_value());
  again.analyses["none_here"] = {{int64_t{1}}};
  EXPECT_TRUE(first_mismatch(stored, again).has_value());
}
