// sgraph/onnx.h — ONNX import and export.
//
//   Graph g = sgraph::load_onnx("model.onnx");   // verified; errors name the file, node and op
//   Session s(std::move(g));
//   sgraph::save_onnx(g, "copy.onnx");           // load_onnx gives the same graph back
//
// Import supports the default (ai.onnx) domain up to opset 18, mapping older op versions onto
// sgraph's ops (e.g. Softmax before 13, Clip-6, Slice-1, Pad-2, Upsample, Resize-10), Constant
// nodes, initializers (raw or typed data), named and unnamed symbolic dims, If subgraphs that read
// outer values, model-local functions (inlined) and the model's metadata_props.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

Graph load_onnx(const std::string& path);
// `bytes` is a serialized ModelProto; `origin` names it in errors.
Graph load_onnx_bytes(std::string_view bytes, const std::string& origin);

// Export. The model has IR version 8 and imports ai.onnx at opset 17, or at 18 (19) when a node
// needs a form only that version has (Mish, a Reduce* other than ReduceSum with an axes input,
// Split's num_outputs, Pad's axes input, Resize's axes / keep_aspect_ratio_policy / antialias;
// AveragePool's dilations, Resize's half_pixel_symmetric). Nodes keep their op, attributes and
// inputs, except where sgraph holds an older op version's form that the chosen opset lacks: those
// attributes become constant inputs written as Constant nodes named "<node>/<attribute>" (Slice-1,
// Squeeze/Unsqueeze/Split/Pad before 13, a Reduce* axes attribute at opset 18), and attributes
// the op ignores are dropped (consumed_inputs, BatchNormalization's is_test and spatial, the
// legacy broadcast, Clip-6's min and max); a rank-0 ConstantOfShape value is written 1-D. Constants
// are initializers (raw_data); graph inputs and outputs carry their dtype and declared dims
// (symbols as dim_param); If branches read outer values by name, as ONNX subgraphs do (one
// returning an outer value as it is returns an Identity of it); `metadata` becomes metadata_props,
// `name` the graph's.
//
// Unique, non-empty names for a graph's nodes and values, as save_onnx writes them: a name is kept
// at its first occurrence when it is non-empty (among nodes, resp. values), and made unique
// deterministically otherwise ("<name>_<k>", "<Op>_<node index>", "value_<id>").
struct OnnxNames {
  std::vector<std::string> nodes, values;  // by node index / value id
};
OnnxNames onnx_names(const Graph& g);

struct OnnxSaveOptions {
  // Groups of node indices, each written as one node calling a model-local ONNX function (domain
  // "sgraph.region", op_type function_names[k] or "region_<k>") whose body is the group's nodes.
  // The function's inputs: the values the group reads that it does not produce (constants too:
  // a function body cannot see the graph's initializers); outputs: the values it produces that are
  // read outside it or are graph outputs. Formal parameter and body value names are the values'
  // own names (onnx_names), so inlining gives the original graph back. Groups must be disjoint and
  // contractible without a cycle (throw sgraph::Error otherwise); nodes are written in a
  // topological order of the contracted graph.
  std::vector<std::vector<int32_t>> functions;
  std::vector<std::string> function_names;
  // Groups in If branches, the same way, by the branch's label "<If node name>/<attribute>"
  // (nested branches: the labels joined by '/', "If_0/then_branch/If_3/else_branch"); node indices
  // into that branch's graph. Their functions are named after the label ("If_0_then_branch_
  // region_<k>"). Labels that name no branch are ignored.
  std::map<std::string, std::vector<std::vector<int32_t>>> subgraph_functions;
};
// A serialized ModelProto. Throws sgraph::Error naming the node and op it cannot write.
std::string save_onnx_bytes(const Graph& g, const OnnxSaveOptions& options = {});
void save_onnx(const Graph& g, const std::string& path, const OnnxSaveOptions& options = {});

// The planned model (the method's "second model"): the Session's graph with each region of its
// plan one node calling a model-local function ("region_<id>" / "dynamic_region_<id>", domain
// sgraph.region) that holds the region's ops, and the warm-up record in the metadata
// (kWarmupRecordKey, with "sgraph.plan" and "sgraph.symbols" for readers). Loaded back, the
// functions are inlined and a Session plans from the record without warm-up runs (its kernels come
// from the disk cache or are compiled once); other ONNX tools run it as any model with local
// functions. Throws sgraph::Error when the Session has not planned, or when the graph would not
// read back as the same graph (see save_onnx: then warm up a Session of the graph as read back).
class Session;
std::string save_planned_onnx_bytes(const Session& s);
void save_planned_onnx(const Session& s, const std::string& path);

// A serialized onnx.TensorProto file (the input_<i>.pb / output_<j>.pb of ONNX test folders).
Tensor load_tensor_pb(const std::string& path);
void save_tensor_pb(const Tensor& t, const std::string& path, const std::string& name = "");

// The inputs of the data sets in `dir`, as in ONNX's test layout: test_data_set_<k>/input_<i>.pb
// for k = 0, 1, ... (until one is missing), or, without test_data_set_0, the input_<i>.pb files in
// `dir` itself as one data set. Empty when there are none; throws sgraph::Error on a bad file.
std::vector<std::vector<Tensor>> load_data_set_inputs(const std::string& dir);

}  // namespace sgraph
