// The web UI's assets (built from web/ at build time and embedded in the binary) and the
// self-contained HTML report made from them.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hd::report {

std::string_view app_js();
std::string_view app_css();

// One HTML file: the page's script and style inline, the result JSON as data. No network.
std::string standalone_html(const nlohmann::json& result);

// The page `serve` answers at /: the same script, which then talks to the server's API.
std::string serve_html();

}  // namespace hd::report
