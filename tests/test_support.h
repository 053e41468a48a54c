// Helpers for the integration tests: running the heterodyne binary, its refusals, serve, and
// GGUFs rewritten with gguf's API. The engine-free helpers are in unit_support.h.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "unit_support.h"

struct gguf_context;
struct ggml_context;

namespace hd::test {

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
// The address a started serve printed, token included (http://127.0.0.1:PORT/?token=...),
// and the token alone ("" when it printed none).
std::string serve_url(const ServeProcess& s);
std::string serve_token(const ServeProcess& s);

// A diff of stories260K against its Q8_0 on Tom Sawyer, 2 chunks of 64 tokens, into `out`
// (`extra` adds flags or overrides those), checked to succeed. Returns `out`.
std::string make_experiment(const std::string& out, const std::vector<std::string>& extra = {});

// Every row `query` returns from the SQLite file at `path`, one line each, every value exact
// (a REAL as its IEEE-754 bits): what two files' rows are compared by, bit for bit.
std::string rows_text(const std::string& path, const std::string& query);

// The CLI contract for a refusal: exit `code`, exactly one line on stderr naming `phrase`,
// nothing on stdout. `what` names the invocation in failure messages.
void expect_refusal(const CliResult& r, int code, const std::string& phrase,
                    const std::string& what);
// Runs `args` and expects a refusal with exit 2.
void expect_refused(const std::vector<std::string>& args, const std::string& phrase);

// Two experiment files hold the same rows, bit for bit: every chunk's stored values (run times
// aside) and the hash of the rows alone (Experiment::rows_sha256). What a merged sharded run
// and the single-process run are compared by.
void expect_same_rows(const std::string& expected, const std::string& actual);

// The web UI's browser script (web/test/ui.test.mjs) in Debian's headless Chromium: MODE
// (report, summary, compare, serve) on TARGET, screenshots under
// <build>/test-artifacts/ui/ARTIFACTS. Its output is printed, so a failing check names itself.
// Returns its exit status (0: every check passed).
int browser_check(const std::string& mode, const std::string& target, const std::string& artifacts,
                  const std::string& extra_args = "");
// Fails the test unless Chromium and the script's playwright-core are installed.
void require_browser();

// A copy of the GGUF `in` at `out`, with `edit` applied to its metadata (gguf's API) and its
// tensors (loaded into the ggml context, so their data may be changed in place).
void rewrite_gguf(const std::string& in, const std::string& out,
                  const std::function<void(gguf_context*, ggml_context*)>& edit);

}  // namespace hd::test
