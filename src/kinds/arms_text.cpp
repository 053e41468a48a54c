#include "kinds/arms_text.h"

#include <fmt/format.h>

namespace hd::kinds {

std::string arms_text(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_object() || !b.is_object()) return "";
  std::string differs;
  const auto side = [](const nlohmann::json& arm, const std::string& key) {
    return arm.contains(key) ? arm[key].dump() : std::string("the default");
  };
  nlohmann::json keys = b;
  keys.update(a);
  for (const auto& [key, unused] : keys.items()) {
    if (a.value(key, nlohmann::json()) != b.value(key, nlohmann::json()))
      differs += fmt::format("{}{} {} (A: {})", differs.empty() ? "" : ", ", key, side(b, key),
                             side(a, key));
  }
  return "A: " + a.value("model", std::string()) + "\n" +
         "B: " + (differs.empty() ? std::string("the same as A") : "A's, but " + differs) + "\n";
}

}  // namespace hd::kinds
