#include "test_support.h"

#include "ggml.h"
#include "gguf.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <csignal>
#include <filesystem>
#include <regex>
#include <thread>

#include "store/experiment.h"

namespace hd::test {

int spawn_cli(const std::vector<std::string>& args, const std::string& out, const std::string& err,
              const std::string& in) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = HD_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr))
      _exit(127);
    if (!in.empty() && !std::freopen(in.c_str(), "r", stdin)) _exit(127);
    ::execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

CliResult run_cli(const std::vector<std::string>& args) { return run_cli_with_input(args, ""); }

CliResult run_cli_with_input(const std::vector<std::string>& args, const std::string& in) {
  static int counter = 0;
  const std::string base = temp_dir("cli") + "/" + std::to_string(counter++);
  const std::string out = base + ".out", err = base + ".err";
  const pid_t pid = spawn_cli(args, out, err, in);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

std::string make_experiment(const std::string& out, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"diff", "--a", shared_path("models/stories260K.gguf"),
                                   "--b-quant", "Q8_0", "-f", shared_path("corpora/tom-sawyer.txt")};
  for (const char* flag : {"--chunk", "--max-chunks"}) {  // defaults unless `extra` sets them
    if (std::find(extra.begin(), extra.end(), flag) == extra.end())
      args.insert(args.end(), {flag, std::string(flag) == "--chunk" ? "64" : "2"});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"-o", out});
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

void expect_refusal(const CliResult& r, int code, const std::string& phrase,
                    const std::string& what) {
  EXPECT_EQ(r.exit_code, code) << what << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << what << "\n" << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << what << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << what << ": printed before the error:\n" << r.out.substr(0, 300);
}

std::string rows_text(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* q = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, query.c_str(), -1, &q, nullptr) != SQLITE_OK) out = "<bad query>";
  while (q && sqlite3_step(q) == SQLITE_ROW) {
    for (int col = 0; col < sqlite3_column_count(q); ++col) {
      if (sqlite3_column_type(q, col) == SQLITE_FLOAT) {
        const double d = sqlite3_column_double(q, col);
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        out += "R" + std::to_string(bits);
      } else if (const unsigned char* t = sqlite3_column_text(q, col)) {
        out += reinterpret_cast<const char*>(t);
      } else {
        out += "NULL";
      }
      out += '|';
    }
    out += '\n';
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return out;
}

void expect_same_rows(const std::string& expected, const std::string& actual) {
  const auto a = store::Experiment::open(expected, false);
  const auto b = store::Experiment::open(actual, false);
  ASSERT_EQ(a.finished_chunks(), b.finished_chunks()) << actual;
  for (int c : a.finished_chunks()) {
    const auto d = a.first_difference(c, b);
    EXPECT_FALSE(d.has_value()) << actual << ": " << *d;
  }
  EXPECT_EQ(a.rows_sha256(), b.rows_sha256()) << actual;
}

void expect_refused(const std::vector<std::string>& args, const std::string& phrase) {
  std::string what = "heterodyne";
  for (const auto& a : args) what += " " + a;
  expect_refusal(run_cli(args), 2, phrase, what);
}

void rewrite_gguf(const std::string& in, const std::string& out,
                  const std::function<void(gguf_context*, ggml_context*)>& edit) {
  ggml_context* data = nullptr;
  gguf_init_params params{false, &data};
  gguf_context* src = gguf_init_from_file(in.c_str(), params);
  ASSERT_NE(src, nullptr) << in;
  // A new context: one read from a file cannot write its tensors back (their info holds no
  // data), but tensors added from the loaded ggml context carry theirs.
  gguf_context* dst = gguf_init_empty();
  gguf_set_kv(dst, src);
  for (int64_t i = 0; i < gguf_get_n_tensors(src); ++i) {
    gguf_add_tensor(dst, ggml_get_tensor(data, gguf_get_tensor_name(src, i)));
  }
  edit(dst, data);
  EXPECT_TRUE(gguf_write_to_file(dst, out.c_str(), false)) << out;
  gguf_free(dst);
  gguf_free(src);
  ggml_free(data);
}

ServeProcess start_serve(const std::string& models, const std::string& experiments,
                         const std::string& dir) {
  ServeProcess s;
  s.err_path = dir + "/serve.err";
  // The child truncates it only once it runs: a previous server's address must not be read back.
  std::filesystem::remove(s.err_path);
  s.pid = spawn_cli({"serve", "--models", models, "--experiments", experiments, "--port", "0"},
                    dir + "/serve.out", s.err_path);
  const std::regex listening(R"(serving on http://127\.0\.0\.1:(\d+)/)");
  for (int i = 0; i < 100 && s.port == 0; ++i) {
    std::smatch m;
    const std::string text = read_file(s.err_path);
    if (std::regex_search(text, m, listening)) s.port = std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return s;
}

bool stop_serve(const ServeProcess& s) {
  if (s.pid <= 0) return false;
  ::kill(s.pid, SIGTERM);
  int status = 0;
  ::waitpid(s.pid, &status, 0);
  return WIFEXITED(status);
}

std::string serve_url(const ServeProcess& s) {
  std::smatch m;
  const std::string text = read_file(s.err_path);
  static const std::regex url(R"(serving on (http://\S+))");
  return std::regex_search(text, m, url) ? m[1].str() : "";
}

std::string serve_token(const ServeProcess& s) {
  const std::string url = serve_url(s);
  const size_t at = url.find("?token=");
  return at == std::string::npos ? "" : url.substr(at + 7);
}

int browser_check(const std::string& mode, const std::string& target,
                  const std::string& artifacts, const std::string& extra_args) {
  const std::filesystem::path shots =
      std::filesystem::path(HD_BINARY).parent_path() / "test-artifacts" / "ui" / artifacts;
  std::filesystem::create_directories(shots);
  const std::string cmd = "node " HD_SOURCE_DIR "/web/test/ui.test.mjs " + mode + " " + target +
                          " " + shots.string() + " " + extra_args + " 2>&1";
  std::printf("%s\n", cmd.c_str());
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void require_browser() {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
      << "Debian's chromium is missing: scripts/install-deps.sh installs it";
  ASSERT_TRUE(std::filesystem::exists(HD_SOURCE_DIR "/web/node_modules/playwright-core"))
      << "web/node_modules is missing: the build (scripts/web.sh) installs it";
}

}  // namespace hd::test
