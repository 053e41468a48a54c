// The experiment file: round trips are exact, the hash sees every value, one writer at a time.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "analysis/compare.h"
#include "errors.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd::analysis;
using hd::store::Experiment;

static ChunkResult sample_chunk(int id) {
  ChunkResult c;
  c.chunk = id;
  c.tokens = {1, 17, 42, 7};
  for (int p = 0; p < 3; ++p) {
    PositionRow r;
    r.pos = p;
    r.target = c.tokens[static_cast<size_t>(p + 1)];
    r.scored = p >= 1;
    r.score.kl = 0.1 / (p + 3) + id;  // not exactly representable in decimal
    r.score.nll_a = 1.0 / 3.0;
    r.score.nll_b = std::nextafter(1.0 / 3.0, 1.0);
    for (size_t k = 0; k < 5; ++k) {
      r.score.top_a.id[k] = static_cast<int32_t>(k * 3 + static_cast<size_t>(p));
      r.score.top_a.p[k] = 1.0f / static_cast<float>(k + 3);
      r.score.top_b.id[k] = static_cast<int32_t>(k * 5);
      r.score.top_b.p[k] = std::nextafter(0.1f, 1.0f) * static_cast<float>(k);
    }
    c.diff.positions.push_back(r);
  }
  c.diff.layers.push_back({0, 1, {1e-7 / 3, 0.999999, std::numeric_limits<double>::denorm_min()}});
  c.floor = Comparison{};
  c.floor->positions = c.diff.positions;
  c.residuals.push_back({"a", 0, 2, {1.0f / 3, 2.0f, -0.0f, 1e-30f}});
  c.residuals.push_back({"b", 0, 2, {1.0f / 7, 2.0f, 0.0f, 1e-30f}});
  c.seconds = 0.5;
  return c;
}

TEST(Store, ChunksRoundTripBitwise) {
  const std::string path = hd::test::temp_dir("store-rt") + "/x.hdy";
  {
    Experiment e = Experiment::create(path, false);
    e.put_chunk(sample_chunk(0), {{1, "<s>"}, {17, " the"}});
    e.put_chunk(sample_chunk(1), {{42, "\n"}});
  }
  const Experiment e = Experiment::open(path, false);
  EXPECT_EQ(e.finished_chunks(), (std::vector<int>{0, 1}));
  for (int id : {0, 1}) {
    const ChunkResult back = e.read_chunk(id);
    const auto mismatch = first_mismatch(sample_chunk(id), back);
    EXPECT_FALSE(mismatch.has_value()) << *mismatch;
  }
  EXPECT_EQ(e.pieces().at(42), "\n");
}

TEST(Store, CompareFindsAOneUlpChange) {
  ChunkResult a = sample_chunk(0);
  ChunkResult b = sample_chunk(0);
  b.diff.positions[2].score.kl = std::nextafter(b.diff.positions[2].score.kl, 1.0);
  const auto m = first_mismatch(a, b);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->find("chunk 0 pos 2 (diff) kl"), std::string::npos) << *m;
  b = sample_chunk(0);
  b.residuals[1].data[3] = 2e-30f;
  EXPECT_TRUE(first_mismatch(a, b).has_value());
}

static void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Store, IntegrityHashSeesEveryValue) {
  const std::string path = hd::test::temp_dir("store-hash") + "/x.hdy";
  std::string sealed;
  {
    Experiment e = Experiment::create(path, false);
    e.put_chunk(sample_chunk(0), {{1, "<s>"}});
    e.seal();
    sealed = *e.meta("integrity_sha256");
    EXPECT_EQ(sealed, e.compute_integrity());
    EXPECT_EQ(sealed.size(), 64u);
  }
  for (const std::string sql : {"UPDATE positions SET kl = kl * (1 + 1e-15) WHERE chunk = 0 AND "
                                "pos = 1 AND comparison = 'diff'",
                                "UPDATE vocab SET text = '<S>' WHERE token_id = 1",
                                "UPDATE residuals SET data = zeroblob(16) WHERE arm = 'b'",
                                "UPDATE meta SET value = 'x' WHERE key = 'status'"}) {
    const std::string copy = path + ".copy";
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    exec_sql(copy, sql);
    const Experiment e = Experiment::open(copy, false);
    EXPECT_NE(e.compute_integrity(), sealed) << sql;
  }
}

TEST(Store, SecondWriterIsRefused) {
  const std::string path = hd::test::temp_dir("store-lock") + "/x.hdy";
  Experiment first = Experiment::create(path, false);
  EXPECT_THROW(Experiment::open(path, true), hd::InputError);
  EXPECT_THROW(Experiment::create(path, true), hd::InputError);
  EXPECT_NO_THROW(Experiment::open(path, false));  // readers are welcome
}

TEST(Store, ExistingFileIsNotReplacedWithoutAsking) {
  const std::string path = hd::test::temp_dir("store-exists") + "/x.hdy";
  { Experiment::create(path, false); }
  EXPECT_THROW(Experiment::create(path, false), hd::InputError);
  EXPECT_NO_THROW(Experiment::create(path, true));
}

TEST(Store, NewerSchemaAndForeignFilesAreRefused) {
  const std::string dir = hd::test::temp_dir("store-schema");
  { Experiment::create(dir + "/new.hdy", false); }
  exec_sql(dir + "/new.hdy", "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  try {
    Experiment::open(dir + "/new.hdy", false);
    FAIL() << "a newer schema was accepted";
  } catch (const hd::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  exec_sql(dir + "/other.db", "CREATE TABLE t (x)");
  EXPECT_THROW(Experiment::open(dir + "/other.db", false), hd::InputError);
  hd::test::write_file(dir + "/text.hdy", "hello");
  EXPECT_THROW(Experiment::open(dir + "/text.hdy", false), hd::InputError);
}
