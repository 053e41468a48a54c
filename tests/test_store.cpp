// The experiment file: round trips are exact, the hash sees every value, one writer at a time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "analysis/compare.h"
#include "errors.h"
#include "store/experiment.h"
#include "unit_support.h"

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
    Experiment e = Experiment::create(path, false, {});
    e.put_chunk(sample_chunk(0), {{1, "<s>"}, {17, " the"}});
    e.publish();
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
    Experiment e = Experiment::create(path, false, {});
    e.put_chunk(sample_chunk(0), {{1, "<s>"}});
    e.seal();
    e.publish();
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

// The message of the InputError `f` throws ("" when it throws nothing or something else).
template <typename F>
static std::string input_error(F&& f) {
  try {
    f();
  } catch (const hd::InputError& e) {
    return e.what();
  } catch (...) {
    return "(another exception)";
  }
  return "";
}

static void make_published(const std::string& path) {
  Experiment e = Experiment::create(path, false, {});
  e.publish();
}

TEST(Store, SecondWriterIsRefused) {
  const std::string dir = hd::test::temp_dir("store-lock");
  const std::string path = dir + "/x.hdy";
  Experiment first = Experiment::create(path, false, {});
  first.publish();
  EXPECT_THAT(input_error([&] { Experiment::open(path, true); }),
              testing::HasSubstr("being written by another heterodyne process"));
  EXPECT_THAT(input_error([&] { Experiment::create(path, true, {}); }),
              testing::HasSubstr("being written by another heterodyne process"));
  EXPECT_NO_THROW(Experiment::open(path, false));  // readers are welcome
  // Two new writers of one output, neither published yet: they meet on the part's lock, and
  // the second is told so (not "already exists", not a SQLite error).
  const std::string fresh = dir + "/fresh.hdy";
  Experiment one = Experiment::create(fresh, true, {});
  EXPECT_THAT(input_error([&] { Experiment::create(fresh, true, {}); }),
              testing::HasSubstr("being written by another heterodyne process"));
}

TEST(Store, ExistingFileIsNotReplacedWithoutAsking) {
  const std::string path = hd::test::temp_dir("store-exists") + "/x.hdy";
  make_published(path);
  EXPECT_THAT(input_error([&] { Experiment::create(path, false, {}); }),
              testing::HasSubstr("already exists"));
  EXPECT_NO_THROW(Experiment::create(path, true, {}));
}

TEST(Store, AnUnpublishedExperimentLeavesThePathAsItWas) {
  const std::string dir = hd::test::temp_dir("store-pending");
  const std::string path = dir + "/x.hdy";
  {  // a new path: nothing appears until publish, and nothing is left when it never comes
    Experiment e = Experiment::create(path, false, {});
    e.put_chunk(sample_chunk(0), {{1, "<s>"}});
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::exists(path + ".part"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  EXPECT_FALSE(std::filesystem::exists(path + ".part-journal"));
  // Replacing: the old experiment stays whole until the new one is published.
  {
    Experiment old = Experiment::create(path, false, {});
    old.put_chunk(sample_chunk(0), {{1, "<s>"}});
    old.put_chunk(sample_chunk(1), {{1, "<s>"}});
    old.seal();
    old.publish();
  }
  const std::string before = hd::test::read_file(path);
  {
    Experiment e = Experiment::create(path, true, {});
    e.set_meta("kind", "diff");
    EXPECT_EQ(hd::test::read_file(path), before);
  }
  EXPECT_EQ(hd::test::read_file(path), before);
  {
    Experiment e = Experiment::create(path, true, {});
    e.put_chunk(sample_chunk(5), {{1, "<s>"}});
    e.publish();
    e.put_chunk(sample_chunk(6), {{1, "<s>"}});  // still writable after the move
  }
  const Experiment back = Experiment::open(path, false);
  EXPECT_EQ(back.finished_chunks(), (std::vector<int>{5, 6}));
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
}

TEST(Store, NeverReplacesAnInputOrWhatIsNotARegularFile) {
  const std::string dir = hd::test::temp_dir("store-targets");
  const std::string model = dir + "/m.gguf";
  hd::test::write_file(model, "GGUF not really");
  std::filesystem::create_hard_link(model, dir + "/hard.hdy");
  std::filesystem::create_symlink(model, dir + "/soft.hdy");
  for (const std::string out : {model, dir + "/hard.hdy", dir + "/soft.hdy"}) {
    EXPECT_THAT(input_error([&] { Experiment::create(out, true, {model}); }),
                testing::HasSubstr("is the same file as the input"))
        << out;
  }
  ASSERT_EQ(::mkfifo((dir + "/fifo.hdy").c_str(), 0644), 0);
  EXPECT_THAT(input_error([&] { Experiment::create(dir + "/fifo.hdy", true, {}); }),
              testing::HasSubstr("is a FIFO, not a regular file"));
  EXPECT_THAT(input_error([&] { Experiment::open(dir + "/fifo.hdy", false); }),
              testing::HasSubstr("is a FIFO, not a regular file"));
  EXPECT_THAT(input_error([&] { Experiment::create("/dev/null", true, {}); }),
              testing::HasSubstr("is a character device, not a regular file"));
  std::filesystem::create_symlink(dir + "/nowhere", dir + "/dangling.hdy");
  EXPECT_THAT(input_error([&] { Experiment::create(dir + "/dangling.hdy", true, {}); }),
              testing::HasSubstr("leads nowhere"));
  EXPECT_EQ(hd::test::read_file(model), "GGUF not really");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(Store, NewerSchemaAndForeignFilesAreRefused) {
  const std::string dir = hd::test::temp_dir("store-schema");
  make_published(dir + "/new.hdy");
  exec_sql(dir + "/new.hdy", "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  try {
    Experiment::open(dir + "/new.hdy", false);
    FAIL() << "a newer schema was accepted";
  } catch (const hd::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version '99', newer than this heterodyne reads"),
              std::string::npos)
        << e.what();
  }
  exec_sql(dir + "/other.db", "CREATE TABLE t (x)");
  EXPECT_THROW(Experiment::open(dir + "/other.db", false), hd::InputError);
  hd::test::write_file(dir + "/text.hdy", "hello");
  EXPECT_THROW(Experiment::open(dir + "/text.hdy", false), hd::InputError);
}

// A position where B masks a token A gives mass (KL +inf), or where an arm masks the next token
// (NLL +inf), is stored and read back as such (issue 40); a NaN is still damage.
TEST(Store, AnInfiniteKlOrNllReadsBackAsStored) {
  const std::string path = hd::test::temp_dir("store-inf") + "/x.hdy";
  ChunkResult c = sample_chunk(0);
  c.diff.positions[1].score.kl = std::numeric_limits<double>::infinity();
  c.diff.positions[2].score.nll_b = std::numeric_limits<double>::infinity();
  {
    Experiment e = Experiment::create(path, false, {});
    e.put_chunk(c, {});
    e.publish();
  }
  const ChunkResult back = Experiment::open(path, false).read_chunk(0);
  EXPECT_EQ(back.diff.positions[1].score.kl, std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.diff.positions[2].score.nll_b, std::numeric_limits<double>::infinity());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // SQLite stores a NaN as NULL: what a damaged or edited file holds.
  ASSERT_EQ(sqlite3_exec(db, "UPDATE positions SET kl = NULL WHERE pos = 1", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THAT(input_error([&] { Experiment::open(path, false).read_chunk(0); }),
              testing::HasSubstr("holds a NaN, -inf or missing KL"));
}
