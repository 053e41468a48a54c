// Shared helpers for the tests: where things are, and running the heterodyne binary.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

struct gguf_context;
struct ggml_context;

namespace hd::analysis {
struct TransplantSummary;
}

namespace hd::test {

// The chunks an experiment file holds so far (0 when it cannot be read): what a killed run kept.
int stored_chunks(const std::string& path);

// Components telescope: embedding + every attention and MLP step = untouched - final
// (denoise) or final - untouched (noise), to 1e-12 relative, in both directions.
void expect_steps_telescope(const analysis::TransplantSummary& s);

// ../shared from the repository root; tests that need it skip with a message when absent.
std::string shared_path(const std::string& rel);
bool shared_available();
#define HD_REQUIRE_SHARED()                                                           \
  do {                                                                                \
    if (!::hd::test::shared_available())                                              \
      GTEST_SKIP() << "../shared (models and corpora) is absent: skipping this test"; \
  } while (0)

// A fresh directory under the test temp dir, removed by nothing: tests may inspect it later.
std::string temp_dir(const std::string& name);

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the built heterodyne binary with `args` (no shell interpretation of the arguments).
CliResult run_cli(const std::vector<std::string>& args);
// The same with standard input read from the file `in`.
CliResult run_cli_with_input(const std::vector<std::string>& args, const std::string& in);
// Starts it without waiting, its stdout and stderr going to the given files (and its stdin
// read from `in` when that is set). Returns the pid.
int spawn_cli(const std::vector<std::string>& args, const std::string& out, const std::string& err,
              const std::string& in = "");

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

// A file's whole content ("" when it cannot be read).
std::string read_file(const std::string& path);

// `heterodyne serve` on a free loopback port; its output goes to <dir>/serve.{out,err}.
// port is 0 when it did not come up within 5 s (the error is in serve.err).
struct ServeProcess {
  int pid = -1;
  int port = 0;
  std::string err_path;
};
ServeProcess start_serve(const std::string& models, const std::string& experiments,
                         const std::string& dir);
// SIGTERM, then waits; true when it exited by itself (a clean stop).
bool stop_serve(const ServeProcess& s);

// Writes `text` to `path`.
void write_file(const std::string& path, const std::string& text);

// A diff of stories260K against its Q8_0 on Tom Sawyer, 2 chunks of 64 tokens, into `out`
// (`extra` adds flags or overrides those), checked to succeed. Returns `out`.
std::string make_experiment(const std::string& out, const std::vector<std::string>& extra = {});

// The CLI contract for a refusal: exit `code`, exactly one line on stderr naming `phrase`,
// nothing on stdout. `what` names the invocation in failure messages.
void expect_refusal(const CliResult& r, int code, const std::string& phrase,
                    const std::string& what);
// Runs `args` and expects a refusal with exit 2.
void expect_refused(const std::vector<std::string>& args, const std::string& phrase);

// A copy of the GGUF `in` at `out`, with `edit` applied to its metadata (gguf's API) and its
// tensors (loaded into the ggml context, so their data may be changed in place).
void rewrite_gguf(const std::string& in, const std::string& out,
                  const std::function<void(gguf_context*, ggml_context*)>& edit);

}  // namespace hd::test

namespace hd::test {

// The address a started serve printed, token included (http://127.0.0.1:PORT/?token=...),
// and the token alone ("" when it printed none).
std::string serve_url(const ServeProcess& s);
std::string serve_token(const ServeProcess& s);

}  // namespace hd::test
