// heterodyne report run.hdy -o run.html|- [--data run.json] [--force]
#include <iostream>

#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "report/experiment_views.h"
#include "report/html.h"

namespace hd::cli {

void add_report(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, out, data;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "write an experiment's result page as one self-contained HTML file (opens offline)");
  cmd->add_option("file", o->file, "experiment file")->required();
  cmd->add_option("-o,--output", o->out, "HTML file to write ('-': standard output)");
  cmd->add_option("--data", o->data, "also write the JSON the page draws");
  cmd->add_flag("--force", o->force, "replace existing output files");
  cmd->callback([o, &ctx] {
    if (o->out.empty() && o->data.empty())
      throw InputError("give -o FILE.html and/or --data FILE.json");
    if (!o->out.empty() && o->out == o->data && !is_stdout(o->out))
      throw InputError("-o and --data name the same file '" + o->out + "'");
    if (is_stdout(o->out) && is_stdout(o->data))
      throw InputError("-o and --data cannot both be standard output");
    // Neither output may be the experiment, or the other output.
    const OutputPolicy html_policy{o->force, {o->file, o->data}};
    const OutputPolicy data_policy{o->force, {o->file, o->out}};
    if (!o->out.empty() && !is_stdout(o->out)) check_output_path(o->out, html_policy);
    if (!o->data.empty() && !is_stdout(o->data)) check_output_path(o->data, data_policy);
    const nlohmann::json result = report::result_document(o->file);
    const auto write = [](const std::string& path, const std::string& text,
                          const OutputPolicy& policy) {
      if (is_stdout(path)) {
        std::cout << text;
      } else {
        write_output_file(path, text, policy);
      }
    };
    if (!o->data.empty()) {
      write(o->data, result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
            data_policy);
    }
    if (!o->out.empty()) {
      write(o->out, report::standalone_html(result), html_policy);
      if (!is_stdout(o->out)) progress_line("wrote " + o->out);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
