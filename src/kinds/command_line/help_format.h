// How --help reads: within 100 columns (descriptions wrapped under their column), llama.cpp's
// single-dash spellings as its users type them (-ctk, -fa, -ub), and the rare flags (one arm's
// own, llama-server's) under --help-all, with one line saying so.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace hd::cli {

inline constexpr size_t kHelpWidth = 100;

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;

 private:
  // The mode of the help being made (help is made on one thread): --help keeps the first
  // paragraph of a description of several (a list of plug-ins), --help-all all of them.
  mutable CLI::AppFormatMode mode_ = CLI::AppFormatMode::Normal;
};

// Headings whose flags --help leaves to --help-all ("Arm A only"): said once, where the group
// is made; every command's help then treats a group of that name so.
void mark_rare_group(const std::string& heading);
bool is_rare_group(const std::string& heading);

// `text` wrapped into lines of at most `width` columns (code points), the paragraphs its
// newlines start kept, each continuation indented as its paragraph's first line.
std::string wrap_text(const std::string& text, size_t width);

}  // namespace hd::cli
