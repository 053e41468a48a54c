// Typed records between layers, each described once by a field table: its JSON key, its
// member, a line of doc. The JSON a record becomes at an edge (HTTP, --json) and the TypeScript
// interface the web UI reads it as (web/src/records.ts, written by tools/records_ts.cpp and
// checked current by `make test`) both come from that table, so the two cannot drift apart.
//
// A record R is described by specializing RecordTable<R> with `name` (the TypeScript
// interface's), `doc`, and `fields`, a tuple of record_field(...). Member types: std::string,
// bool, int, int64_t, double (NaN is JSON null: not measured), std::vector<std::string>, and
// std::optional of any of them (the key is absent when empty: TypeScript's `key?:`).
#pragma once
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace hd {

template <class R, class T>
struct RecordField {
  const char* key;
  T R::*member;
  const char* doc;
};

template <class R, class T>
constexpr RecordField<R, T> record_field(const char* key, T R::*member, const char* doc = "") {
  return {key, member, doc};
}

template <class R>
struct RecordTable;  // specialized once per record, next to it

namespace record_detail {
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {
  using Value = T;
};

template <class T>
nlohmann::json value_json(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
  } else {
    return nlohmann::json(v);
  }
}

// The TypeScript type of a member's value (web/src/types.ts's Num: number | null | undefined).
template <class T>
const char* ts_type() {
  if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (std::is_same_v<T, double>) return "Num";
  else if constexpr (std::is_integral_v<T>) return "number";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "string[]";
  else static_assert(sizeof(T) == 0, "a record member of a type record.h does not map");
}
}  // namespace record_detail

// The record as its JSON object: every field by its key, an empty optional left out.
template <class R>
nlohmann::json record_json(const R& r) {
  nlohmann::json j = nlohmann::json::object();
  std::apply(
      [&](const auto&... f) {
        const auto put = [&](const auto& field) {
          const auto& v = r.*(field.member);
          using T = std::decay_t<decltype(v)>;
          if constexpr (record_detail::IsOptional<T>::value) {
            if (v) j[field.key] = record_detail::value_json(*v);
          } else {
            j[field.key] = record_detail::value_json(v);
          }
        };
        (put(f), ...);
      },
      RecordTable<R>::fields);
  return j;
}

// The TypeScript interface of R: `export interface <name> { key: type; … }`, each field with its
// doc as a comment.
template <class R>
std::string record_ts() {
  std::string out = std::string("/** ") + RecordTable<R>::doc + " */\nexport interface " +
                    RecordTable<R>::name + " {\n";
  std::apply(
      [&](const auto&... f) {
        const auto line = [&](const auto& field) {
          using T = std::decay_t<decltype(std::declval<R>().*(field.member))>;
          if (field.doc[0] != '\0') out += std::string("  /** ") + field.doc + " */\n";
          if constexpr (record_detail::IsOptional<T>::value) {
            using V = typename record_detail::IsOptional<T>::Value;
            out += std::string("  ") + field.key + "?: " + record_detail::ts_type<V>() + ";\n";
          } else {
            out += std::string("  ") + field.key + ": " + record_detail::ts_type<T>() + ";\n";
          }
        };
        (line(f), ...);
      },
      RecordTable<R>::fields);
  return out + "}\n";
}

}  // namespace hd
