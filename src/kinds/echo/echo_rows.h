// The echo kind's table, echo_positions: one row per scored position (chunk, pos, the next
// token, its NLL under A), a chunk's rows and their hash (meta "echo_sha256/<c>") in one
// transaction.
#pragma once
#include <cstdint>
#include <set>
#include <vector>

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

struct EchoRow {
  int chunk = 0, pos = 0;
  int32_t token = 0;  // the token position `pos` predicts (the chunk's pos + 1)
  double nll = 0;     // -log pA(token); +inf where A masks it
};

void create_echo_table(store::Experiment& e);
void put_echo_chunk(store::Experiment& e, const std::vector<EchoRow>& rows);
// Every stored row, by chunk and position; InputError for a row of another shape (damage).
std::vector<EchoRow> read_echo_rows(const store::Experiment& e);
std::set<int> stored_echo_chunks(const store::Experiment& e);
// The stored chunks, each checked against the hash stored with it (meta "echo_sha256/<c>"):
// InputError for a chunk changed since, which resume never adds to.
std::set<int> resumable_echo_chunks(const store::Experiment& e);

}  // namespace hd::kinds
