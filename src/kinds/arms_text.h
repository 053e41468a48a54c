// Two arms as the text views name them (length-curve, generate): A's model, and each setting in
// which B differs ("B: A's, but cache_type_k "q8_0" (A: "f16")"). The arms are their stored
// JSON (run/config.h to_json), where a setting at its default may be left out.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hd::kinds {

// Two lines, each ending in a newline; "" unless both are objects.
std::string arms_text(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace hd::kinds
