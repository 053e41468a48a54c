// The web UI's assets (built from web/ at build time and embedded in the binary) and the
// self-contained HTML report made from them.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hd::report {

std::string_view app_js();
std::string_view app_css();

// `value` as JSON text that can stand inside a <script> element whatever its strings hold:
// '<', '>' and '&' (and U+2028/U+2029) written as \uXXXX escapes, so no "</script>", "<!--" or
// "<script" can reach the HTML parser. JSON.parse and a JavaScript parser read the same value.
std::string script_data_json(const nlohmann::json& value);

// What in `js` would end or nest a <script> element if it stood in one ("</script", "<!--",
// "<script", in any case, as the HTML parser matches them), or nullopt.
std::optional<std::string> script_markup(std::string_view js);

// One HTML file: the page's script and style inline, the result JSON as data. No network.
std::string standalone_html(const nlohmann::json& result);

// The page `serve` answers at /: the same script, which then talks to the server's API.
std::string serve_html();

}  // namespace hd::report
