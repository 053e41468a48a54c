#include "unit_support.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "analysis/transplant_summary.h"

namespace hd::test {

namespace fs = std::filesystem;

namespace {

// ctest counts a test as skipped when its output shows gtest's "[  SKIPPED ]", whatever its exit
// code (gtest_discover_tests' SKIP_REGULAR_EXPRESSION). gtest also skips, with no reason, every
// test of a suite whose SetUpTestSuite failed: that failure would read as a skip and pass CI.
// This printer wraps gtest's own and says FAILED for those tests (the run exits 1 for them).
class SetUpFailuresFail : public testing::EmptyTestEventListener {
 public:
  explicit SetUpFailuresFail(testing::TestEventListener* printer) : printer_(printer) {}

  void OnTestProgramStart(const testing::UnitTest& u) override { printer_->OnTestProgramStart(u); }
  void OnTestIterationStart(const testing::UnitTest& u, int i) override {
    printer_->OnTestIterationStart(u, i);
  }
  void OnEnvironmentsSetUpStart(const testing::UnitTest& u) override {
    printer_->OnEnvironmentsSetUpStart(u);
  }
  void OnEnvironmentsSetUpEnd(const testing::UnitTest& u) override {
    printer_->OnEnvironmentsSetUpEnd(u);
  }
  void OnTestSuiteStart(const testing::TestSuite& s) override {
    suite_ = &s;
    printer_->OnTestSuiteStart(s);
  }
  void OnTestStart(const testing::TestInfo& t) override {
    unset_up_ = false;
    printer_->OnTestStart(t);
  }
  void OnTestDisabled(const testing::TestInfo& t) override { printer_->OnTestDisabled(t); }
  void OnTestPartResult(const testing::TestPartResult& r) override {
    // gtest skips every test of a suite whose set-up failed: its ad hoc result holds that failure.
    // (The suite is kept from OnTestSuiteStart: UnitTest::current_test_suite() takes a lock
    // gtest holds while it reports.)
    if (r.skipped() && suite_ != nullptr && suite_->ad_hoc_test_result().Failed()) {
      unset_up_ = true;
      ++failed_set_ups_;
      std::printf(
          "%s:%d: Failure\nthe suite's SetUpTestSuite failed (above): this test did not run\n",
          r.file_name() ? r.file_name() : "?", r.line_number());
      return;
    }
    printer_->OnTestPartResult(r);
  }
  void OnTestEnd(const testing::TestInfo& t) override {
    if (!unset_up_) return printer_->OnTestEnd(t);
    std::printf("[  FAILED  ] %s.%s (its suite's set-up failed)\n", t.test_suite_name(), t.name());
  }
  void OnTestSuiteEnd(const testing::TestSuite& s) override { printer_->OnTestSuiteEnd(s); }
  void OnEnvironmentsTearDownStart(const testing::UnitTest& u) override {
    printer_->OnEnvironmentsTearDownStart(u);
  }
  void OnEnvironmentsTearDownEnd(const testing::UnitTest& u) override {
    printer_->OnEnvironmentsTearDownEnd(u);
  }
  void OnTestIterationEnd(const testing::UnitTest& u, int i) override {
    // gtest's summary would list those tests under "[  SKIPPED ]".
    if (failed_set_ups_ == 0) return printer_->OnTestIterationEnd(u, i);
    std::printf("[  FAILED  ] %d test(s) did not run: their suite's set-up failed\n",
                failed_set_ups_);
  }
  void OnTestProgramEnd(const testing::UnitTest& u) override { printer_->OnTestProgramEnd(u); }

 private:
  std::unique_ptr<testing::TestEventListener> printer_;
  const testing::TestSuite* suite_ = nullptr;
  bool unset_up_ = false;
  int failed_set_ups_ = 0;
};

const bool kSetUpFailuresFail = [] {
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  listeners.Append(new SetUpFailuresFail(listeners.Release(listeners.default_result_printer())));
  return true;
}();

}  // namespace

std::string shared_path(const std::string& rel) {
  return std::string(HD_SOURCE_DIR) + "/../shared/" + rel;
}

bool shared_available() { return fs::exists(shared_path("models/stories260K.gguf")); }

void sql(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << statements << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

namespace {

// The directories temp_dir made, removed when the test process that made them exits: a suite
// of several hundred processes otherwise leaves gigabytes in /tmp, run after run.
// HD_KEEP_TEST_DIRS=1 keeps them to look at. A forked child that exits removes nothing.
class TempDirs {
 public:
  void add(const fs::path& p) { dirs_.push_back(p); }
  ~TempDirs() {
    if (::getpid() != owner_ || std::getenv("HD_KEEP_TEST_DIRS") != nullptr) return;
    for (const auto& d : dirs_) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  }

 private:
  pid_t owner_ = ::getpid();
  std::vector<fs::path> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string temp_dir(const std::string& name) {
  const fs::path p =
      fs::path(testing::TempDir()) / ("hd-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  temp_dirs().add(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

ScopedCacheDir::ScopedCacheDir(const std::string& dir) {
  if (const char* old = std::getenv("HETERODYNE_CACHE")) {
    old_ = old;
    had_old_ = true;
  }
  ::setenv("HETERODYNE_CACHE", dir.c_str(), 1);
}

ScopedCacheDir::~ScopedCacheDir() {
  if (had_old_) {
    ::setenv("HETERODYNE_CACHE", old_.c_str(), 1);
  } else {
    ::unsetenv("HETERODYNE_CACHE");
  }
}

int stored_chunks(const std::string& path) {
  sqlite3* db = nullptr;
  int n = 0;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM chunks", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return n;
}

void expect_steps_telescope(const analysis::TransplantSummary& s) {
  for (const bool denoise : {true, false}) {
    const auto& d = denoise ? s.denoise_components : s.noise_components;
    double sum = d.embedding.mean;
    for (const auto& l : d.layers) sum += l.attention.mean + l.mlp.mean;
    const double expect = denoise ? d.untouched - d.final : d.final - d.untouched;
    EXPECT_NEAR(sum, expect, 1e-12 * std::abs(expect)) << (denoise ? "denoise" : "noise");
    EXPECT_NEAR(d.attention_total.mean + d.mlp_total.mean + d.embedding.mean, expect,
                1e-12 * std::abs(expect));
  }
}

}  // namespace hd::test
