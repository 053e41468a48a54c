// `heterodyne serve`: the local web UI. An HTTP server (cpp-httplib) answering the page (its
// script and style embedded in the binary) and a small JSON API over the models folder, the
// experiments folder and the run queue. See docs/serve.md for the API.
#pragma once
#include <functional>
#include <string>

namespace hd::serve {

struct ServeOptions {
  std::string models;       // GGUF files (and texts) that may be read
  std::string experiments;  // where runs write their experiment files
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  std::string exe;  // the heterodyne binary that runs diffs (this one)
  std::string token;  // what every request must carry (request_guard.h); empty: a random one
};

// Serves until stop_requested() (SIGINT/SIGTERM). `on_listen` gets the URL once bound, with
// the token in it (http://HOST:PORT/?token=...).
// Throws InputError for a folder that does not exist or a port that cannot be bound.
void serve_until_stopped(const ServeOptions& options,
                         const std::function<void(const std::string&)>& on_listen);

}  // namespace hd::serve
