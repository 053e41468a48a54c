#include "kinds/arms_text.h"

#include <fmt/format.h>

#include "common/utf8.h"

namespace hd::kinds {

std::string arms_text(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_object() || !b.is_object()) return "";
  std::string differs;
  // A stored value is anyone's bytes: dumped with invalid UTF-8 replaced, then made printable.
  const auto shown = [](const nlohmann::json& v) {
    return printable(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 200);
  };
  const auto side = [&](const nlohmann::json& arm, const std::string& key) {
    return arm.contains(key) ? shown(arm[key]) : std::string("the default");
  };
  nlohmann::json keys = b;
  keys.update(a);
  for (const auto& [key, unused] : keys.items()) {
    if (a.value(key, nlohmann::json()) != b.value(key, nlohmann::json()))
      differs += fmt::format("{}{} {} (A: {})", differs.empty() ? "" : ", ", printable(key, 60),
                             side(b, key), side(a, key));
  }
  const nlohmann::json model = a.contains("model") ? a["model"] : nlohmann::json("");
  return "A: " + (model.is_string() ? printable(model.get<std::string>(), 400) : shown(model)) + "\n" +
         "B: " + (differs.empty() ? std::string("the same as A") : "A's, but " + differs) + "\n";
}

}  // namespace hd::kinds
