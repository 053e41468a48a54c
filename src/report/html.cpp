#include "report/html.h"

#include <cctype>
#include <optional>
#include <stdexcept>

#include "web_assets.h"

namespace hd::report {

std::string script_data_json(const nlohmann::json& value) {
  const std::string json = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    // These bytes stand only inside JSON strings, where \uXXXX means the same character.
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
      // U+2028, U+2029: line terminators to a JavaScript parser older than ES2019.
      out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> script_markup(std::string_view js) {
  std::string lower(js);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* bad : {"</script", "<!--", "<script"}) {
    if (lower.find(bad) != std::string::npos) return bad;
  }
  return std::nullopt;
}

namespace {

// The HTML parser ends a <script> at "</script" and, after "<!--", treats "<script" as the
// start of a nested one whose "</script>" it swallows. The page's own script is ours: it is
// checked once, not rewritten (rewriting "<" inside code would change what it means).
std::string_view checked_app_js() {
  static const std::string_view js = [] {
    const std::string_view s = web::kAppJs;
    if (const auto bad = script_markup(s)) {
      throw std::logic_error("the bundled web UI holds '" + *bad +
                             "', which would end or nest its <script>: write it escaped");
    }
    return s;
  }();
  return js;
}

std::string page(const std::string& title, const std::string& boot) {
  std::string html = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + title + "</title>\n<style>";
  html += app_css();
  html += "</style></head>\n<body><div id=\"app\"></div>\n<script>";
  html += boot;
  html += "</script>\n<script>";
  html += checked_app_js();
  html += "</script></body></html>\n";
  return html;
}

}  // namespace

std::string_view app_js() { return web::kAppJs; }
std::string_view app_css() { return web::kAppCss; }

std::string standalone_html(const nlohmann::json& result) {
  return page("heterodyne report", "window.HD_DATA = " + script_data_json(result) + ";");
}

std::string serve_html() { return page("heterodyne", "window.HD_SERVE = true;"); }

}  // namespace hd::report
