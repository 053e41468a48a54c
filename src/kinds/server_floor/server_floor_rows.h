// The server-floor kind's table, server_floor_positions: one row per scored position (chunk,
// pos), what the trials (server compositions) did there against the plain arm: the mean and the
// largest KL(plain || trial), how many trials changed the plain arm's top-1, whether the trials'
// top-1 differ among themselves, and the plain arm's top-1. A chunk's rows and their hash (meta
// "server_floor_sha256/<c>") are written in one transaction.
#pragma once
#include <cstdint>
#include <set>
#include <vector>

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

struct ServerFloorRow {
  int chunk = 0, pos = 0;
  double kl_mean = 0, kl_max = 0;  // over the trials; +inf where a trial masks a token
  int flips = 0;                   // trials whose top-1 is not the plain arm's
  bool varies = false;             // the trials' top-1 are not all the same
  int32_t top1 = 0;                // the plain arm's
};

void create_server_floor_table(store::Experiment& e);
void put_server_floor_chunk(store::Experiment& e, const std::vector<ServerFloorRow>& rows);
// Every stored row by chunk and position; InputError for a row of another shape (damage).
std::vector<ServerFloorRow> read_server_floor_rows(const store::Experiment& e);
// The stored chunks, each checked against the hash stored with it: InputError for a chunk
// changed since, which resume never adds to.
std::set<int> resumable_server_floor_chunks(const store::Experiment& e);

}  // namespace hd::kinds
