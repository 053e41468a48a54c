// heterodyne report run.hdy -o run.html|- [--data run.json] [--force]
// heterodyne report q8_0.hdy q4_k_m.hdy … -o ladder.html   (several diffs: the compare page)
// heterodyne report ref/ [--check result.json] -o ref.html (a gate reference, a check's result)
#include <iostream>

#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "kinds/views.h"
#include "report/html.h"
#include "report/reference_view.h"
#include "store/experiment.h"

namespace hd::cli {

void add_report(CLI::App& app, Context& ctx) {
  struct Opts {
    std::vector<std::string> files;
    std::string out, data, check;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "write an experiment's result page as one self-contained HTML file (opens offline)");
  cmd->add_option("files", o->files,
                  "experiment file; several diffs: one page comparing them (a ladder)")
      ->required();
  cmd->add_option("-o,--output", o->out, "HTML file to write ('-': standard output)");
  cmd->add_option("--data", o->data, "also write the JSON the page draws");
  cmd->add_option("--check", o->check,
                  "with a gate reference: a `check --json-out` file to draw against its "
                  "tolerances");
  cmd->add_flag("--force", o->force, "replace existing output files");
  cmd->callback([o, &ctx] {
    if (o->out.empty() && o->data.empty())
      throw InputError("give -o FILE.html and/or --data FILE.json");
    if (!o->out.empty() && o->out == o->data && !is_stdout(o->out))
      throw InputError("-o and --data name the same file '" + o->out + "'");
    if (is_stdout(o->out) && is_stdout(o->data))
      throw InputError("-o and --data cannot both be standard output");
    const bool reference = o->files.size() == 1 && report::is_reference_dir(o->files[0]);
    if (!o->check.empty() && !reference)
      throw InputError("--check is for a gate reference (a directory written by capture)");
    // Neither output may be an input (an experiment, a reference's files, the check), or the
    // other output.
    std::vector<std::string> inputs = o->files;
    if (reference)
      for (const char* f : {"/manifest.json", "/tolerances.json", "/activations.safetensors"})
        inputs.push_back(o->files[0] + f);
    if (!o->check.empty()) inputs.push_back(o->check);
    std::vector<std::string> keep_html = inputs, keep_data = inputs;
    keep_html.push_back(o->data);
    keep_data.push_back(o->out);
    const OutputPolicy html_policy{o->force, keep_html};
    const OutputPolicy data_policy{o->force, keep_data};
    if (!o->out.empty() && !is_stdout(o->out)) check_output_path(o->out, html_policy);
    if (!o->data.empty() && !is_stdout(o->data)) check_output_path(o->data, data_policy);
    const nlohmann::json result = reference ? report::reference_document(o->files[0], o->check)
                                  : o->files.size() == 1
                                      ? kinds::result_document(o->files[0])
                                      : kinds::compare_document(o->files);
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
    // The page leads with the same line (web/src/dom.ts integrityWarning).
    for (const auto& f : kinds::altered_files(result)) progress_line(store::integrity_warning(f));
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
