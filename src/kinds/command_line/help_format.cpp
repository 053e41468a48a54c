#include "kinds/command_line/help_format.h"

#include <set>
#include <sstream>

#include "kinds/command_line/arm_flags.h"

namespace hd::cli {

namespace {

size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // UTF-8 lead bytes: one code point each
  return n;
}

std::set<std::string>& rare_groups() {
  static std::set<std::string> groups;  // filled as the commands are added, before any help
  return groups;
}

}  // namespace

void mark_rare_group(const std::string& heading) { rare_groups().insert(heading); }
bool is_rare_group(const std::string& heading) { return rare_groups().count(heading) > 0; }

std::string wrap_text(const std::string& text, size_t width) {
  std::string out;
  std::istringstream paragraphs(text);
  bool first_paragraph = true;
  for (std::string p; std::getline(paragraphs, p);) {
    if (!first_paragraph) out += "\n";
    first_paragraph = false;
    const size_t indent = p.find_first_not_of(' ') == std::string::npos ? 0 : p.find_first_not_of(' ');
    std::istringstream words(p.substr(indent));
    std::string line(indent, ' ');
    size_t used = indent;
    bool empty = true;
    for (std::string w; words >> w;) {
      if (!empty && used + 1 + columns(w) > width) {
        out += line + "\n";
        line = std::string(indent + 2, ' ');
        used = indent + 2;
        empty = true;
      }
      line += (empty ? "" : " ") + w;
      used += (empty ? 0 : 1) + columns(w);
      empty = false;
    }
    out += line;
  }
  return out;
}

HelpFormatter::HelpFormatter() { column_width(30); }

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
  std::string names = CLI::Formatter::make_option_name(opt, is_positional);
  // llama.cpp's spellings (-ctk) are --ctk to CLI11 (normalize_llama_flags): shown as typed.
  for (const std::string& one_dash : llama_single_dash_flags()) {
    const std::string n = "-" + one_dash;
    const size_t end = n.size();
    if (names.rfind(n, 0) == 0 && (end == names.size() || names[end] == ',')) names.erase(0, 1);
  }
  return names;
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  std::stringstream out;
  std::string text = make_option_desc(opt);
  if (mode_ == CLI::AppFormatMode::Normal && text.find('\n') != std::string::npos)
  {
    text = text.substr(0, text.find('\n'));
    if (!text.empty() && text.back() == ':') text.pop_back();
    text += " (--help-all lists them)";
  }
  // Under --help-all of the whole program each command's flags are indented 2 more.
  const size_t indent = mode_ == CLI::AppFormatMode::Sub ? 2 : 0;
  const std::string desc = wrap_text(text, kHelpWidth - get_column_width() - indent);
  CLI::detail::format_help(out, make_option_name(opt, is_positional) + make_option_opts(opt), desc,
                           get_column_width());
  return out.str();
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_display_name(true),
                           wrap_text(sub->get_description(), kHelpWidth - get_column_width()),
                           get_column_width());
  return out.str();
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string d = CLI::Formatter::make_description(app);
  // Under the whole program's --help-all each command is indented 2 more.
  const size_t indent = mode_ == CLI::AppFormatMode::Sub ? 2 : 0;
  return d.empty() ? d : wrap_text(d, kHelpWidth - indent) + "\n";
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const std::string footer = CLI::Formatter::make_footer(app);
  return footer.empty() ? footer : wrap_text(footer, kHelpWidth) + "\n";
}

// CLI11's own make_help, with its groups' loop here: a rare group is left out of --help, and one
// line at the end names --help-all.
std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode mode) const {
  const CLI::AppFormatMode outer = mode_;
  mode_ = mode;
  if (mode == CLI::AppFormatMode::Sub) {
    std::string expanded = make_expanded(app);
    mode_ = outer;
    return expanded;
  }
  std::stringstream out;
  out << make_description(app) << make_usage(app, name) << make_positionals(app);
  std::string left_out;  // the rare groups' headings
  for (const std::string& group : app->get_groups()) {
    const auto opts = app->get_options([&](const CLI::Option* o) {
      return o->get_group() == group && o->nonpositional();
    });
    if (group.empty() || opts.empty()) continue;
    if (is_rare_group(group) && mode != CLI::AppFormatMode::All) {
      left_out += (left_out.empty() ? "" : "; ") + group;
      continue;
    }
    // make_group starts with its blank line.
    out << make_group(group, false, opts);
  }
  out << make_subcommands(app, mode);
  mode_ = outer;
  if (!left_out.empty()) {
    out << "\n"
        << wrap_text(app->get_name() + " --help-all lists these too: " + left_out + ".", kHelpWidth)
        << "\n";
  }
  out << make_footer(app);
  return out.str();
}

}  // namespace hd::cli
