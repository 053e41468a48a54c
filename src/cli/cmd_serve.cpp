// heterodyne serve --models DIR [--experiments DIR] [--host H] [--port N]
#include <unistd.h>

#include <filesystem>

#include "cli/commands.h"
#include "common/cache_dir.h"
#include "errors.h"
#include "serve/server.h"

namespace hd::cli {

void add_serve(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<serve::ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "the local web UI: run diffs, look at results");
  cmd->add_option("--models", o->models, "folder of GGUF models (and texts) the UI may use")
      ->required();
  cmd->add_option("--experiments", o->experiments,
                  "folder for experiment files (default: ~/.local/share/heterodyne)");
  cmd->add_option("--host", o->host,
                  "address to listen on; requests must name it, localhost or the address they "
                  "reach as Host")
      ->capture_default_str();
  cmd->add_option("--port", o->port, "port (0: any free one)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->callback([o, &ctx] {
    namespace fs = std::filesystem;
    if (o->experiments.empty()) {
      const char* data = std::getenv("XDG_DATA_HOME");
      const char* home = std::getenv("HOME");
      if (data && *data) {
        o->experiments = (fs::path(data) / "heterodyne").string();
      } else if (home && *home) {
        o->experiments = (fs::path(home) / ".local/share/heterodyne").string();
      } else {
        throw InputError("give --experiments (HOME is not set)");
      }
      std::error_code ec;
      fs::create_directories(o->experiments, ec);
    }
    std::error_code ec;
    o->exe = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec) throw RuntimeError("cannot find this program's own path: " + ec.message());
    // The address carries the token every request needs (docs/serve.md): print it whole.
    serve::serve_until_stopped(*o, [](const std::string& url) {
      progress_line("serving on " + url + "  (Ctrl-C stops)");
    });
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
