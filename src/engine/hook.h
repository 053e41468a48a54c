// A hook captures or overwrites named graph points while llama.cpp evaluates a batch.
//
// llama.cpp calls cb_eval with ask=true for every node ("do you want it?") and, for each node
// we want, with ask=false once it is computed and before anything downstream reads it. Reading
// there is a capture; writing there changes what every consumer sees (a transplant).
//
// Rows are the tokens of the whole batch in order. The callback fires once per ubatch per
// node, so rows arrive in pieces; the hook counts them per name and end_decode() fails if a
// wanted name came short or never came. Overwrites name a row range, so one decode carrying
// several sequences can patch each at its own point and rows.
//
// When logits are wanted only from position `first_output` on, the last layer's points keep
// only those rows (see point_has_output_rows_only, and except_from_row_rule for the models that
// keep other rows); their row 0 is then that position.
//
// A point is a 2-D tensor [width, rows] or a 3-D one [width, streams, rows] (a residual of
// several streams, as hyper-connections keep): its rows are then width × streams floats. An
// i32 point (expert ids: ffn_moe_topk-N) is 2-D, its rows at any stride; it is captured and
// written as floats, which hold its ids exactly.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

struct ggml_tensor;

namespace hd::engine {

class Hook {
 public:
  // Keep every row of `point` (the whole batch).
  void capture(const std::string& point);
  // Hand `point`'s rows to `watcher` as each ubatch computes them, keeping none: `pos` is the
  // batch position of row 0 of `rows` ([n][width]), valid during the call. A run that compares
  // a pass with another's rows as it goes needs no copy of its own (run/session_lean.cpp). A
  // watcher that throws fails the decode, as a failed capture does. Not for a decode with a layout,
  // nor in a worker's arm (WorkerArm refuses it): the rows are read in this process.
  using Watcher = std::function<void(int64_t pos, std::span<const float> rows, int64_t width)>;
  void watch(const std::string& point, Watcher watcher);
  // The width `point`'s rows have (floats): needed only where a decode may show a 3-D point one
  // row at a time before any wider piece (a decode step of a hyper-connection model).
  // Also a 3-D point whose rows are one wide ([1, n_used, rows]: the mixing weights of a MoE
  // layer), which a ubatch of one row would show as [1, n_used]. Asks for nothing by itself.
  void expect_width(const std::string& point, int64_t width) { widths_[point] = width; }
  // Replace rows [row_begin, row_begin + n) of `point` with `rows` ([n][width], row-major).
  void overwrite(const std::string& point, int64_t row_begin, std::span<const float> rows);

  // Also list every node the graph asks about, in the order first asked, with its shape as a
  // point would read it (point_survey.cpp finds a model's points from this). Counts assume a
  // decode of one ubatch.
  struct Node {
    std::string name;
    bool readable = false;  // f32 contiguous at most 3-D, or i32 2-D: a point can be taken here
    int64_t width = 0, rows = 0;
    int count = 1;  // nodes of this name per ubatch: more than one is no point (arctic, grok)
    std::string op;  // the ggml op that writes it (ggml_op_desc: MUL_MAT, RMS_NORM, …)
  };
  void list_nodes(std::vector<Node>* out) { nodes_ = out; }

  bool empty() const { return points_.empty() && nodes_ == nullptr; }
  bool watches() const;  // whether any point is watched (watch)

  // A decode of several sequences (a server arm, server_schedule.h): the rows of each ubatch in
  // graph order, each the decode's row it is (-1: another sequence's token), and the same for
  // the rows a point of output rows only keeps. The decode may span several llama_decode calls;
  // their ubatches follow each other here. Empty (the default): the batch's rows in order.
  struct UbatchRows {
    std::vector<int32_t> rows, outputs;
  };
  void set_layout(std::vector<UbatchRows> layout) { layout_ = std::move(layout); }

  // Capture `point` and stop computing the graph once it is (each ubatch): a cheap check of
  // what a pass computes up to there. The decode then has no logits.
  void stop_after(const std::string& point);
  const std::string& stop_point() const { return stop_; }

  // `point` keeps the rows point_has_output_rows_only does not predict for it: every row where
  // it predicts output rows only, or the reverse (the survey measures which, per model).
  void except_from_row_rule(const std::string& point) { row_rule_exceptions_.insert(point); }
  const std::set<std::string>& row_rule_exceptions() const { return row_rule_exceptions_; }
  // The captured rows of a point: [rows][width], row-major.
  const std::vector<float>& captured(const std::string& point) const;
  int64_t width(const std::string& point) const;
  int64_t first_row(const std::string& point) const;  // the position of captured row 0

  // Called by the arm around one pass of `n_rows` tokens (one llama_decode, or several for a
  // split pass in pieces: DecodeInput::split) whose logits are wanted from
  // position `first_output` on, in a model of `n_layer` layers.
  void begin_decode(int64_t n_rows, int64_t first_output, int n_layer);
  void end_decode();  // throws RuntimeError on missing or short points, or a failed callback
  // Whether a callback failed in this decode (end_decode then names why).
  bool failed() const { return !error_.empty(); }

  // The cb_eval entry point. Never throws: an error is kept and the decode is aborted.
  bool on_eval(ggml_tensor* t, bool ask);

  // For an arm in another process: what this hook asks for, sent along with the decode, and
  // the rows the other side's hook captured, stored here as if this hook had seen them.
  struct Patch {
    int64_t row_begin;
    std::vector<float> rows;
  };
  std::vector<std::string> captures() const;
  std::vector<std::pair<std::string, const Patch*>> patches() const;
  void receive(const std::string& point, int64_t width, int64_t first_row, std::vector<float> rows);

 private:
  struct Point {
    bool keep = false;
    Watcher watcher;  // or null
    std::vector<Patch> patches;
    std::vector<float> data;
    int64_t width = 0;
    int64_t rows_seen = 0;
    int64_t first_row = 0;  // position of row 0: first_output for output-only points
    bool output_only = false;
    size_t ubatches_seen = 0;  // with a layout
  };
  void handle(Point& p, const std::string& name, ggml_tensor* t);
  void handle_mapped(Point& p, const std::string& name, ggml_tensor* t, int64_t width,
                     int64_t rows);

  void list(const ggml_tensor* t);

  std::map<std::string, Point, std::less<>> points_;
  std::vector<Node>* nodes_ = nullptr;
  std::set<std::string> row_rule_exceptions_;
  std::map<std::string, int64_t, std::less<>> widths_;  // expect_width's
  std::vector<UbatchRows> layout_;
  int64_t n_rows_ = 0;
  std::vector<float> watched_;  // one piece of a watched point's rows, reused
  std::string error_;
  std::string stop_;
};

}  // namespace hd::engine
