// Helpers for every test, the unit tests included: where things are, files, the cache. Nothing
// here runs a binary or needs llama.cpp (test_support.h adds what does).
#pragma once
#include <gtest/gtest.h>

#include <string>

namespace hd::analysis {
struct TransplantSummary;
}

namespace hd::test {

// ../shared from the repository root; tests that need it skip with a message when absent.
std::string shared_path(const std::string& rel);
bool shared_available();
#define HD_REQUIRE_SHARED()                                                           \
  do {                                                                                \
    if (!::hd::test::shared_available())                                              \
      GTEST_SKIP() << "../shared (models and corpora) is absent: skipping this test"; \
  } while (0)

// A fresh directory under the test temp dir (emptied if it was there), removed when the test
// process exits (HD_KEEP_TEST_DIRS=1 keeps it).
std::string temp_dir(const std::string& name);

// Runs SQL statements on an experiment file: a test's stand-in for a run killed part-way or a
// file edited after it was written. A failing statement fails the test, naming it.
void sql(const std::string& path, const std::string& statements);

// A file's whole content ("" when it cannot be read).
std::string read_file(const std::string& path);

// Writes `text` to `path`.
void write_file(const std::string& path, const std::string& text);

// Points heterodyne's cache (HETERODYNE_CACHE) at a private directory for one scope, then
// restores what was there.
class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(const std::string& dir);
  ~ScopedCacheDir();
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;

 private:
  std::string old_;
  bool had_old_ = false;
};

// The chunks an experiment file holds so far (0 when it cannot be read): what a killed run kept.
int stored_chunks(const std::string& path);

// Components telescope: embedding + every attention and MLP step = untouched - final
// (denoise) or final - untouched (noise), to 1e-12 relative, in both directions.
void expect_steps_telescope(const analysis::TransplantSummary& s);

}  // namespace hd::test
