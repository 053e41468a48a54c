#include "report/html.h"

#include "web_assets.h"

namespace hd::report {
namespace {

// Inside <script>, "</" could end the element early: JSON allows "\/" for "/".
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += json[i];
    }
  }
  return out;
}

std::string page(const std::string& title, const std::string& boot) {
  std::string html = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + title + "</title>\n<style>";
  html += app_css();
  html += "</style></head>\n<body><div id=\"app\"></div>\n<script>";
  html += boot;
  html += "</script>\n<script>";
  html += script_safe(std::string(app_js()));
  html += "</script></body></html>\n";
  return html;
}

}  // namespace

std::string_view app_js() { return web::kAppJs; }
std::string_view app_css() { return web::kAppCss; }

std::string standalone_html(const nlohmann::json& result) {
  const std::string data = result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return page("heterodyne report", "window.HD_DATA = " + script_safe(data) + ";");
}

std::string serve_html() { return page("heterodyne", "window.HD_SERVE = true;"); }

}  // namespace hd::report
