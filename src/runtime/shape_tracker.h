// ShapeTracker: records shape *stability* across warm-up runs — which ops saw the same input and
// output shapes on every run. (Not a view algebra: tinygrad's ShapeTracker, with the same name,
// tracks how a buffer is indexed; this one only compares each op's shapes run to run.)
//
//   ShapeTracker st(g);
//   OpObserver* obs[] = {&st};
//   for (auto& feed : warmup) { st.begin_run(); interp.run(feed, obs); st.end_run(); }
//   std::vector<bool> stable = st.stable();
//
// Run 1 records every op's shapes and marks all ops unchanged. From run 2 on, an op that is still
// unchanged is compared with its shapes from the previous run; any difference (a dim, a rank, an
// absent optional input becoming present or the reverse) marks it changed for good, with the run
// (1-based) and a readable description, e.g. "input 0 'x': [2,8,32] -> [2,17,32]". An op not
// observed in some run is changed too ("not run in run 3"). After the warm-up, the ops observed in
// every run and never changed are stable.
//
// It also keeps the values of small tensors (at most kMaxKeptElements elements: shape vectors,
// scalars) as the latest run saw them, for the guards of regions whose shapes depend on values
// (see value_guards.h). A run that fails is undone with abort_run(): a call that throws is not a
// warm-up run.
//
// Per dim, too (the dynamic tier's view): symbolic_dims() says, for every value seen in every run
// with one rank, which of its dims changed during warm-up and how: each changing dim is a symbol,
// one symbol for dims whose values were equal in every run (ONNX dim_param names only name
// symbols; observed equality decides), or an affine function scale * s + offset of an earlier
// symbol seen at three or more distinct values (so that two runs alone never relate two
// unrelated dims), or a form an op's shape rule gives (a strided Conv's "(w+1)/2", see
// derive_by_rules). A value whose rank changed, or not made in every run, has no symbolic shape.
// The elements of small integer values get the same treatment (SymbolicDims::elements), so that
// a dynamic region whose Reshape reads a computed shape vector can guard it as forms of its
// symbols instead of staying interpreted.
//
// Not thread-safe: observe one run at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/sym_shape.h"
#include "runtime/interpreter.h"

namespace sgraph {

class ShapeTracker final : public OpObserver {
 public:
  struct Change {
    int run;           // 1-based warm-up run (or a later serving run, via mark_changed)
    std::string what;  // which inputs/outputs changed, old -> new
  };

  // `g` must outlive the tracker.
  explicit ShapeTracker(const Graph& g);

  static constexpr int64_t kMaxKeptElements = 64;
  // Whether a value of dtype t and n elements is one whose elements the tracker keeps (a small
  // integer value: a shape vector, a length), as forms of the symbols where they are such.
  static bool small_integers(DType t, int64_t n) {
    return (t == DType::i64 || t == DType::i32) && n <= kMaxKeptElements;
  }

  // Brackets one run. begin_run() closes a run left open; end_run() marks the ops that the run
  // did not observe as changed; abort_run() instead restores the record as it was before
  // begin_run().
  void begin_run();
  void on_op(const OpEvent& e) override;
  bool reads_time() const override { return false; }
  void end_run();
  void abort_run();

  int runs() const { return runs_; }
  bool changed(int32_t node) const { return op(node).change.has_value(); }
  // Per node: observed in every run so far and never changed (all false before the first run).
  std::vector<bool> stable() const;
  const std::optional<Change>& change(int32_t node) const { return op(node).change; }

  // The shapes of the latest run that observed the node. An absent optional input has an empty
  // shape and is recorded as absent, so it differs from a present scalar ([]).
  const std::vector<Shape>& input_shapes(int32_t node) const { return op(node).in; }
  const std::vector<Shape>& output_shapes(int32_t node) const { return op(node).out; }
  // Per value id: a copy of its value in the latest run that made or read it, when it had at most
  // kMaxKeptElements elements; else undefined.
  const std::vector<Tensor>& small_values() const { return values_; }

  // How `e`'s shapes differ from those recorded for its node (as in Change::what), or nullopt when
  // they are the same. For checking ops while serving, outside any run.
  std::optional<std::string> difference(const OpEvent& e) const;
  // Whether `e`'s shapes are those recorded for its node: difference() without its text.
  bool same_as_recorded(const OpEvent& e) const { return same_shapes(op(e.node_index), e); }

  struct SymbolicDims {
    std::vector<Symbol> symbols;
    std::vector<std::optional<SymShape>> values;  // per value id
    // Per value id: the elements of a small integer value (a shape vector such as Shape(x) ->
    // Gather -> Concat makes) as forms of the symbols, when every warm-up run made it with the
    // same number of elements and each element was constant, a symbol, a dim's form or an affine
    // function of a symbol in every run (observed, as dims are: a guard must check it).
    std::vector<std::optional<SymShape>> elements;
  };
  SymbolicDims symbolic_dims() const;

  // Marks a node changed after warm-up (a guard miss while serving). A node already changed
  // keeps its first change.
  void mark_changed(int32_t node, int run, std::string what);

  // The whole record, to save a warm-up with its model and restore it in another process
  // (runtime/warmup_record.h).
  struct OpRecord {
    std::vector<Shape> in, out;
    std::vector<bool> in_present;
    int last_run = 0;  // the latest run that observed the op; 0 = never
    std::optional<Change> change;
  };
  struct Seen {
    int run;
    Shape shape;
    // The elements of a small integer value (i32, i64; at most kMaxKeptElements), else nullopt.
    std::optional<Ints> ints;
  };
  struct State {
    std::vector<OpRecord> ops;            // per node
    std::vector<Tensor> values;           // per value id (small_values)
    std::vector<std::vector<Seen>> seen;  // per value id: its shape in each run that made it
    int runs = 0;
  };
  State state() const;
  // Replaces the record (no run open); throws sgraph::Error when `s` does not fit the graph (sizes,
  // arities, runs out of order).
  void restore(State s);

 private:
  void derive_by_rules(SymbolicDims& sd) const;
  void derive_elements(SymbolicDims& sd) const;
  void check(int32_t node) const;
  const OpRecord& op(int32_t node) const {
    check(node);
    return ops_[node];
  }
  OpRecord& op(int32_t node) {
    check(node);
    return ops_[node];
  }
  static bool same_shapes(const OpRecord& r, const OpEvent& e);
  static void record(OpRecord& r, const OpEvent& e);
  std::string describe(const OpRecord& before, const OpEvent& now) const;

  void keep_value(ValueId v, const Tensor& t);
  void see(ValueId v, const Tensor& t);

  const Graph& g_;
  std::vector<OpRecord> ops_;            // per node
  std::vector<Tensor> values_;           // per value id (see small_values)
  std::vector<std::vector<Seen>> seen_;  // per value id: its shape in each run that made it
  int runs_ = 0;
  bool open_ = false;
  struct Saved {  // the record before the open run, for abort_run()
    std::vector<OpRecord> ops;
    std::vector<Tensor> values;
    int runs = 0;
  };
  std::optional<Saved> saved_;
};

}  // namespace sgraph
