// An experiment file: configuration, provenance and every stored number of one run.
// Layout: docs/experiment-format.md. One writer at a time (an exclusive lock on the file);
// any number of readers.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/plugin.h"
#include "analysis/records.h"
#include "store/sweep_rows.h"

namespace hd::store {

class Database;

inline constexpr int kSchemaVersion = 2;  // 2: every file names its kind and hashes every unit (docs/experiment-format.md)
inline constexpr const char* kIntegrityMismatch = "MISMATCH";
// The line show, export and report print on stderr for a file whose verdict is MISMATCH (the
// pages lead with the same words).
std::string integrity_warning(const std::string& path);
// The most any reader loads from one stored value (a meta value: provenance, config, a kind's
// result; a TEXT cell of any table), and what a writer may store in meta: a merge of tens of
// thousands of parts stays below it, and a tampered file's 200 MB string is refused, the same
// way by every reader (show, export, report, verify, merge, serve), before it is read into
// memory. Residual blobs alone may be larger (kMaxResidualBytes).
inline constexpr int kMaxFieldBytes = 32 << 20;
// The most a reader loads from one token's text (vocab): llama.cpp's longest pieces are tens of
// bytes; a GGUF may hold longer ones, none near this.
inline constexpr int kMaxPieceBytes = 1 << 20;
// A residual blob holds n_tokens × n_embd floats: 1e9 bytes (SQLite's own largest value) is a
// 4096-token chunk of a model of width 61,000.
inline constexpr int kMaxResidualBytes = 1000000000;

class Experiment {
 public:
  // A new experiment for writing. It is made as "<path>.part" and appears at `path` only when
  // publish() is called (diff: once its first chunk is stored; sweep and floor: when complete),
  // so a run that fails or is stopped before then leaves `path` as it was. An existing file is
  // replaced only with `replace`, never while another process writes it, and never when it is
  // one of `inputs` (the models and text the run reads). Destroyed unpublished, the part is
  // removed.
  // `resumable`: an existing output's message suggests --resume (a run) or only --force (merge).
  static Experiment create(const std::string& path, bool replace,
                           const std::vector<std::string>& inputs, bool resumable = true);
  // What create() would refuse, checked before any work is done. Throws InputError.
  static void check_creatable(const std::string& path, bool replace,
                              const std::vector<std::string>& inputs, bool resumable = true);
  // Whether another process holds the writer's lock on the file at `path` (a run writes it).
  static bool being_written(const std::string& path);
  // The run's status as a reader should say it: "complete"; "running" while a process writes
  // the file; "stopped" when it says running and nothing writes it (killed, cancelled: resumable);
  // "unknown" without one.
  std::string live_status() const;
  // The same rule for a status read earlier: `stored` as the file at `path` has it now.
  static std::string live_status(const std::string& stored, const std::string& path);
  // An existing file; `writable` takes the writer's lock (refused while another holds it).
  static Experiment open(const std::string& path, bool writable);

  Experiment(Experiment&&) noexcept;
  ~Experiment();

  // Where the experiment is (once published) or will be.
  const std::string& path() const { return path_; }
  // Moves a created experiment into place; a no-op once done (and for opened files).
  void publish();
  bool published() const { return part_.empty(); }

  void set_meta(const std::string& key, const std::string& value);
  std::optional<std::string> meta(const std::string& key) const;
  std::map<std::string, std::string> all_meta() const;
  // The value, or InputError naming the file when a run was stopped before storing it.
  std::string required_meta(const std::string& key) const;
  // InputError naming the key when a stored meta value is larger than kMaxFieldBytes (open()
  // calls it: every reader refuses such a file alike, before anything is loaded).
  void check_meta_sizes() const;
  // The run's configuration (meta "config"), or InputError "'<f>' holds no run: ..." for a file
  // stopped before it was stored (only files of versions before .part publication look so).
  std::string stored_config() const;

  // Stores one chunk, with the vocabulary pieces of every token it mentions, in one
  // transaction. `pieces` maps token id to its text.
  void put_chunk(const analysis::ChunkResult& chunk, const std::map<int32_t, std::string>& pieces);
  std::vector<int> finished_chunks() const;
  analysis::ChunkResult read_chunk(int chunk) const;
  std::vector<analysis::ChunkResult> read_all() const;
  std::map<int32_t, std::string> pieces() const;

  // The plug-in analyses (analysis/plugin.h) the file holds rows of, and every finished chunk's
  // rows of one (store/analysis_tables.h).
  std::vector<std::string> analyses() const;
  std::vector<analysis::StoredRow> analysis_rows(const std::string& name) const;

  // A sweep's rows (store/sweep_rows.h). put_sweep_chunk stores one chunk with its hash in one
  // transaction (replacing rows of the chunk stored without a hash). sweep_chunk reads one back,
  // from the tables, checked against `shape`: nullopt when
  // the chunk is not stored, InputError naming the file when its rows are not what a sweep
  // writes. sweep_chunk_altered: why a stored chunk no longer hashes as recorded, if it does not.
  void put_sweep_chunk(const SweepChunkRows& rows);
  std::optional<SweepChunkRows> sweep_chunk(int chunk, const SweepShape& shape) const;
  std::optional<std::string> sweep_chunk_altered(int chunk) const;
  // InputError when rows lie outside the sweep's `total` chunks, or a chunk is stored both as
  // an old meta row and in the tables: rows no run writes, which sealing would otherwise keep.
  void require_sweep_rows_within(int total) const;

  // SHA-256 over the canonical serialization of every stored value but the hash itself.
  std::string compute_integrity() const;
  // "ok" (sealed, and the rows hash as recorded), "not sealed" or "MISMATCH" (changed after it
  // was sealed): what every reader reports, by these words.
  std::string integrity_verdict() const;
  // The same over the rows alone: no meta, no run times. Two runs of one configuration on one
  // kind of machine store the same rows (a merged file and a single-process run do).
  std::string rows_sha256() const;

  // Copies every row of `part` (every table but meta) into this file in one transaction:
  // `heterodyne merge` (run/merge.h), which checks first that the parts fit together. A row
  // another part already stored (vocabulary aside) is refused by the tables' keys.
  void append_rows(const Experiment& part);

  // Each chunk's rows are hashed as they are stored (meta "chunk_sha256/N"), so that resume
  // never seals rows edited since. The first finished chunk whose rows no longer hash as
  // recorded (or has no hash), described; nullopt when all do.
  std::optional<std::string> altered_chunks() const;

  // The first stored value of `chunk` (every column of every row, the run time aside) that
  // differs from `recomputed`'s, which holds the same chunk computed again; nullopt when none.
  std::optional<std::string> first_difference(int chunk, const Experiment& recomputed) const;

  // The database itself, for the tables of one kind of experiment (kinds/floor/floor_rows.h); only
  // store/ can use it (store/sqlite.h is its own).
  Database& database() const { return *db_; }

  // An experiment that lives in memory only (verify writes a recomputed chunk into one).
  static Experiment in_memory();
  // Records the hash and marks the run complete.
  void seal();
  // Both marks of seal() are there (a file killed mid-seal by an older heterodyne has the
  // status without the hash; --resume seals it).
  bool sealed() const;

 private:
  Experiment(std::string path, std::unique_ptr<Database> db, int lock_fd);
  std::string integrity_hash(bool whole) const;
  std::string path_;
  std::unique_ptr<Database> db_;
  int lock_fd_ = -1;
  // While created and not yet published: where the database is, the lock held on the file it
  // replaces, and what may not be replaced.
  std::string part_, publish_to_;  // publish_to_: `path`, or the file a link there leads to
  int replaced_lock_fd_ = -1;
  std::vector<std::string> inputs_;
};

}  // namespace hd::store
