#include "serve/server.h"

#include "store/experiment.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/input_file.h"
#include "common/stop.h"
#include "errors.h"
#include "kinds/views.h"
#include "report/export.h"
#include "report/html.h"
#include "serve/catalog.h"
#include "serve/connections.h"
#include "serve/encoded_body.h"
#include "serve/limits.h"
#include "serve/public_paths.h"
#include "serve/request_guard.h"
#include "serve/run_form.h"
#include "serve/run_names.h"
#include "serve/runs.h"
#include "serve/sandbox.h"

namespace hd::serve {
namespace {

constexpr const char* kJson = "application/json";

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A JSON answer made for this request, compressed at a fast level where the client asks
// (httplib's own compression is Brotli at its slowest: encoded_body.h).
void send_json(const httplib::Request& req, httplib::Response& res, const nlohmann::json& j) {
  send(req, res, std::make_shared<EncodedBody>(dump(j), kJson));
}

void error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dump({{"error", message}}), kJson);
}

// An experiment name is a file stem in the experiments folder: letters, digits, - _ . only.
std::optional<std::filesystem::path> experiment_path(const Sandbox& box, const std::string& name) {
  if (name.empty() || name[0] == '.') return std::nullopt;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return std::nullopt;
    }
  }
  return box.resolve(name + ".hdy");
}

// The API's one-line explanations for what httplib refuses before a route runs.
std::string status_message(int status) {
  switch (status) {
    case 400: return "malformed request";
    case 404: return "no such page or API route";
    case 413: return "the request body is too large";
    case 414: return "the URL is too long";
    default: return "HTTP " + std::to_string(status);
  }
}

class Api {
 public:
  Api(const ServeOptions& o, const std::string& token)
      : models_(o.models),
        experiments_(o.experiments),
        paths_(models_.root(), experiments_.root()),
        guard_(o.host, token, limits::kMaxBodyBytes),
        runs_(o.exe, (experiments_.root() / ".cache").string()) {}

  void install(httplib::Server& s) {
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const auto refusal = guard_.check(req);
      if (!refusal) return httplib::Server::HandlerResponse::Unhandled;
      error(res, refusal->status, refusal->message);
      return httplib::Server::HandlerResponse::Handled;
    });
    s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
      // Opened with ?token=: from now on the page's own requests carry it in a cookie.
      if (req.has_param("token")) res.set_header("Set-Cookie", guard_.token_cookie(req.local_port));
      send(req, res, page_);
    });
    s.Get("/api/models", [this](const httplib::Request& req, httplib::Response& res) {
      send_json(req, res, list_models(models_));
    });
    s.Get("/api/texts", [this](const httplib::Request& req, httplib::Response& res) {
      send_json(req, res, list_texts(models_));
    });
    s.Get("/api/quant-types", [](const httplib::Request& req, httplib::Response& res) {
      send_json(req, res, form_quant_types());
    });
    s.Get("/api/experiments", [this](const httplib::Request& req, httplib::Response& res) {
      send_json(req, res, experiment_list_.list(experiments_, paths_));
    });
    s.Get(R"(/api/experiments/([^/]+)/result)",
          [this](const httplib::Request& req, httplib::Response& res) { result(req, res); });
    s.Get(R"(/api/experiments/([^/]+)/download)",
          [this](const httplib::Request& req, httplib::Response& res) { download(req, res); });
    s.Get("/api/runs", [this](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json out = nlohmann::json::array();
      for (const RunState& r : runs_.list()) out.push_back(run_json(r));
      send_json(req, res, out);
    });
    s.Get(R"(/api/runs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
      const auto r = runs_.get(run_id(req));
      if (!r) return error(res, 404, "no such run");
      res.set_content(dump(run_json(*r)), kJson);
    });
    s.Post(R"(/api/runs/(\d+)/cancel)",
           [this](const httplib::Request& req, httplib::Response& res) {
             if (!runs_.cancel(run_id(req)))
               return error(res, 409, "no such run, or it has finished");
             res.set_content(dump({{"ok", true}}), kJson);
           });
    s.Post("/api/runs",
           [this](const httplib::Request& req, httplib::Response& res) { submit(req, res); });
  }

  std::string public_text(const std::string& text) const { return paths_.text(text); }

  // What the first page asks for, made before anyone asks: the page in every encoding and the
  // experiment list's lines (a few hundred ms for a folder of large results).
  void warm() {
    for (const Encoding e : {Encoding::kBrotli, Encoding::kGzip}) page_->bytes(e);
    experiment_list_.list(experiments_, paths_);
  }

 private:
  static int run_id(const httplib::Request& req) {
    try {
      return std::stoi(req.matches[1]);
    } catch (const std::exception&) {
      return -1;
    }
  }

  nlohmann::json run_json(RunState r) const {
    r.message = paths_.text(r.message);  // as serve shows paths
    return record_json(r);
  }

  void submit(const httplib::Request& req, httplib::Response& res) {
    nlohmann::json form;
    try {
      form = nlohmann::json::parse(req.body);
    } catch (const std::exception&) {
      return error(res, 400, "the request body is not JSON");
    }
    try {
      const RunPlan plan = plan_run(form, models_);
      std::lock_guard<std::mutex> lock(submit_mu_);
      if (!runs_.has_room()) {
        return error(res, 429,
                     "the run queue is full (" + std::to_string(limits::kMaxQueuedRuns) +
                         " runs waiting): wait for one to finish, or cancel one");
      }
      RunRequest run = claim_name(plan);
      const std::string name = run.experiment;
      const int id = runs_.submit(std::move(run));
      res.status = 201;
      res.set_content(dump({{"id", id}, {"experiment", name}}), kJson);
    } catch (const InputError& e) {
      error(res, 400, paths_.text(e.what()));
    } catch (const RuntimeError& e) {
      error(res, 500, paths_.text(e.what()));
    }
  }

  // The next run<N>- name that no file in the experiments folder has, with the pasted text
  // (if any) created under it exclusively: neither an earlier run's text nor its experiment is
  // ever written over, by this server or one started before it on the same folder.
  RunRequest claim_name(const RunPlan& plan) {
    const auto& root = experiments_.root();
    long n = std::max(next_number_, highest_run_number(root) + 1);
    for (int tries = 0; tries < 1000; ++tries, ++n) {
      RunRequest run;
      run.experiment = "run" + std::to_string(n) + "-" + plan.stem;
      run.experiment_file = (root / (run.experiment + ".hdy")).string();
      std::error_code ec;
      if (std::filesystem::symlink_status(run.experiment_file, ec).type() !=
          std::filesystem::file_type::not_found)
        continue;
      std::string text_path = plan.text_file;
      if (text_path.empty()) {
        text_path = (root / (run.experiment + ".txt")).string();
        if (!write_new_file(text_path, plan.pasted_text)) continue;
        run.owned_text = text_path;
      }
      run.args = run_args(plan, text_path, run.experiment_file);
      next_number_ = n + 1;
      return run;
    }
    throw RuntimeError("cannot find a free run name in the experiments folder");
  }

  void result(const httplib::Request& req, httplib::Response& res) {
    const auto path = experiment_path(experiments_, req.matches[1]);
    if (!path) return error(res, 404, "no such experiment");
    try {
      send(req, res, cached(*path, "result", [&] {
             return std::make_shared<EncodedBody>(dump(public_result(path->string())), kJson);
           }));
    } catch (const std::exception& e) {
      error(res, 422, paths_.text(e.what()));
    }
  }

  // The body `make` derives from the experiment file at `path`, made again only when the file
  // has changed since (its size, mtime or inode), or was dropped for room.
  std::shared_ptr<const EncodedBody> cached(
      const std::filesystem::path& path, const std::string& what,
      const std::function<std::shared_ptr<EncodedBody>()>& make) {
    const auto stamp = stamp_of(path);
    if (!stamp) return make();  // make says why the file cannot be read
    // A run killed does not change its file, but its page must stop saying "running": whether
    // a writer holds it is part of what the body was made from (store/writer_lock.h).
    const bool written = store::Experiment::being_written(path.string());
    return bodies_.get(what + (written ? " written " : " ") + path.string(), *stamp, make);
  }

  // The result document with every path in it relative (public_paths.h).
  nlohmann::json public_result(const std::string& file) const {
    nlohmann::json doc = kinds::result_document(file);
    if (!doc.contains("summary")) {
      paths_.scrub(doc);  // a sweep's or floor's summary and its text: no token text in them
      return doc;
    }
    for (const char* key : {"file", "config", "provenance"}) {
      if (doc["summary"].contains(key)) paths_.scrub(doc["summary"][key]);
    }
    return doc;
  }

  void download(const httplib::Request& req, httplib::Response& res) {
    const auto path = experiment_path(experiments_, req.matches[1]);
    if (!path) return error(res, 404, "no such experiment");
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "hdy";
    const std::string name = path->stem().string();
    try {
      if (format == "hdy") {
        require_regular_file(path->string(), "experiment file");  // a FIFO would block forever
        std::ifstream in(*path, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        res.set_content(ss.str(), "application/vnd.sqlite3");
      } else if (format == "json") {
        send(req, res, cached(*path, "result", [&] {
               return std::make_shared<EncodedBody>(dump(public_result(path->string())), kJson);
             }));
      } else if (format == "csv") {
        send(req, res, cached(*path, "csv", [&] {
               std::ostringstream ss;
               const report::Loaded l = kinds::load_positions(path->string());
               report::export_table(ss, l, "positions", "csv");
               // A CSV has no place for it, and the page that links here leads with it.
               return std::make_shared<EncodedBody>(
                   ss.str(), "text/csv",
                   EncodedBody::Headers{{"X-Heterodyne-Integrity", l.integrity}});
             }));
      } else {
        return error(res, 400, "format must be hdy, json or csv");
      }
    } catch (const std::exception& e) {
      return error(res, 422, paths_.text(e.what()));
    }
    // A file's name may hold quotes or control bytes: none reaches the header.
    std::string shown = name;
    for (char& c : shown) {
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
    }
    res.set_header("Content-Disposition", "attachment; filename=\"" + shown + "." + format + "\"");
  }

  Sandbox models_, experiments_;
  PublicPaths paths_;
  RequestGuard guard_;
  RunQueue runs_;
  // The page, compressed once; results and downloads, made once per file version.
  std::shared_ptr<const EncodedBody> page_ =
      std::make_shared<EncodedBody>(report::serve_html(), "text/html; charset=utf-8");
  BodyCache bodies_{limits::kMaxCachedBodyBytes};
  ExperimentList experiment_list_;
  std::mutex submit_mu_;
  long next_number_ = 1;
};

std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

void serve_until_stopped(const ServeOptions& o,
                         const std::function<void(const std::string&)>& on_listen) {
  const std::string token = o.token.empty() ? new_token() : o.token;
  // The API outlives the server: the server's workers call into it until they are joined.
  Api api(o, token);
  GuardedServer server;
  api.install(server);
  server.set_payload_max_length(limits::kMaxBodyBytes);
  server.set_default_headers({
      {"Cache-Control", "no-store"},
      {"X-Content-Type-Options", "nosniff"},
      // No other site may frame the page (clickjacking) or learn its address with the token.
      {"X-Frame-Options", "DENY"},
      {"Content-Security-Policy", "frame-ancestors 'none'"},
      {"Referrer-Policy", "no-referrer"},
  });
  // httplib's default adds SO_REUSEPORT, which lets a second server bind the same port and take
  // half the requests. SO_REUSEADDR alone allows a quick restart and refuses a busy port.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) res.set_content(dump({{"error", status_message(res.status)}}), kJson);
  });
  server.set_exception_handler(
      [&api](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = api.public_text(e.what());
        } catch (...) {
        }
        error(res, 500, what);
      });
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : o.port;
  if (port < 0 || (o.port != 0 && !server.bind_to_port(o.host, o.port))) {
    throw InputError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                     " (in use, or not an address of this machine?)");
  }
  server.harden_listener();
  // Beside the server, not before it: a request that comes first makes what it needs itself.
  std::thread warmer([&api] {
    try {
      api.warm();
    } catch (const std::exception&) {
      // the request that needs it says why
    }
  });
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done && !stop_requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  on_listen("http://" + url_host(o.host) + ":" + std::to_string(port) + "/?token=" + token);
  server.listen_after_bind();
  done = true;
  watcher.join();
  warmer.join();
}

}  // namespace hd::serve
