// The error contract of the command line, checked from the outside (the built binary):
// every bad input of diff, show, export, verify, make-model and quantize must end with
//   - exit code 2 when the input is unusable (a flag, a file, a text), 1 when good input failed;
//   - exactly one line on stderr, "heterodyne: error: ...", naming the problem (no llama.cpp
//     log, no usage dump, no progress line before it), and nothing on stdout;
//   - no output file left behind, and an existing experiment file untouched.
// Inputs that are bad in a way the test builds itself (truncated, patched, tampered) are made
// from the shared models in a private temporary directory; nothing under ../shared is written.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::shared_path;

namespace {

// ---------------------------------------------------------------------------------------------
// Running the binary and judging its answer

struct Invocation {
  std::string command;  // for failure messages
  CliResult r;
};

Invocation cli(const std::vector<std::string>& args) {
  std::string command = "heterodyne";
  for (const auto& a : args) command += " " + a;
  return {command, hd::test::run_cli(args)};
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool icontains(const std::string& hay, const std::string& needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string describe(const Invocation& run) {
  std::string out = run.r.out.substr(0, 400);
  return "\n  command: " + run.command + "\n  exit code: " + std::to_string(run.r.exit_code) +
         "\n  stderr (" + std::to_string(lines_of(run.r.err).size()) + " lines):\n" + run.r.err +
         (out.empty() ? "" : "  stdout:\n" + out);
}

constexpr const char* kPrefix = "heterodyne: error: ";

// Checks the message line itself: the prefix, every phrase of `all`, at least one of `any`.
testing::AssertionResult message_ok(const Invocation& run, const std::string& line,
                                    const std::vector<std::string>& all,
                                    const std::vector<std::string>& any) {
  if (line.rfind(kPrefix, 0) != 0) {
    return testing::AssertionFailure()
           << "the error line does not start with '" << kPrefix << "'" << describe(run);
  }
  for (const auto& p : all) {
    if (!icontains(line, p))
      return testing::AssertionFailure()
             << "the message does not name '" << p << "'" << describe(run);
  }
  if (!any.empty() && std::none_of(any.begin(), any.end(),
                                   [&](const std::string& p) { return icontains(line, p); })) {
    std::string list;
    for (const auto& p : any) list += (list.empty() ? "'" : ", '") + p + "'";
    return testing::AssertionFailure() << "the message contains none of " << list << describe(run);
  }
  return testing::AssertionSuccess();
}

// The whole contract: exit `code`, nothing on stdout, one stderr line naming the problem.
testing::AssertionResult Fails(const Invocation& run, int code, const std::vector<std::string>& all,
                               const std::vector<std::string>& any = {}) {
  if (run.r.exit_code != code) {
    return testing::AssertionFailure()
           << "exit code " << run.r.exit_code << ", expected " << code << describe(run);
  }
  const auto lines = lines_of(run.r.err);
  if (lines.size() != 1) {
    return testing::AssertionFailure()
           << "stderr has " << lines.size() << " lines, expected exactly one" << describe(run);
  }
  if (!run.r.out.empty())
    return testing::AssertionFailure() << "stdout is not empty" << describe(run);
  return message_ok(run, lines[0], all, any);
}

// As Fails, for a command that legitimately reports progress before it fails (verify after its
// integrity check passed): the error is the last line and the only one with the prefix.
testing::AssertionResult FailsAfterProgress(const Invocation& run, int code,
                                            const std::vector<std::string>& all,
                                            const std::vector<std::string>& any = {}) {
  if (run.r.exit_code != code) {
    return testing::AssertionFailure()
           << "exit code " << run.r.exit_code << ", expected " << code << describe(run);
  }
  const auto lines = lines_of(run.r.err);
  if (lines.empty()) return testing::AssertionFailure() << "stderr is empty" << describe(run);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i].rfind(kPrefix, 0) == 0)
      return testing::AssertionFailure() << "more than one error line" << describe(run);
  }
  return message_ok(run, lines.back(), all, any);
}

// ---------------------------------------------------------------------------------------------
// Files

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void copy(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// Nothing at `path`, no SQLite journal next to it and no temporary "<name>.part-PID".
testing::AssertionResult NothingWritten(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec))
    return testing::AssertionFailure() << "a failed run left '" << path << "' behind";
  if (fs::exists(path + "-journal", ec))
    return testing::AssertionFailure() << "a failed run left '" << path << "-journal'";
  for (const char* leftover : {".part", ".part-journal"}) {
    if (fs::exists(path + leftover, ec))
      return testing::AssertionFailure() << "a failed run left '" << path << leftover << "'";
  }
  const fs::path p(path);
  const std::string part = p.filename().string() + ".part-";
  if (fs::is_directory(p.parent_path(), ec)) {
    for (const auto& e : fs::directory_iterator(p.parent_path(), ec)) {
      if (e.path().filename().string().rfind(part, 0) == 0) {
        return testing::AssertionFailure()
               << "a failed run left the temporary '" << e.path().string() << "'";
      }
    }
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult Unchanged(const std::string& path, const std::string& before) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return testing::AssertionFailure() << "'" << path << "' was deleted";
  const std::string now = read_bytes(path);
  if (now != before) {
    return testing::AssertionFailure() << "'" << path << "' was modified (" << before.size()
                                       << " bytes before, " << now.size() << " after)";
  }
  return testing::AssertionSuccess();
}

// Runs SQL on a database file; returns the number of rows the last statement changed.
int sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    ADD_FAILURE() << "sqlite3_open('" << path << "') failed";
    sqlite3_close(db);
    return -1;
  }
  char* err = nullptr;
  const int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) ADD_FAILURE() << statement << ": " << (err ? err : "?");
  sqlite3_free(err);
  const int changed = sqlite3_changes(db);
  sqlite3_close(db);
  return changed;
}

uint32_t u32_at(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t u64_at(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// The shared inputs.
std::string s260k() { return shared_path("models/stories260K.gguf"); }
std::string s656k() { return shared_path("models/TinyStories-656K.f16.gguf"); }
std::string s656k_q8() { return shared_path("models/tinystories-656k-q8_0.gguf"); }
std::string tom() { return shared_path("corpora/tom-sawyer.txt"); }
std::string tom_safe() { return shared_path("corpora/tom-sawyer.656k-safe.txt"); }

// ---------------------------------------------------------------------------------------------
// The fixture: one temporary directory and a private quantization cache for the whole suite.

class CliErrors : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("cli-errors"));
    if (const char* old = std::getenv("HETERODYNE_CACHE")) old_cache_ = new std::string(old);
    ::setenv("HETERODYNE_CACHE", (*dir_ + "/cache").c_str(), 1);
  }
  static void TearDownTestSuite() {
    if (old_cache_ != nullptr) {
      ::setenv("HETERODYNE_CACHE", old_cache_->c_str(), 1);
    } else {
      ::unsetenv("HETERODYNE_CACHE");
    }
    delete old_cache_;
    old_cache_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  static std::string path(const std::string& name) { return *dir_ + "/" + name; }

  // A text file, written once.
  static std::string text(const std::string& name, const std::string& contents) {
    const std::string p = path(name);
    hd::test::write_file(p, contents);
    return p;
  }

  // diff with arm B a file (`b`) or, when `b` starts with "quant:", --b-quant of what follows.
  // Two chunks of 64 tokens (unless `extra` sets --chunk / --max-chunks) and no floor, so that a
  // run which is wrongly accepted still ends quickly.
  static std::vector<std::string> diff(const std::string& a, const std::string& b,
                                       const std::string& txt, const std::string& out,
                                       const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"diff", "--a", a};
    if (b.rfind("quant:", 0) == 0) {
      args.insert(args.end(), {"--b-quant", b.substr(6)});
    } else {
      args.insert(args.end(), {"--b", b});
    }
    args.insert(args.end(), {"--text-file", txt, "-o", out, "--no-floor"});
    auto has = [&](const char* flag) {
      return std::find(extra.begin(), extra.end(), flag) != extra.end();
    };
    if (!has("--chunk")) args.insert(args.end(), {"--chunk", "64"});
    if (!has("--max-chunks")) args.insert(args.end(), {"--max-chunks", "2"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // A real, complete experiment: 2 chunks of 64 tokens, stories260K against its Q8_0.
  // Made once per process; tests that change it work on a copy (experiment_copy).
  static std::string experiment() {
    static std::string made;
    if (made.empty()) {
      const std::string p = path("real.hdy");
      const Invocation run = cli({"diff", "--a", s260k(), "--b-quant", "Q8_0", "--text-file", tom(),
                                  "--chunk", "64", "--max-chunks", "2", "--no-floor", "-o", p});
      if (run.r.exit_code != 0 || !fs::exists(p)) {
        ADD_FAILURE() << "could not make the experiment every reader test starts from"
                      << describe(run);
        return "";
      }
      made = p;
    }
    return made;
  }
  static std::string experiment_copy(const std::string& name) {
    const std::string src = experiment();
    if (src.empty()) return "";
    copy(src, path(name));
    return path(name);
  }

  // stories260K with the string value of general.architecture ("llama") replaced by `arch`,
  // same length, so every offset in the file stays valid.
  static std::string with_architecture(const std::string& arch) {
    std::string b = read_bytes(s260k());
    const std::string key = "general.architecture";
    const size_t k = b.find(key);
    EXPECT_NE(k, std::string::npos);
    if (k == std::string::npos) return "";
    const size_t type_at = k + key.size(), len_at = type_at + 4, value_at = len_at + 8;
    EXPECT_EQ(u32_at(b, type_at), 8u) << "general.architecture is not a string";
    EXPECT_EQ(u64_at(b, len_at), 5u);
    EXPECT_EQ(b.substr(value_at, 5), "llama");
    EXPECT_EQ(arch.size(), 5u);
    b.replace(value_at, 5, arch);
    const std::string p = path("arch-" + arch + ".gguf");
    hd::test::write_file(p, b);
    return p;
  }

  // stories260K with the last byte of token `id`'s text changed: same vocabulary size, one
  // token different.
  static std::string with_token_changed(int id) {
    std::string b = read_bytes(s260k());
    const std::string key = "tokenizer.ggml.tokens";
    size_t at = b.find(key);
    EXPECT_NE(at, std::string::npos);
    if (at == std::string::npos) return "";
    at += key.size();
    EXPECT_EQ(u32_at(b, at), 9u) << "tokenizer.ggml.tokens is not an array";
    EXPECT_EQ(u32_at(b, at + 4), 8u) << "tokenizer.ggml.tokens is not an array of strings";
    const uint64_t n = u64_at(b, at + 8);
    EXPECT_GT(n, static_cast<uint64_t>(id));
    at += 16;
    for (int t = 0; t < id; ++t) at += 8 + u64_at(b, at);
    const uint64_t len = u64_at(b, at);
    char& last = b[at + 8 + len - 1];
    last = last == 'Q' ? 'R' : 'Q';
    const std::string p = path("token-" + std::to_string(id) + ".gguf");
    hd::test::write_file(p, b);
    return p;
  }

  // The first `n` bytes of `from`.
  static std::string truncated(const std::string& from, size_t n, const std::string& name) {
    const std::string b = read_bytes(from);
    EXPECT_LT(n, b.size());
    const std::string p = path(name);
    hd::test::write_file(p, b.substr(0, n));
    return p;
  }

  // A database that SQLite opens but that is not ours.
  static std::string foreign_sqlite(const std::string& name, const std::string& schema) {
    const std::string p = path(name);
    fs::remove(p);
    sql(p, schema);
    return p;
  }

  // A tiny-llama (head dim 64): quantized KV caches are possible on it, so what is refused is
  // the flash-attention setting alone.
  static std::string tiny_llama() {
    static std::string made;
    if (made.empty()) {
      const std::string p = path("tiny-llama.gguf");
      const Invocation run =
          cli({"make-model", "--preset", "tiny-llama", "--seed", "1", "--type", "f16", "-o", p});
      if (run.r.exit_code != 0) {
        ADD_FAILURE() << "make-model failed" << describe(run);
        return "";
      }
      made = p;
    }
    return made;
  }

  static std::string* dir_;
  static std::string* old_cache_;
};

std::string* CliErrors::dir_ = nullptr;
std::string* CliErrors::old_cache_ = nullptr;

// Whether this process can write into `dir` despite its mode (root can).
bool can_create_in(const std::string& dir) {
  const std::string probe = dir + "/.probe";
  bool ok = false;
  {
    std::ofstream f(probe);
    ok = f.good();
  }
  std::error_code ec;
  fs::remove(probe, ec);
  return ok;
}

bool can_read(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  return f.good();
}

// =============================================================================================
// diff: the model files

TEST_F(CliErrors, DiffMissingModelFile) {
  HD_REQUIRE_SHARED();
  const std::string missing = path("no-such-model.gguf");
  const std::string out = path("missing-model.hdy");
  const std::vector<std::string> no_such = {"no such", "does not exist", "not found"};
  EXPECT_TRUE(Fails(cli(diff(missing, s260k(), tom(), out)), 2, {"no-such-model.gguf"}, no_such));
  EXPECT_TRUE(Fails(cli(diff(s260k(), missing, tom(), out)), 2, {"no-such-model.gguf"}, no_such));
  EXPECT_TRUE(
      Fails(cli(diff(missing, "quant:Q8_0", tom(), out)), 2, {"no-such-model.gguf"}, no_such));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffUnreadableModelFile) {
  HD_REQUIRE_SHARED();
  const std::string model = path("unreadable.gguf");
  copy(s260k(), model);
  ::chmod(model.c_str(), 0);
  // Tests usually run as root here, and root reads a mode-000 file: nothing to simulate then.
  if (can_read(model))
    GTEST_SKIP()
        << "this process reads a mode-000 file (root): cannot simulate an unreadable model";
  const std::string out = path("unreadable.hdy");
  EXPECT_TRUE(Fails(cli(diff(model, s260k(), tom(), out)), 2, {"unreadable.gguf"},
                    {"permission", "cannot read"}));
  EXPECT_TRUE(Fails(cli(diff(model, "quant:Q8_0", tom(), out)), 2, {"unreadable.gguf"},
                    {"permission", "cannot read"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffModelIsADirectory) {
  HD_REQUIRE_SHARED();
  const std::string d = path("folder-as-model.gguf");
  fs::create_directories(d);
  const std::string out = path("dir-model.hdy");
  EXPECT_TRUE(Fails(cli(diff(d, s260k(), tom(), out)), 2, {"folder-as-model.gguf", "directory"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), d, tom(), out)), 2, {"folder-as-model.gguf", "directory"}));
  // With --b-quant, arm A is quantized first: it must be checked before that.
  EXPECT_TRUE(
      Fails(cli(diff(d, "quant:Q8_0", tom(), out)), 2, {"folder-as-model.gguf", "directory"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffModelIsNotGguf) {
  HD_REQUIRE_SHARED();
  const std::string t = text("model-is-text.gguf", "This is a text file, not a model.\n");
  const std::string out = path("text-model.hdy");
  EXPECT_TRUE(Fails(cli(diff(t, s260k(), tom(), out)), 2, {"model-is-text.gguf", "not a GGUF"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), t, tom(), out)), 2, {"model-is-text.gguf", "not a GGUF"}));
  EXPECT_TRUE(
      Fails(cli(diff(t, "quant:Q8_0", tom(), out)), 2, {"model-is-text.gguf", "not a GGUF"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffModelIsEmpty) {
  HD_REQUIRE_SHARED();
  const std::string e = text("zero-bytes.gguf", "");
  const std::string out = path("zero-bytes-model.hdy");
  EXPECT_TRUE(
      Fails(cli(diff(e, s260k(), tom(), out)), 2, {"zero-bytes.gguf"}, {"not a GGUF", "empty"}));
  EXPECT_TRUE(Fails(cli(diff(e, "quant:Q8_0", tom(), out)), 2, {"zero-bytes.gguf"},
                    {"not a GGUF", "empty"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTruncatedGguf) {
  HD_REQUIRE_SHARED();
  const size_t size = fs::file_size(s260k());
  const std::string out = path("truncated.hdy");
  // Inside the header (tensor count), inside the metadata (the vocabulary starts at ~40 bytes
  // and the tensor infos follow it), inside the tensor data, and one byte short.
  for (const size_t n :
       {size_t{10}, size_t{100}, size_t{5000}, size_t{20000}, size / 2, size - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(n) + " of " + std::to_string(size) + " bytes");
    const std::string cut = truncated(s260k(), n, "cut-" + std::to_string(n) + ".gguf");
    const std::string name = fs::path(cut).filename().string();
    EXPECT_TRUE(Fails(cli(diff(cut, s260k(), tom(), out)), 2, {name, "truncated"}));
    EXPECT_TRUE(Fails(cli(diff(s260k(), cut, tom(), out)), 2, {name, "truncated"}));
    EXPECT_TRUE(Fails(cli(diff(cut, "quant:Q8_0", tom(), out)), 2, {name, "truncated"}));
  }
  EXPECT_TRUE(NothingWritten(out));
}

// Corrupted without changing the length: a tensor count of 10^12 in the header, an invalid
// value type in the metadata.
TEST_F(CliErrors, DiffCorruptedGgufHeaderAndMetadata) {
  HD_REQUIRE_SHARED();
  const std::string out = path("corrupt.hdy");
  std::string b = read_bytes(s260k());
  std::string count = b;
  const uint64_t huge = 1000000000000ull;
  std::memcpy(&count[8], &huge, 8);  // GGUF: magic, version, then the tensor count
  hd::test::write_file(path("count.gguf"), count);
  EXPECT_TRUE(Fails(cli(diff(path("count.gguf"), s260k(), tom(), out)), 2, {"count.gguf"},
                    {"corrupt", "truncated"}));
  const std::string key = "tokenizer.ggml.tokens";
  const size_t at = b.find(key);
  ASSERT_NE(at, std::string::npos);
  const uint32_t bad_type = 99;
  std::memcpy(&b[at + key.size()], &bad_type, 4);
  hd::test::write_file(path("type.gguf"), b);
  EXPECT_TRUE(Fails(cli(diff(path("type.gguf"), s260k(), tom(), out)), 2, {"type.gguf"},
                    {"corrupt", "truncated"}));
  EXPECT_TRUE(NothingWritten(out));
}

// Tensor data cannot be checked at load (GGUF has no checksum); NaN weights show up as
// non-finite logits, which are refused rather than printed as "mean KL nan".
TEST_F(CliErrors, DiffCorruptedTensorData) {
  HD_REQUIRE_SHARED();
  std::string b = read_bytes(s260k());
  std::fill(b.begin() + static_cast<long>(b.size() * 3 / 4),
            b.begin() + static_cast<long>(b.size() * 3 / 4 + 64), '\xff');  // NaN floats
  hd::test::write_file(path("nan.gguf"), b);
  const std::string out = path("nan.hdy");
  const Invocation run = cli(diff(s260k(), path("nan.gguf"), tom(), out));
  EXPECT_TRUE(FailsAfterProgress(run, 1, {"non-finite logit", "nan.gguf", "nothing was stored"}));
  EXPECT_EQ(run.r.out.find("nan"), std::string::npos);
  EXPECT_TRUE(NothingWritten(out));  // the first chunk failed: the file never appeared
}

TEST_F(CliErrors, DiffTokenizerSettingsDiffer) {
  HD_REQUIRE_SHARED();
  std::string b = read_bytes(s260k());
  const std::string key = "tokenizer.ggml.bos_token_id";
  const size_t at = b.find(key);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(u32_at(b, at + key.size()), 4u) << "bos_token_id is not a u32";
  const uint32_t other = 7;
  std::memcpy(&b[at + key.size() + 4], &other, 4);
  hd::test::write_file(path("bos.gguf"), b);
  const std::string out = path("bos.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), path("bos.gguf"), tom(), out)), 2, {"vocabular", "BOS"}));
  EXPECT_TRUE(NothingWritten(out));
}

// Every architecture llama.cpp loads runs (docs/architectures.md); a file llama.cpp cannot read
// is llama.cpp's reason, or the missing key, in one line.
TEST_F(CliErrors, DiffArchitectureLlamaCppCannotRead) {
  HD_REQUIRE_SHARED();
  // bloom is a real llama.cpp architecture; this file keeps llama's keys and tensors.
  const std::string bloom = with_architecture("bloom");
  ASSERT_FALSE(bloom.empty());
  const std::string out = path("bloom.hdy");
  for (const auto& [a, b] : {std::pair{bloom, s260k()}, {s260k(), bloom}, {bloom, std::string("quant:Q8_0")}}) {
    EXPECT_TRUE(Fails(cli(diff(a, b, tom(), out)), 2, {"arch-bloom.gguf", "bloom.block_count"}));
  }
  const std::string unknown = with_architecture("fubar");  // as long as "llama": it rewrites in place
  ASSERT_FALSE(unknown.empty());
  EXPECT_TRUE(Fails(cli(diff(unknown, s260k(), tom(), out)), 2,
                    {"llama.cpp could not load", "fubar"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffVocabularySizesDiffer) {
  HD_REQUIRE_SHARED();
  const std::string out = path("vocab-size.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s656k(), tom_safe(), out)), 2, {"vocabular", "512", "2048"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffVocabularyTokensDiffer) {
  HD_REQUIRE_SHARED();
  const std::string other = with_token_changed(300);
  ASSERT_FALSE(other.empty());
  const std::string out = path("vocab-token.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), other, tom(), out)), 2, {"vocabular", "300"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffUnknownQuantType) {
  HD_REQUIRE_SHARED();
  const std::string out = path("quant-type.hdy");
  EXPECT_TRUE(
      Fails(cli(diff(s260k(), "quant:Q9_9", tom(), out)), 2, {"Q9_9", "quantization type"}));
  EXPECT_TRUE(NothingWritten(out));
}

// =============================================================================================
// diff: the text

TEST_F(CliErrors, DiffTextFileMissing) {
  HD_REQUIRE_SHARED();
  const std::string out = path("text-missing.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), path("no-such-text.txt"), out)), 2,
                    {"no-such-text.txt"}, {"no such file", "does not exist", "cannot read"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTextFileUnreadable) {
  HD_REQUIRE_SHARED();
  const std::string t = text("unreadable.txt", read_bytes(tom()));
  ::chmod(t.c_str(), 0);
  if (can_read(t))
    GTEST_SKIP() << "this process reads a mode-000 file (root): cannot simulate an unreadable text";
  const std::string out = path("text-unreadable.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), t, out)), 2, {"unreadable.txt"},
                    {"permission", "cannot read"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTextFileIsADirectory) {
  HD_REQUIRE_SHARED();
  const std::string d = path("text-dir.txt");
  fs::create_directories(d);
  const std::string out = path("text-dir.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), d, out)), 2, {"text-dir.txt", "directory"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTextFileEmpty) {
  HD_REQUIRE_SHARED();
  const std::string out = path("text-empty.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), text("zero-bytes.txt", ""), out)), 2,
                    {"zero-bytes.txt", "is empty"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTextFileNotUtf8) {
  HD_REQUIRE_SHARED();
  const std::string out = path("text-latin1.hdy");
  const std::string t = text("not-utf8.txt", "Tom said \xff\xfe to Becky.\n" + read_bytes(tom()));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), t, out)), 2, {"not-utf8.txt", "UTF-8"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTextShorterThanOneChunk) {
  HD_REQUIRE_SHARED();
  const std::string out = path("text-short.hdy");
  const std::string t = text("short.txt", "Once upon a time there was a cat.\n");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), t, out)), 2, {"fewer than one chunk", "64"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffTextTheVocabularyCannotEncode) {
  HD_REQUIRE_SHARED();
  // TinyStories-656K has no byte tokens; llama.cpp throws on '(' in tom-sawyer.txt line 11.
  const std::string out = path("text-unencodable.hdy");
  EXPECT_TRUE(
      Fails(cli(diff(s656k(), s656k_q8(), tom(), out)), 2, {"cannot be encoded", "line 11"}));
  EXPECT_TRUE(
      Fails(cli(diff(s656k(), "quant:Q8_0", tom(), out)), 2, {"cannot be encoded", "line 11"}));
  EXPECT_TRUE(NothingWritten(out));
}

// =============================================================================================
// diff: settings

TEST_F(CliErrors, DiffChunkTooSmall) {
  HD_REQUIRE_SHARED();
  const std::string out = path("chunk-small.hdy");
  for (const std::string c : {"0", "1", "-5"}) {
    EXPECT_TRUE(
        Fails(cli(diff(s260k(), s260k(), tom(), out, {"--chunk", c})), 2, {"chunk", "at least 2"}));
  }
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffChunkAboveTheModelContext) {
  HD_REQUIRE_SHARED();
  const std::string out = path("chunk-large.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--chunk", "4096"})), 2,
                    {"4096", "context", "2048"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), "quant:Q8_0", tom(), out, {"--chunk", "4096"})), 2,
                    {"4096", "context"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffChunkNotANumber) {
  HD_REQUIRE_SHARED();
  const std::string out = path("chunk-abc.hdy");
  EXPECT_TRUE(
      Fails(cli(diff(s260k(), s260k(), tom(), out, {"--chunk", "abc"})), 2, {"--chunk", "abc"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffUbatchZero) {
  HD_REQUIRE_SHARED();
  const std::string out = path("ub0.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-ub", "0"})), 2, {"ubatch", "0"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--b-ub", "0"})), 2, {"ubatch", "0"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-ub", "-3"})), 2, {"ubatch"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffThreadsZero) {
  HD_REQUIRE_SHARED();
  const std::string out = path("t0.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-t", "0"})), 2, {"thread", "0"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--a-t", "0"})), 2, {"thread", "0"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), "quant:Q8_0", tom(), out, {"-t", "0"})), 2, {"thread", "0"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffThreadsAbsurd) {
  HD_REQUIRE_SHARED();
  const std::string out = path("t-absurd.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-t", "100000"})), 2,
                    {"thread", "between 1 and 512", "100000"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffUnknownCacheType) {
  HD_REQUIRE_SHARED();
  const std::string out = path("ctk-unknown.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-ctk", "q9_9"})), 2,
                    {"'q9_9'", "cache type"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-ctv", "q9_9"})), 2,
                    {"'q9_9'", "cache type"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--b-ctk", "banana"})), 2,
                    {"'banana'", "cache type"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffQuantizedKCacheRefusedForHeadDim8) {
  HD_REQUIRE_SHARED();
  // stories260K has head dim 8; q8_0 blocks are 32 values. With flash attention off llama.cpp
  // would compute garbage silently, with it on it would fail inside ggml: refused either way.
  const std::string out = path("ctk-q8.hdy");
  for (const std::string fa : {"off", "on", "auto"}) {
    SCOPED_TRACE("-fa " + fa);
    EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-ctk", "q8_0", "-fa", fa})), 2,
                      {"head dimension", "8", "q8_0"}));
    EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--b-ctk", "q8_0", "--b-fa", fa})), 2,
                      {"head dimension", "8", "q8_0"}));
  }
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffQuantizedVCacheNeedsFlashAttention) {
  HD_REQUIRE_SHARED();
  const std::string out = path("ctv-q8.hdy");
  // On stories260K the head dimension already rules q8_0 out; either reason is a refusal.
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-ctv", "q8_0", "-fa", "off"})), 2,
                    {"q8_0"}, {"flash attention", "head dimension"}));
  // On tiny-llama (head dim 64) q8_0 fits: what is refused is -fa off alone.
  const std::string tl = tiny_llama();
  ASSERT_FALSE(tl.empty());
  EXPECT_TRUE(Fails(cli(diff(tl, tl, tom(), out, {"-ctv", "q8_0", "-fa", "off"})), 2,
                    {"q8_0", "flash attention"}));
  EXPECT_TRUE(Fails(cli(diff(tl, tl, tom(), out, {"--b-ctv", "q8_0", "--b-fa", "off"})), 2,
                    {"q8_0", "flash attention"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffFlashAttentionBadValue) {
  HD_REQUIRE_SHARED();
  const std::string out = path("fa-bad.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"-fa", "maybe"})), 2,
                    {"flash attention", "'maybe'"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffScoreFromBad) {
  HD_REQUIRE_SHARED();
  const std::string out = path("score-from.hdy");
  // 64 is the chunk: no target would be scored.
  for (const std::string v : {"0", "abc", "-1", "64", "3x"}) {
    EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--score-from", v})), 2,
                      {"--score-from", "'" + v + "'"}));
  }
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffMaxChunksNegative) {
  HD_REQUIRE_SHARED();
  const std::string out = path("max-chunks.hdy");
  EXPECT_TRUE(
      Fails(cli(diff(s260k(), s260k(), tom(), out, {"--max-chunks", "-1"})), 2, {"--max-chunks"}));
  EXPECT_TRUE(NothingWritten(out));
}

// =============================================================================================
// diff: the output file

TEST_F(CliErrors, DiffOutputInMissingDirectory) {
  HD_REQUIRE_SHARED();
  const std::string out = path("no-such-dir/run.hdy");
  // The output is checked before any model is loaded: no progress line before the error.
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out)), 2, {"no-such-dir", "does not exist"}));
  EXPECT_FALSE(fs::exists(path("no-such-dir")));
}

TEST_F(CliErrors, DiffOutputInReadOnlyDirectory) {
  HD_REQUIRE_SHARED();
  const std::string ro = path("read-only");
  fs::create_directories(ro);
  ::chmod(ro.c_str(), 0555);
  // root writes into a mode-555 directory: nothing to simulate then.
  if (can_create_in(ro))
    GTEST_SKIP() << "this process writes into a mode-555 directory (root): cannot simulate it";
  const std::string out = ro + "/run.hdy";
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out)), 2, {"read-only"},
                    {"not writable", "permission"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffOutputIsADirectory) {
  HD_REQUIRE_SHARED();
  const std::string d = path("out-dir.hdy");
  fs::create_directories(d);
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), d)), 2, {"out-dir.hdy", "directory"}));
  EXPECT_TRUE(
      Fails(cli(diff(s260k(), s260k(), tom(), d, {"--force"})), 2, {"out-dir.hdy", "directory"}));
  EXPECT_TRUE(fs::is_directory(d));
}

TEST_F(CliErrors, DiffRefusesAnExistingExperimentWithoutForce) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("existing.hdy");
  ASSERT_FALSE(e.empty());
  const std::string before = read_bytes(e);
  // Refused before any model is loaded: no progress line, the file byte for byte the same.
  EXPECT_TRUE(Fails(cli(diff(s260k(), "quant:Q8_0", tom(), e)), 2,
                    {"existing.hdy", "already exists", "--force"}));
  EXPECT_TRUE(Unchanged(e, before));
  // Any existing file, not only an experiment.
  const std::string t = text("existing.txt", "keep me\n");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), t)), 2, {"existing.txt", "already exists"}));
  EXPECT_TRUE(Unchanged(t, "keep me\n"));
}

TEST_F(CliErrors, DiffFailedForcedRunKeepsTheExistingExperiment) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("forced.hdy");
  ASSERT_FALSE(e.empty());
  const std::string before = read_bytes(e);
  const std::vector<std::string> force = {"--force"};
  EXPECT_TRUE(
      Fails(cli(diff(path("no-such.gguf"), s260k(), tom(), e, force)), 2, {"no-such.gguf"}));
  EXPECT_TRUE(
      Fails(cli(diff(s260k(), s260k(), tom(), e, {"--force", "--chunk", "4096"})), 2, {"context"}));
  EXPECT_TRUE(Fails(cli(diff(s656k(), s656k_q8(), tom(), e, force)), 2, {"cannot be encoded"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), text("tiny.txt", "Hi.\n"), e, force)), 2,
                    {"fewer than one chunk"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), e, {"--force", "-ctk", "q8_0"})), 2,
                    {"head dimension"}));
  EXPECT_TRUE(Unchanged(e, before));
}

// =============================================================================================
// diff: flags

TEST_F(CliErrors, DiffUnknownFlag) {
  HD_REQUIRE_SHARED();
  const std::string out = path("unknown-flag.hdy");
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--bogus"})), 2, {"--bogus"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"--c-ctk", "f16"})), 2, {"--c-ctk"}));
  EXPECT_TRUE(Fails(cli(diff(s260k(), s260k(), tom(), out, {"stray-positional"})), 2,
                    {"stray-positional"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffMissingRequiredFlags) {
  const std::string a = s260k(), t = tom(), out = path("missing-flags.hdy");
  EXPECT_TRUE(Fails(cli({"diff", "--b", a, "--text-file", t, "-o", out}), 2, {"--a"}));
  EXPECT_TRUE(Fails(cli({"diff", "--a", a, "--text-file", t, "-o", out}), 2, {"--b", "--b-quant"}));
  EXPECT_TRUE(
      Fails(cli({"diff", "--a", a, "--b", a, "--b-quant", "Q8_0", "--text-file", t, "-o", out}), 2,
            {"--b", "--b-quant"}));
  EXPECT_TRUE(Fails(cli({"diff", "--a", a, "--b", a, "-o", out}), 2, {"--text-file"}));
  EXPECT_TRUE(Fails(cli({"diff", "--a", a, "--b", a, "--text-file", t}), 2, {"-o"}));
  EXPECT_TRUE(Fails(cli({"diff"}), 2, {"--a"}));
  EXPECT_TRUE(Fails(cli({"diff", "--a"}), 2, {"--a"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, DiffResumeOfABadFile) {
  HD_REQUIRE_SHARED();
  EXPECT_TRUE(
      Fails(cli({"diff", "--resume", path("no-such.hdy")}), 2, {"no-such.hdy", "does not exist"}));
  EXPECT_TRUE(Fails(cli({"diff", "--resume", text("resume.txt", "hello\n")}), 2,
                    {"resume.txt", "not a heterodyne experiment"}));
  EXPECT_FALSE(fs::exists(path("no-such.hdy")));
  EXPECT_EQ(read_bytes(path("resume.txt")), "hello\n");
}

TEST_F(CliErrors, DiffResumeRefusesNewRunFlags) {
  HD_REQUIRE_SHARED();
  // --resume takes its settings from the file; silently ignoring --a or --chunk would let the
  // user believe they applied.
  const std::string e = experiment_copy("resume-flags.hdy");
  ASSERT_FALSE(e.empty());
  const std::string before = read_bytes(e);
  EXPECT_TRUE(Fails(cli({"diff", "--resume", e, "--a", s260k()}), 2,
                    {"--resume", "no other flag but -f", "not --a"}));
  EXPECT_TRUE(Fails(cli({"diff", "--resume", e, "--chunk", "32"}), 2,
                    {"--resume", "no other flag but -f", "not --chunk"}));
  EXPECT_TRUE(Fails(cli({"diff", "--resume", e, "--b-ctk", "q8_0"}), 2, {"not --b-ctk"}));
  EXPECT_TRUE(Unchanged(e, before));
}

// =============================================================================================
// show, export, verify: the experiment file

const std::vector<std::vector<std::string>> kReaders = {{"show"},
                                                        {"show", "--json"},
                                                        {"export", "--positions"},
                                                        {"verify"},
                                                        {"verify", "--integrity-only"}};

std::vector<std::string> reader(const std::vector<std::string>& r, const std::string& file) {
  std::vector<std::string> args = {r[0], file};
  args.insert(args.end(), r.begin() + 1, r.end());
  return args;
}

TEST_F(CliErrors, ReadersMissingFile) {
  for (const auto& r : kReaders) {
    EXPECT_TRUE(
        Fails(cli(reader(r, path("no-such-run.hdy"))), 2, {"no-such-run.hdy", "does not exist"}));
  }
  EXPECT_TRUE(NothingWritten(path("no-such-run.hdy")));
}

TEST_F(CliErrors, ReadersUnreadableFile) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("unreadable.hdy");
  ASSERT_FALSE(e.empty());
  ::chmod(e.c_str(), 0);
  if (can_read(e))
    GTEST_SKIP()
        << "this process reads a mode-000 file (root): cannot simulate an unreadable experiment";
  for (const auto& r : kReaders) {
    EXPECT_TRUE(Fails(cli(reader(r, e)), 2, {"unreadable.hdy"},
                      {"permission", "cannot read", "cannot open"}));
  }
}

TEST_F(CliErrors, ReadersDirectory) {
  const std::string d = path("dir.hdy");
  fs::create_directories(d);
  for (const auto& r : kReaders) {
    EXPECT_TRUE(
        Fails(cli(reader(r, d)), 2, {"dir.hdy"}, {"directory", "not a heterodyne experiment"}));
  }
  EXPECT_TRUE(fs::is_directory(d));
}

TEST_F(CliErrors, ReadersTextFile) {
  const std::string t = text("notes.hdy", "these are notes, not an experiment\n");
  for (const auto& r : kReaders) {
    EXPECT_TRUE(Fails(cli(reader(r, t)), 2, {"notes.hdy", "not a heterodyne experiment"}));
  }
  EXPECT_EQ(read_bytes(t), "these are notes, not an experiment\n");
  EXPECT_FALSE(fs::exists(t + "-journal"));
}

TEST_F(CliErrors, ReadersEmptyFile) {
  const std::string t = text("zero-bytes.hdy", "");
  for (const auto& r : kReaders) {
    EXPECT_TRUE(
        Fails(cli(reader(r, t)), 2, {"zero-bytes.hdy"}, {"not a heterodyne experiment", "empty"}));
  }
  EXPECT_EQ(fs::file_size(t), 0u);
}

TEST_F(CliErrors, ReadersForeignSqliteDatabase) {
  const std::string plain =
      foreign_sqlite("foreign.db", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);");
  // Closer to ours: a meta table, with another format's name in it.
  const std::string lookalike = foreign_sqlite(
      "lookalike.db",
      "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO meta VALUES ('format', 'someone-elses-format'), ('schema_version', '1');");
  for (const std::string& db : {plain, lookalike}) {
    const std::string before = read_bytes(db);
    const std::string name = fs::path(db).filename().string();
    for (const auto& r : kReaders) {
      EXPECT_TRUE(Fails(cli(reader(r, db)), 2, {name, "not a heterodyne experiment"}));
    }
    EXPECT_TRUE(Unchanged(db, before));
  }
}

TEST_F(CliErrors, ReadersTruncatedExperiment) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  const size_t size = fs::file_size(e);
  ASSERT_GT(size, 3 * 4096u);
  // Inside the 100-byte SQLite header, after the first page, in the middle, one page short.
  for (const size_t n : {size_t{50}, size_t{4096}, size / 2, size - 4096}) {
    SCOPED_TRACE("cut at " + std::to_string(n) + " of " + std::to_string(size) + " bytes");
    const std::string cut = truncated(e, n, "cut-" + std::to_string(n) + ".hdy");
    const std::string name = fs::path(cut).filename().string();
    for (const auto& r : kReaders) {
      EXPECT_TRUE(Fails(cli(reader(r, cut)), 2, {name},
                        {"damaged", "truncated", "corrupt", "not a heterodyne experiment"}));
    }
    EXPECT_EQ(fs::file_size(cut), n);
  }
}

TEST_F(CliErrors, ReadersNewerSchemaVersion) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("newer.hdy");
  ASSERT_FALSE(e.empty());
  ASSERT_EQ(sql(e, "UPDATE meta SET value = '999' WHERE key = 'schema_version'"), 1);
  for (const auto& r : kReaders) {
    EXPECT_TRUE(Fails(cli(reader(r, e)), 2, {"newer.hdy", "schema version", "999"}));
  }
  EXPECT_TRUE(Fails(cli({"diff", "--resume", e}), 2, {"newer.hdy", "schema version", "999"}));
}

TEST_F(CliErrors, ReadersMissingSchemaVersion) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("no-schema.hdy");
  ASSERT_FALSE(e.empty());
  ASSERT_EQ(sql(e, "DELETE FROM meta WHERE key = 'schema_version'"), 1);
  for (const auto& r : kReaders) {
    const Invocation run = cli(reader(r, e));
    EXPECT_TRUE(
        Fails(run, 2, {"no-schema.hdy"}, {"schema", "damaged", "not a heterodyne experiment"}));
    // A file without a version is not "newer" than anything.
    EXPECT_FALSE(icontains(run.r.err, "newer")) << describe(run);
  }
}

// A run killed after creating its file but before storing its configuration.
TEST_F(CliErrors, ReadersFileStoppedBeforeItsConfiguration) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("no-config.hdy");
  ASSERT_FALSE(e.empty());
  sql(e, "DELETE FROM meta WHERE key IN ('config', 'provenance', 'status', 'integrity_sha256')");
  for (const auto& r : {std::vector<std::string>{"show"}, {"show", "--json"}, {"verify"}}) {
    EXPECT_TRUE(Fails(cli(reader(r, e)), 2, {"no-config.hdy", "stopped before its configuration"}));
  }
  EXPECT_TRUE(Fails(cli({"diff", "--resume", e}), 2, {"no-config.hdy", "stopped before"}));
}

TEST_F(CliErrors, VerifyTamperedExperiment) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("tampered.hdy");
  ASSERT_FALSE(e.empty());
  // positions is WITHOUT ROWID: address the row by its key.
  ASSERT_EQ(sql(e,
                "UPDATE positions SET kl = kl + 1e-9 WHERE chunk = 0 AND pos = 5 AND comparison = "
                "'diff'"),
            1);
  const std::string before = read_bytes(e);
  EXPECT_TRUE(Fails(cli({"verify", e}), 1, {"integrity", "modified"}));
  EXPECT_TRUE(Fails(cli({"verify", e, "--integrity-only"}), 1, {"integrity", "modified"}));
  EXPECT_TRUE(Unchanged(e, before));
}

TEST_F(CliErrors, VerifyIncompleteExperiment) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment_copy("incomplete.hdy");
  ASSERT_FALSE(e.empty());
  sql(e,
      "DELETE FROM meta WHERE key = 'integrity_sha256'; UPDATE meta SET value = 'running' WHERE "
      "key = 'status'");
  EXPECT_TRUE(Fails(cli({"verify", e}), 2, {"incomplete.hdy", "not complete", "--resume"}));
}

TEST_F(CliErrors, VerifyWhenAModelIsGone) {
  HD_REQUIRE_SHARED();
  // An experiment over a private copy of the model, which then disappears.
  const std::string model = path("gone.gguf"), e = path("model-gone.hdy");
  copy(s260k(), model);
  const Invocation made = cli(diff(model, model, tom(), e, {"--max-chunks", "1"}));
  ASSERT_EQ(made.r.exit_code, 0) << describe(made);
  fs::remove(model);
  // "integrity: ok" comes first, legitimately: the file itself is fine.
  EXPECT_TRUE(
      FailsAfterProgress(cli({"verify", e}), 2, {"gone.gguf"}, {"no such file", "does not exist"}));
}

// =============================================================================================
// export

TEST_F(CliErrors, ExportUnknownFormat) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  EXPECT_TRUE(
      Fails(cli({"export", e, "--positions", "--format", "xml"}), 2, {"'xml'", "csv", "jsonl"}));
  // Refused before the output is opened: no empty file left behind...
  const std::string out = path("positions.xml");
  EXPECT_TRUE(Fails(cli({"export", e, "--positions", "--format", "xml", "-o", out}), 2, {"'xml'"}));
  EXPECT_TRUE(NothingWritten(out));
  // ...and an existing file (here an experiment) not truncated.
  const std::string victim = experiment_copy("export-victim.hdy");
  const std::string before = read_bytes(victim);
  EXPECT_TRUE(
      Fails(cli({"export", e, "--positions", "--format", "xml", "-o", victim}), 2, {"'xml'"}));
  EXPECT_TRUE(Unchanged(victim, before));
}

TEST_F(CliErrors, ExportOntoItsOwnExperiment) {
  HD_REQUIRE_SHARED();
  // CSV written over the experiment it reads would destroy it.
  const std::string e = experiment_copy("self-export.hdy");
  ASSERT_FALSE(e.empty());
  const std::string before = read_bytes(e);
  EXPECT_TRUE(Fails(cli({"export", e, "--positions", "-o", e}), 2, {"self-export.hdy"}));
  EXPECT_TRUE(Unchanged(e, before));
}

TEST_F(CliErrors, ExportOutputInMissingDirectory) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  const std::string out = path("no-such-dir/positions.csv");
  EXPECT_TRUE(Fails(cli({"export", e, "--positions", "-o", out}), 2, {"no-such-dir"},
                    {"does not exist", "cannot write"}));
  EXPECT_FALSE(fs::exists(path("no-such-dir")));
}

TEST_F(CliErrors, ExportOutputIsADirectory) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  const std::string d = path("export-dir.csv");
  fs::create_directories(d);
  EXPECT_TRUE(Fails(cli({"export", e, "--positions", "-o", d}), 2, {"export-dir.csv"},
                    {"directory", "cannot write"}));
  EXPECT_TRUE(fs::is_directory(d));
}

TEST_F(CliErrors, ExportOutputInReadOnlyDirectory) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  const std::string ro = path("export-read-only");
  fs::create_directories(ro);
  ::chmod(ro.c_str(), 0555);
  if (can_create_in(ro))
    GTEST_SKIP() << "this process writes into a mode-555 directory (root): cannot simulate it";
  const std::string out = ro + "/positions.csv";
  EXPECT_TRUE(Fails(cli({"export", e, "--positions", "-o", out}), 2, {"positions.csv"},
                    {"permission", "not writable", "cannot write"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, ExportTableSlips) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  EXPECT_TRUE(Fails(cli({"export", e, "--table", "residuals"}), 2,
                    {"--table must be", "positions, layers, transplants, flips, confidence", "or lens", "'residuals'"}));
  EXPECT_TRUE(Fails(cli({"export", e, "--positions", "--table", "layers"}), 2,
                    {"--positions is --table positions"}));
}

// =============================================================================================
// show, export, verify: flags

TEST_F(CliErrors, ReadersMissingFileArgument) {
  for (const std::string c : {"show", "export", "verify"}) {
    EXPECT_TRUE(Fails(cli({c}), 2, {"file", "required"}));
  }
}

TEST_F(CliErrors, ReadersUnknownFlag) {
  HD_REQUIRE_SHARED();
  const std::string e = experiment();
  ASSERT_FALSE(e.empty());
  for (const auto& r : kReaders) {
    auto args = reader(r, e);
    args.push_back("--bogus");
    EXPECT_TRUE(Fails(cli(args), 2, {"--bogus"}));
  }
  EXPECT_TRUE(Fails(cli({"show", e, "--worst", "abc"}), 2, {"--worst", "abc"}));
  EXPECT_TRUE(Fails(cli({"show", e, "second.hdy"}), 2, {"second.hdy"}));
}

// =============================================================================================
// make-model

TEST_F(CliErrors, MakeModelUnknownPreset) {
  const std::string out = path("preset.gguf");
  EXPECT_TRUE(
      Fails(cli({"make-model", "--preset", "tiny-gpt", "--seed", "1", "--type", "f16", "-o", out}),
            2, {"'tiny-gpt'", "preset", "tiny-llama"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, MakeModelUnknownType) {
  const std::string out = path("unknown-type.gguf");
  for (const std::string t : {"q4_0", "f8"}) {
    EXPECT_TRUE(
        Fails(cli({"make-model", "--preset", "tiny-llama", "--seed", "1", "--type", t, "-o", out}),
              2, {"'" + t + "'", "type", "f16"}));
  }
  // An empty value is a slip for every option, not a type name (nor "all", nor a default).
  EXPECT_TRUE(
      Fails(cli({"make-model", "--preset", "tiny-llama", "--seed", "1", "--type", "", "-o", out}),
            2, {"--type needs a value, not an empty string"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, MakeModelBadSeed) {
  const std::string out = path("seed.gguf");
  EXPECT_TRUE(Fails(cli({"make-model", "--preset", "tiny-llama", "--seed", "abc", "-o", out}), 2,
                    {"--seed", "abc"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, MakeModelMissingRequiredFlags) {
  const std::string out = path("required.gguf");
  EXPECT_TRUE(Fails(cli({"make-model", "--seed", "1", "-o", out}), 2,
                    {"needs --preset NAME or --arch NAME"}));
  EXPECT_TRUE(Fails(cli({"make-model", "--preset", "tiny-llama"}), 2, {"needs -o FILE.gguf"}));
  EXPECT_TRUE(
      Fails(cli({"make-model", "--preset", "tiny-llama", "-o", out, "--bogus"}), 2, {"--bogus"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, MakeModelOutputInMissingDirectory) {
  const std::string out = path("no-such-dir/m.gguf");
  EXPECT_TRUE(Fails(cli({"make-model", "--preset", "tiny-llama", "-o", out}), 2, {"no-such-dir"},
                    {"does not exist", "cannot write"}));
  EXPECT_FALSE(fs::exists(path("no-such-dir")));
}

TEST_F(CliErrors, MakeModelOutputIsADirectory) {
  const std::string d = path("model-dir.gguf");
  fs::create_directories(d);
  EXPECT_TRUE(Fails(cli({"make-model", "--preset", "tiny-llama", "-o", d}), 2,
                    {"model-dir.gguf", "directory"}));
  EXPECT_TRUE(fs::is_directory(d));
  EXPECT_TRUE(fs::is_empty(d));
  // No temporary left next to it either.
  for (const auto& entry : fs::directory_iterator(*dir_)) {
    EXPECT_EQ(entry.path().filename().string().find("model-dir.gguf.part-"), std::string::npos)
        << entry.path();
  }
}

TEST_F(CliErrors, MakeModelOutputInReadOnlyDirectory) {
  const std::string ro = path("mm-read-only");
  fs::create_directories(ro);
  ::chmod(ro.c_str(), 0555);
  if (can_create_in(ro))
    GTEST_SKIP() << "this process writes into a mode-555 directory (root): cannot simulate it";
  const std::string out = ro + "/m.gguf";
  EXPECT_TRUE(Fails(cli({"make-model", "--preset", "tiny-llama", "-o", out}), 2, {"m.gguf"},
                    {"permission", "not writable", "cannot write"}));
  EXPECT_TRUE(NothingWritten(out));
}

// =============================================================================================
// quantize

TEST_F(CliErrors, QuantizeUnknownType) {
  HD_REQUIRE_SHARED();
  const std::string out = path("q-type.gguf");
  EXPECT_TRUE(
      Fails(cli({"quantize", s260k(), out, "Q9_9"}), 2, {"'Q9_9'", "quantization type", "Q8_0"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeMissingInput) {
  const std::string out = path("q-missing.gguf");
  EXPECT_TRUE(Fails(cli({"quantize", path("no-such-input.gguf"), out, "Q8_0"}), 2,
                    {"no-such-input.gguf"}, {"no such", "does not exist"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeInputIsADirectory) {
  const std::string d = path("q-input-dir.gguf");
  fs::create_directories(d);
  const std::string out = path("q-dir.gguf");
  EXPECT_TRUE(Fails(cli({"quantize", d, out, "Q8_0"}), 2, {"q-input-dir.gguf", "directory"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeInputIsNotGguf) {
  const std::string out = path("q-text.gguf");
  const std::string t = text("q-input.txt", "not a model\n");
  const std::string e = text("q-zero-bytes.gguf", "");
  EXPECT_TRUE(Fails(cli({"quantize", t, out, "Q8_0"}), 2, {"q-input.txt", "not a GGUF"}));
  EXPECT_TRUE(
      Fails(cli({"quantize", e, out, "Q8_0"}), 2, {"q-zero-bytes.gguf"}, {"not a GGUF", "empty"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeTruncatedInput) {
  HD_REQUIRE_SHARED();
  const size_t size = fs::file_size(s260k());
  const std::string out = path("q-truncated.gguf");
  for (const size_t n : {size_t{100}, size_t{5000}, size / 2, size - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(n));
    const std::string cut = truncated(s260k(), n, "q-cut-" + std::to_string(n) + ".gguf");
    EXPECT_TRUE(Fails(cli({"quantize", cut, out, "Q8_0"}), 2,
                      {fs::path(cut).filename().string(), "truncated"}));
  }
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeArchitectureLlamaCppCannotRead) {
  HD_REQUIRE_SHARED();
  const std::string bloom = with_architecture("bloom");
  ASSERT_FALSE(bloom.empty());
  const std::string out = path("q-bloom.gguf");
  EXPECT_TRUE(Fails(cli({"quantize", bloom, out, "Q8_0"}), 2, {"arch-bloom.gguf", "bloom.block_count"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeOutputInMissingDirectory) {
  HD_REQUIRE_SHARED();
  const std::string out = path("no-such-dir/q.gguf");
  EXPECT_TRUE(Fails(cli({"quantize", s260k(), out, "Q8_0"}), 2, {"no-such-dir"},
                    {"does not exist", "cannot write"}));
  EXPECT_FALSE(fs::exists(path("no-such-dir")));
}

TEST_F(CliErrors, QuantizeOutputIsADirectory) {
  HD_REQUIRE_SHARED();
  const std::string d = path("q-out-dir.gguf");
  fs::create_directories(d);
  EXPECT_TRUE(Fails(cli({"quantize", s260k(), d, "Q8_0"}), 2, {"q-out-dir.gguf", "directory"}));
  EXPECT_TRUE(fs::is_directory(d));
  for (const auto& entry : fs::directory_iterator(*dir_)) {
    EXPECT_EQ(entry.path().filename().string().find("q-out-dir.gguf.part-"), std::string::npos)
        << entry.path();
  }
}

TEST_F(CliErrors, QuantizeThreadsZero) {
  HD_REQUIRE_SHARED();
  // As in diff: 0 means "default" inside, but a user who types -t 0 made a mistake.
  const std::string out = path("q-t0.gguf");
  EXPECT_TRUE(Fails(cli({"quantize", s260k(), out, "Q8_0", "-t", "0"}), 2, {"thread", "0"}));
  EXPECT_TRUE(NothingWritten(out));
}

TEST_F(CliErrors, QuantizeMissingArguments) {
  HD_REQUIRE_SHARED();
  const std::string out = path("q-args.gguf");
  EXPECT_TRUE(Fails(cli({"quantize", s260k(), out}), 2, {"type", "required"}));
  EXPECT_TRUE(Fails(cli({"quantize"}), 2, {"input", "required"}));
  EXPECT_TRUE(Fails(cli({"quantize", s260k(), out, "Q8_0", "--bogus"}), 2, {"--bogus"}));
  EXPECT_TRUE(NothingWritten(out));
}

// =============================================================================================
// The top level

TEST_F(CliErrors, NoOrUnknownSubcommand) {
  EXPECT_TRUE(Fails(cli({}), 2, {"subcommand"}));
  EXPECT_TRUE(Fails(cli({"--bogus"}), 2, {"--bogus"}));
  // Naming the word the user typed beats "a subcommand is required".
  EXPECT_TRUE(Fails(cli({"frobnicate"}), 2, {"frobnicate"}));
}

}  // namespace
