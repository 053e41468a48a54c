#include "unit_support.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/transplant_summary.h"

namespace hd::test {

namespace fs = std::filesystem;

std::string shared_path(const std::string& rel) {
  return std::string(HD_SOURCE_DIR) + "/../shared/" + rel;
}

bool shared_available() { return fs::exists(shared_path("models/stories260K.gguf")); }

std::string temp_dir(const std::string& name) {
  const fs::path p =
      fs::path(testing::TempDir()) / ("hd-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
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
