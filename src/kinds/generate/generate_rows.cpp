#include "kinds/generate/generate_rows.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::kinds {

namespace {

std::string hash_key(int prompt) { return "generate_sha256/" + std::to_string(prompt); }

std::string prompt_sha256(const store::Experiment& e, int prompt) {
  return store::detail::unit_sha256(e, [&](Sha256& md) {
    for (const char* sql :
         {"SELECT * FROM generate_prompts WHERE prompt = ?",
          "SELECT * FROM generate_tokens WHERE prompt = ? ORDER BY arm, trial, i",
          "SELECT * FROM generate_partings WHERE prompt = ? ORDER BY trial"}) {
      store::Statement q(e.database().handle(), sql);
      q.bind(1, int64_t{prompt});
      store::detail::hash_rows(md, q);
    }
  });
}

std::array<std::string, analysis::kTopK> top_pieces(const analysis::TopK& t, const engine::Model& model) {
  std::array<std::string, analysis::kTopK> out;
  for (size_t k = 0; k < analysis::kTopK; ++k) out[k] = token_piece(model, t.id[k]);
  return out;
}

void put_tokens(store::Statement& q, const engine::Model& model, int prompt, const char* arm,
                int trial, const Completion& c) {
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    const GeneratedToken& t = c.tokens[i];
    q.bind(1, int64_t{prompt}).bind(2, std::string(arm)).bind(3, int64_t{trial});
    q.bind(4, static_cast<int64_t>(i)).bind(5, int64_t{t.token}).bind(6, token_piece(model, t.token));
    q.bind(7, t.logprob).bind(8, top5_json(t.top, top_pieces(t.top, model)).dump());
    q.run();
  }
}

}  // namespace

nlohmann::json top5_json(const analysis::TopK& top,
                         const std::array<std::string, analysis::kTopK>& pieces) {
  nlohmann::json j = nlohmann::json::array();
  for (size_t k = 0; k < analysis::kTopK; ++k) j.push_back({top.id[k], top.p[k], pieces[k]});
  return j;
}

void create_generate_tables(store::Experiment& e) {
  e.database().exec(
      "CREATE TABLE generate_prompts (prompt INTEGER PRIMARY KEY, text TEXT NOT NULL,"
      " tokens TEXT NOT NULL);"
      "CREATE TABLE generate_tokens (prompt INTEGER, arm TEXT, trial INTEGER, i INTEGER,"
      " token INTEGER NOT NULL, piece TEXT NOT NULL, logprob REAL NOT NULL, top TEXT NOT NULL,"
      " PRIMARY KEY (prompt, arm, trial, i)) WITHOUT ROWID;"
      "CREATE TABLE generate_partings (prompt INTEGER, trial INTEGER, parted INTEGER NOT NULL,"
      " common INTEGER NOT NULL, ended_a INTEGER NOT NULL, ended_b INTEGER NOT NULL,"
      " transplant TEXT NOT NULL, PRIMARY KEY (prompt, trial)) WITHOUT ROWID");
}

void put_generate_prompt(store::Experiment& e, const engine::Model& model, const PromptResult& r) {
  store::Database& db = e.database();
  store::Transaction t(db);
  {
    store::Statement q(db.handle(), "INSERT INTO generate_prompts VALUES (?, ?, ?)");
    q.bind(1, int64_t{r.prompt}).bind(2, r.text).bind(3, nlohmann::json(r.tokens).dump());
    q.run();
  }
  store::Statement q(db.handle(), "INSERT INTO generate_tokens VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  put_tokens(q, model, r.prompt, "a", 0, r.a);
  for (size_t k = 0; k < r.b.size(); ++k)
    put_tokens(q, model, r.prompt, "b", static_cast<int>(k), r.b[k]);
  store::Statement p(db.handle(), "INSERT INTO generate_partings VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (size_t k = 0; k < r.partings.size(); ++k) {
    const Parting& x = r.partings[k];
    p.bind(1, int64_t{r.prompt}).bind(2, static_cast<int64_t>(k)).bind(3, int64_t{x.parted});
    p.bind(4, int64_t{x.common}).bind(5, int64_t{r.a.ended ? 1 : 0});
    p.bind(6, int64_t{r.b[k].ended ? 1 : 0}).bind(7, x.transplant);
    p.run();
  }
  e.set_meta(hash_key(r.prompt), prompt_sha256(e, r.prompt));
  t.commit();
}

std::set<int> resumable_generate_prompts(const store::Experiment& e) {
  std::set<int> stored;
  for (const PromptResult& r : read_generate_prompts(e)) stored.insert(r.prompt);
  return store::detail::require_unchanged_units(
      e, stored, hash_key, [&](int p) { return prompt_sha256(e, p); }, "generate prompt");
}

namespace {
bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

bool same_completion(const Completion& x, const Completion& y) {
  if (x.ended != y.ended || x.tokens.size() != y.tokens.size()) return false;
  for (size_t i = 0; i < x.tokens.size(); ++i) {
    const GeneratedToken &a = x.tokens[i], &b = y.tokens[i];
    if (a.token != b.token || !same_bits(a.logprob, b.logprob) || a.top.id != b.top.id ||
        std::memcmp(a.top.p.data(), b.top.p.data(), sizeof a.top.p) != 0)
      return false;
  }
  return true;
}
}  // namespace

bool same_result(const PromptResult& x, const PromptResult& y) {
  if (x.prompt != y.prompt || x.text != y.text || x.tokens != y.tokens ||
      !same_completion(x.a, y.a) || x.b.size() != y.b.size() || x.partings.size() != y.partings.size())
    return false;
  for (size_t k = 0; k < x.b.size(); ++k) {
    if (!same_completion(x.b[k], y.b[k])) return false;
    const Parting &p = x.partings[k], &q = y.partings[k];
    if (p.parted != q.parted || p.common != q.common || p.transplant != q.transplant) return false;
  }
  return true;
}

}  // namespace hd::kinds
