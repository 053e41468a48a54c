// A generate file's rows read back and checked: what show, export, the page, resume, verify and
// merge read. A file is anyone's to edit (its hashes can be recomputed), so every value is
// checked for the shape generate writes, and any other is refused in one line as damage, never
// read past its end or taken for a number it is not.
#include <climits>
#include <map>
#include <nlohmann/json.hpp>

#include "errors.h"
#include "kinds/generate/generate_rows.h"
#include "store/experiment.h"
#include "store/sqlite.h"

namespace hd::kinds {

namespace {

using nlohmann::json;

[[noreturn]] void damaged(const store::Experiment& e, const std::string& table) {
  throw InputError("'" + e.path() + "' is damaged: " + table + " has a row that is not what "
                   "generate writes");
}

// [[id, p, piece] × 5], p a probability.
void read_top(const store::Experiment& e, const std::string& text, GeneratedToken& t) {
  const auto j = json::parse(text, nullptr, false);
  if (!j.is_array() || j.size() != analysis::kTopK) damaged(e, "generate_tokens");
  for (size_t k = 0; k < analysis::kTopK; ++k) {
    const auto& x = j[k];
    if (!x.is_array() || x.size() != 3 || !x[0].is_number_integer() || !x[1].is_number() ||
        !x[2].is_string())
      damaged(e, "generate_tokens");
    if (x[0].get<int64_t>() < 0 || x[0].get<int64_t>() > INT32_MAX) damaged(e, "generate_tokens");
    t.top.id[k] = x[0].get<int32_t>();
    t.top.p[k] = static_cast<float>(x[1].get<double>());
    t.top_pieces[k] = x[2].get<std::string>();
    // Probabilities, best first: a margin is never negative.
    if (!(t.top.p[k] >= 0 && t.top.p[k] <= 1) || (k > 0 && t.top.p[k] > t.top.p[k - 1]))
      damaged(e, "generate_tokens");
  }
}

bool is_int(const json& j, const char* key) { return j.contains(key) && j[key].is_number_integer(); }
bool is_str(const json& j, const char* key) { return j.contains(key) && j[key].is_string(); }
bool is_bool(const json& j, const char* key) { return j.contains(key) && j[key].is_boolean(); }

bool is_layer(const json& j) {
  return is_int(j, "layer") && j["layer"].get<int64_t>() >= -1 && j["layer"].get<int64_t>() <= (1 << 20);
}

// A step: its point and layer, B's top-1 with A's state written there, KL(A || patched B) (≥ 0,
// "inf", or null where it was NaN), and whether it gives back A's token.
bool step_shaped(const json& s, int64_t a_token) {
  const bool kl = s.is_object() && s.contains("kl") &&
                  ((s["kl"].is_number() && s["kl"].get<double>() >= 0) || s["kl"] == "inf" || s["kl"].is_null());
  return kl && is_str(s, "point") && is_layer(s) && is_int(s, "top1") && is_str(s, "piece") &&
         is_bool(s, "restores") && s["restores"].get<bool>() == (s["top1"].get<int64_t>() == a_token);
}

// generate_transplant.h's JSON, its A token the one A generated at the parting, every derived
// value what its parts give: `parts`, each step's `restores`, the head last, and the verdict the
// earliest step from which every later one restores.
bool transplant_shaped(const json& j, int32_t a_token) {
  if (!j.is_object() || !is_int(j, "a_token") || j["a_token"].get<int64_t>() != a_token ||
      !is_int(j, "a_top1") || !is_int(j, "b_top1") || !is_str(j, "a_piece") ||
      !is_str(j, "a_top1_piece") || !is_str(j, "b_piece") || !is_bool(j, "parts"))
    return false;
  const bool parts = j["a_top1"].get<int64_t>() == a_token && j["b_top1"].get<int64_t>() != a_token;
  if (j["parts"].get<bool>() != parts) return false;
  if (!parts) return !j.contains("steps") && !j.contains("verdict");
  if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty()) return false;
  const json& steps = j["steps"];
  size_t earliest = steps.size();
  for (size_t k = steps.size(); k-- > 0;) {
    if (!step_shaped(steps[k], a_token)) return false;
    if (earliest == k + 1 && steps[k]["restores"].get<bool>()) earliest = k;
  }
  const json& head = steps.back();
  const json& v = j.contains("verdict") ? j["verdict"] : json();
  return head["point"] == "head" && head["restores"].get<bool>() && earliest < steps.size() &&
         v.is_object() && is_str(v, "point") && is_layer(v) && v["point"] == steps[earliest]["point"] &&
         v["layer"] == steps[earliest]["layer"];
}

void read_prompts_table(const store::Experiment& e, std::map<int, PromptResult>& by_prompt) {
  store::Statement q(e.database().handle(), "SELECT prompt, text, tokens FROM generate_prompts ORDER BY prompt");
  while (q.step()) {
    if (q.type(0) != SQLITE_INTEGER || q.type(1) != SQLITE_TEXT || q.type(2) != SQLITE_TEXT ||
        q.integer(0) < 0 || q.integer(0) > (1 << 30))
      damaged(e, "generate_prompts");
    PromptResult r;
    r.prompt = static_cast<int>(q.integer(0));
    r.text = q.text(1);
    const auto ids = json::parse(q.text(2), nullptr, false);
    if (!ids.is_array() || ids.empty()) damaged(e, "generate_prompts");
    for (const auto& id : ids) {
      if (!id.is_number_integer()) damaged(e, "generate_prompts");
      r.tokens.push_back(id.get<int32_t>());
    }
    by_prompt[r.prompt] = std::move(r);
  }
}

// The prompt a row's first column names, or null for a value no stored prompt has (damage).
PromptResult* prompt_of(const store::Statement& q, std::map<int, PromptResult>& by_prompt) {
  if (q.type(0) != SQLITE_INTEGER || q.integer(0) < 0 || q.integer(0) > (1 << 30)) return nullptr;
  const auto it = by_prompt.find(static_cast<int>(q.integer(0)));
  return it == by_prompt.end() ? nullptr : &it->second;
}

void read_tokens_table(const store::Experiment& e, std::map<int, PromptResult>& by_prompt) {
  store::Statement t(e.database().handle(),
                     "SELECT prompt, arm, trial, i, token, piece, logprob, top FROM generate_tokens "
                     "ORDER BY prompt, arm, trial, i");
  while (t.step()) {
    PromptResult* const stored = prompt_of(t, by_prompt);
    const std::string arm = t.type(1) == SQLITE_TEXT ? t.text(1) : "";
    const int64_t trial = t.integer(2);
    if (stored == nullptr || (arm != "a" && arm != "b") ||
        t.type(2) != SQLITE_INTEGER || trial < 0 || trial > 256 || (arm == "a" && trial != 0) ||
        t.type(3) != SQLITE_INTEGER || t.type(4) != SQLITE_INTEGER || t.integer(4) < 0 ||
        t.integer(4) > INT32_MAX || t.type(5) != SQLITE_TEXT ||
        t.type(6) != SQLITE_FLOAT || !(t.real(6) <= 0) || t.type(7) != SQLITE_TEXT)
      damaged(e, "generate_tokens");
    PromptResult& r = *stored;
    if (arm == "b" && static_cast<size_t>(trial) >= r.b.size()) r.b.resize(static_cast<size_t>(trial) + 1);
    Completion& c = arm == "a" ? r.a : r.b[static_cast<size_t>(trial)];
    if (t.integer(3) != static_cast<int64_t>(c.tokens.size())) damaged(e, "generate_tokens");
    GeneratedToken g{static_cast<int32_t>(t.integer(4)), t.real(6), {}, t.text(5), {}};
    read_top(e, t.text(7), g);
    c.tokens.push_back(std::move(g));
  }
}

void read_partings_table(const store::Experiment& e, std::map<int, PromptResult>& by_prompt) {
  store::Statement p(e.database().handle(),
                     "SELECT prompt, trial, parted, common, ended_a, ended_b, transplant FROM "
                     "generate_partings ORDER BY prompt, trial");
  while (p.step()) {
    PromptResult* const stored = prompt_of(p, by_prompt);
    bool shaped = stored != nullptr && p.type(6) == SQLITE_TEXT;
    for (int i : {1, 2, 3, 4, 5}) shaped = shaped && p.type(i) == SQLITE_INTEGER;
    if (!shaped || p.integer(1) != static_cast<int64_t>(stored->partings.size()) ||
        p.integer(1) >= static_cast<int64_t>(stored->b.size()))
      damaged(e, "generate_partings");
    PromptResult& r = *stored;
    Completion& b = r.b[r.partings.size()];
    const auto shorter = static_cast<int64_t>(std::min(r.a.tokens.size(), b.tokens.size()));
    const int64_t parted = p.integer(2), common = p.integer(3);
    // The parting is where the stored tokens first differ (-1: nowhere), and A ended or did not
    // in every row alike.
    if (parted != parting_index(r.a, b) || common != (parted < 0 ? shorter : parted) ||
        (p.integer(4) != 0 && p.integer(4) != 1) || (p.integer(5) != 0 && p.integer(5) != 1) ||
        (!r.partings.empty() && r.a.ended != (p.integer(4) == 1)))
      damaged(e, "generate_partings");
    Parting x{static_cast<int>(parted), static_cast<int>(common), p.text(6)};
    if (!x.transplant.empty() &&
        (parted < 0 || !transplant_shaped(json::parse(x.transplant, nullptr, false),
                                          r.a.tokens[static_cast<size_t>(parted)].token)))
      damaged(e, "generate_partings");
    r.a.ended = p.integer(4) == 1;
    b.ended = p.integer(5) == 1;
    r.partings.push_back(std::move(x));
  }
}

}  // namespace

std::vector<PromptResult> read_generate_prompts(const store::Experiment& e) {
  std::map<int, PromptResult> by_prompt;
  read_prompts_table(e, by_prompt);
  read_tokens_table(e, by_prompt);
  read_partings_table(e, by_prompt);
  std::vector<PromptResult> out;
  for (auto& [k, r] : by_prompt) {
    bool whole = !r.b.empty() && r.partings.size() == r.b.size() && !r.a.tokens.empty();
    for (const Completion& b : r.b) whole = whole && !b.tokens.empty();
    if (!whole) damaged(e, "generate_partings");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hd::kinds
