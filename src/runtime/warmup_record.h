// The warm-up record: what a Session's plan is made from (its ShapeTracker's and OpProfiler's
// state), as text that travels with the model (sgraph export writes it into the planned ONNX file's
// metadata), so a Session made from that model plans at once, without warm-up runs.
//
//   std::string text = save_warmup_record(g, tracker, profiler, node_names, value_names);
//   ...  // in another process, for the same graph (read back from the file)
//   load_warmup_record(g, text, tracker, profiler);  // then plan as after a warm-up
//
// The text is JSON: every op's shapes in the latest run that observed it, its stable/changed flag
// (with the run and what changed), its timing samples and byte counts; every value's shape in each
// run (the symbols of the dynamic tier come from these) and the small values guards check. Nodes
// and values are named, so the graph may be re-ordered (a file whose regions are functions is
// read back in another order). It carries a fingerprint of the graph it was made for (ops,
// attributes, names, constants' data) and a checksum of its own content: a record for another
// graph (a model edited after export) or a damaged one is refused with an sgraph::Error saying
// why, and a Session then warms up as usual.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/op_profiler.h"
#include "runtime/shape_tracker.h"

namespace sgraph {

// `node_names` / `value_names`: the names the record uses for g's nodes (by index) and values (by
// id): unique and non-empty (those the model is written with). `planned`: the Session has planned
// from these runs (else the record is of a warm-up not finished, to be gone on with).
std::string save_warmup_record(const Graph& g, const ShapeTracker& tracker,
                               const OpProfiler& profiler,
                               const std::vector<std::string>& node_names,
                               const std::vector<std::string>& value_names, bool planned = true);

// Restores `tracker` and `profiler` (made for g) from a record made for g, whose node and value
// names are those of the record. Throws sgraph::Error (and leaves both as they were) when the
// text is damaged, was made for another graph, or does not fit g. Returns whether the recorded
// Session had planned from those runs (save_warmup_record's `planned`).
bool load_warmup_record(const Graph& g, std::string_view text, ShapeTracker& tracker,
                        OpProfiler& profiler);

// A fingerprint of g under the given names: its inputs, outputs, nodes (op, attributes, inputs,
// outputs, by name, in any order) and constants (dtype, shape, data).
uint64_t graph_fingerprint(const Graph& g, const std::vector<std::string>& node_names,
                           const std::vector<std::string>& value_names);

}  // namespace sgraph
