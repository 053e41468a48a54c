// heterodyne report run.hdy -o run.html [--data run.json]
#include <fstream>

#include "cli/commands.h"
#include "common/output_path.h"
#include "errors.h"
#include "report/html.h"
#include "report/result.h"

namespace hd::cli {

void add_report(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, out, data;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "write an experiment's result page as one self-contained HTML file (opens offline)");
  cmd->add_option("file", o->file, "experiment file")->required();
  cmd->add_option("-o,--output", o->out, "HTML file to write");
  cmd->add_option("--data", o->data, "also write the JSON the page draws");
  cmd->callback([o, &ctx] {
    if (o->out.empty() && o->data.empty())
      throw InputError("give -o FILE.html and/or --data FILE.json");
    if (!o->out.empty()) check_output_path(o->out);
    if (!o->data.empty()) check_output_path(o->data);
    const report::Loaded l = report::load_experiment(o->file);
    const nlohmann::json result = report::result_json(l);
    const auto write = [](const std::string& path, const std::string& text) {
      std::ofstream out(path, std::ios::binary);
      out << text;
      if (!out.flush()) throw RuntimeError("cannot write " + path);
    };
    if (!o->data.empty()) {
      write(o->data, result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    if (!o->out.empty()) {
      write(o->out, report::standalone_html(result));
      progress_line("wrote " + o->out);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
