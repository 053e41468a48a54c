#include "serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "errors.h"
#include "report/export.h"
#include "report/html.h"
#include "report/result.h"
#include "run/diff.h"
#include "serve/catalog.h"
#include "serve/run_form.h"
#include "serve/runs.h"
#include "serve/sandbox.h"

namespace hd::serve {
namespace {

constexpr const char* kJson = "application/json";

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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

class Api {
 public:
  Api(const ServeOptions& o) : models_(o.models), experiments_(o.experiments), runs_(o.exe) {}

  void install(httplib::Server& s) {
    s.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(report::serve_html(), "text/html; charset=utf-8");
    });
    s.Get("/api/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump(list_models(models_)), kJson);
    });
    s.Get("/api/texts", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump(list_texts(models_)), kJson);
    });
    s.Get("/api/quant-types", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump(form_quant_types()), kJson);
    });
    s.Get("/api/experiments", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump(list_experiments(experiments_)), kJson);
    });
    s.Get(R"(/api/experiments/([^/]+)/result)",
          [this](const httplib::Request& req, httplib::Response& res) { result(req, res); });
    s.Get(R"(/api/experiments/([^/]+)/download)",
          [this](const httplib::Request& req, httplib::Response& res) { download(req, res); });
    s.Get("/api/runs", [this](const httplib::Request&, httplib::Response& res) {
      nlohmann::json out = nlohmann::json::array();
      for (const RunState& r : runs_.list()) out.push_back(run_json(r));
      res.set_content(dump(out), kJson);
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

 private:
  static int run_id(const httplib::Request& req) {
    try {
      return std::stoi(req.matches[1]);
    } catch (const std::exception&) {
      return -1;
    }
  }

  static nlohmann::json run_json(const RunState& r) {
    return {{"id", r.id},         {"state", r.state},     {"chunk", r.chunk},
            {"chunks", r.chunks}, {"message", r.message}, {"experiment", r.experiment}};
  }

  void submit(const httplib::Request& req, httplib::Response& res) {
    nlohmann::json form;
    try {
      form = nlohmann::json::parse(req.body);
    } catch (const std::exception&) {
      return error(res, 400, "the request body is not JSON");
    }
    try {
      std::lock_guard<std::mutex> lock(submit_mu_);
      const RunPlan plan = plan_run(form, models_, experiments_, ++submitted_);
      const int id = runs_.submit(plan.args, plan.experiment);
      res.status = 201;
      res.set_content(dump({{"id", id}, {"experiment", plan.experiment}}), kJson);
    } catch (const InputError& e) {
      error(res, 400, e.what());
    }
  }

  void result(const httplib::Request& req, httplib::Response& res) {
    const auto path = experiment_path(experiments_, req.matches[1]);
    if (!path) return error(res, 404, "no such experiment");
    try {
      res.set_content(dump(report::result_json(report::load_experiment(path->string()))), kJson);
    } catch (const std::exception& e) {
      error(res, 422, e.what());
    }
  }

  void download(const httplib::Request& req, httplib::Response& res) {
    const auto path = experiment_path(experiments_, req.matches[1]);
    if (!path) return error(res, 404, "no such experiment");
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "hdy";
    const std::string name = path->stem().string();
    try {
      if (format == "hdy") {
        std::ifstream in(*path, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        res.set_content(ss.str(), "application/vnd.sqlite3");
      } else if (format == "json") {
        res.set_content(dump(report::result_json(report::load_experiment(path->string()))), kJson);
      } else if (format == "csv") {
        std::ostringstream ss;
        report::export_positions(ss, report::load_experiment(path->string()), "csv");
        res.set_content(ss.str(), "text/csv");
      } else {
        return error(res, 400, "format must be hdy, json or csv");
      }
    } catch (const std::exception& e) {
      return error(res, 422, e.what());
    }
    res.set_header("Content-Disposition", "attachment; filename=\"" + name + "." + format + "\"");
  }

  Sandbox models_, experiments_;
  RunQueue runs_;
  std::mutex submit_mu_;
  int submitted_ = 0;
};

}  // namespace

void serve_until_stopped(const ServeOptions& o,
                         const std::function<void(const std::string&)>& on_listen) {
  Api api(o);
  httplib::Server server;
  api.install(server);
  server.set_payload_max_length(size_t{64} << 20);  // a pasted text, not a model
  // httplib's default adds SO_REUSEPORT, which lets a second server bind the same port and take
  // half the requests. SO_REUSEADDR alone allows a quick restart and refuses a busy port.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(dump({{"error", "HTTP " + std::to_string(res.status)}}), kJson);
    }
  });
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        error(res, 500, what);
      });
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : o.port;
  if (port < 0 || (o.port != 0 && !server.bind_to_port(o.host, o.port))) {
    throw InputError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                     " (in use, or not an address of this machine?)");
  }
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done && !run::stop_requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  on_listen("http://" + o.host + ":" + std::to_string(port) + "/");
  server.listen_after_bind();
  done = true;
  watcher.join();
}

}  // namespace hd::serve
