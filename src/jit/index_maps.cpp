// Index ops inside a region: an element of the output is an element of an input at a mapped
// index, so these ops cost no memory traffic of their own. Shapes are static, so each map is
// resolved when the kernel is built:
//   - a view (Identity, Reshape, Flatten, Squeeze, Unsqueeze) reads its input at the same
//     row-major offset; Transpose permutes the index; Expand broadcasts it;
//   - Slice reads input index start + i * step on each axis, the start clamped as the interpreter
//     clamps it (starts, ends, axes and steps must be constants);
//   - Concat selects among its operands' elements, each made at its index clamped into the
//     operand's range, so every load is in bounds and the loop stays straight-line (vectorisable);
//   - Gather reads `data` at the index loaded from `indices` (a negative one wraps). Constant
//     indices are checked to be in range when the kernel is built. Otherwise `data` must be a
//     constant (an embedding or lookup table) and the index is clamped into [0, dim): a kernel
//     cannot throw, so where the interpreter throws on an out-of-range index, the kernel returns
//     the element at the clamped index (its shape guard checks shapes, not values);
//   - Pad (pads and axes constant; negative pads crop): edge clamps the index, reflect mirrors
//     it, constant selects the pad value outside the input (the input's index clamped, so the
//     load stays in bounds).
#include <algorithm>
#include <optional>
#include <string>

#include "jit/element.h"
#include "jit/kernel_builder.h"
#include "jit/region_compiler.h"
#include "ops/op.h"

namespace sgraph::jit {

using llvm::Value;

IndexMap index_map(OpKind op) {
  if (ops::op_def(op).view) return IndexMap::same_offset;
  switch (op) {
    case OpKind::Transpose:
      return IndexMap::transpose;
    case OpKind::Expand:
      return IndexMap::broadcast;
    case OpKind::Slice:
      return IndexMap::slice;
    case OpKind::Concat:
      return IndexMap::concat;
    case OpKind::Gather:
      return IndexMap::gather;
    case OpKind::Pad:
      return IndexMap::pad;
    default:
      return IndexMap::none;
  }
}

bool maps_indices(OpKind op) { return index_map(op) != IndexMap::none; }

namespace {

bool has_input(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] != kNoValue; }

bool is_constant(const Graph& g, const Node& n, size_t i) {
  return has_input(n, i) && g.values[n.inputs[i]].initializer.defined();
}

// Input i as a constant, nullptr when absent (why_not_index_op has checked it is a constant).
const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  if (!has_input(n, i)) return nullptr;
  SG_ASSERT(is_constant(g, n, i)) << node_str(n) << ": input " << i << " is not a constant";
  return &g.values[n.inputs[i]].initializer;
}

Ints all_axes(size_t rank) {
  Ints a(rank);
  for (size_t d = 0; d < rank; ++d) a[d] = static_cast<int64_t>(d);
  return a;
}

Ints reversed_dims(size_t rank) {
  Ints p = all_axes(rank);
  std::reverse(p.begin(), p.end());
  return p;
}

// Slice: per input dim, the first element read and the step between reads; how many elements
// are read is the output shape's. Starts are clamped as the interpreter clamps them: forward to
// [0, dim], backward to [0, dim - 1].
struct SliceAxis {
  int64_t start = 0, step = 1;
};

std::vector<SliceAxis> slice_axes(const Graph& g, const Node& n, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  Ints starts, axes, steps;
  if (const Tensor* s = constant_input(g, n, 1)) {  // ONNX 10+: inputs
    starts = s->to_int64();
    if (const Tensor* a = constant_input(g, n, 3)) axes = a->to_int64();
    if (const Tensor* st = constant_input(g, n, 4)) steps = st->to_int64();
    if (!has_input(n, 3)) axes = all_axes(starts.size());
  } else {  // opset 1: attributes
    starts = n.attrs.get_ints("starts");
    axes = n.attrs.get_ints("axes", all_axes(starts.size()));
  }
  if (!has_input(n, 4)) steps.assign(starts.size(), 1);
  SG_CHECK(axes.size() == starts.size() && steps.size() == starts.size())
      << node_str(n) << ": " << starts.size() << " starts, " << axes.size() << " axes and "
      << steps.size() << " steps";
  std::vector<SliceAxis> r(in.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = ops::normalize_axis(axes[i], rank, "Slice axis");
    const int64_t dim = in[a], step = steps[i];
    SG_CHECK(step != 0) << node_str(n) << ": step 0 on axis " << axes[i];
    const int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    r[a] = {std::min(std::max(s, int64_t{0}), step > 0 ? dim : dim - 1), step};
  }
  return r;
}

// Pad: per dim, the pads before and after (negative ones crop), and the mode.
enum class PadMode { constant, edge, reflect };

struct PadSpec {
  PadMode mode = PadMode::constant;
  Ints begin, end;
};

std::optional<PadMode> pad_mode(const Node& n) {
  const std::string m = n.attrs.get_string("mode", "constant");
  if (m == "constant") return PadMode::constant;
  if (m == "edge") return PadMode::edge;
  if (m == "reflect") return PadMode::reflect;
  return std::nullopt;
}

PadSpec pad_spec(const Graph& g, const Node& n, size_t rank) {
  const Tensor* pads_in = constant_input(g, n, 1);
  const Ints pads = pads_in ? pads_in->to_int64() : n.attrs.get_ints("pads");
  Ints axes = all_axes(rank);
  if (const Tensor* a = constant_input(g, n, 3)) {
    axes = a->to_int64();
    for (int64_t& x : axes) x = ops::normalize_axis(x, static_cast<int64_t>(rank), "Pad axis");
  }
  SG_CHECK(pads.size() == 2 * axes.size())
      << node_str(n) << ": " << pads.size() << " pads for " << axes.size() << " axes";
  const std::optional<PadMode> mode = pad_mode(n);
  SG_ASSERT(mode) << node_str(n) << ": unknown mode";
  PadSpec p{*mode, Ints(rank, 0), Ints(rank, 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    p.begin[axes[i]] = pads[i];
    p.end[axes[i]] = pads[i + axes.size()];
  }
  return p;
}

Value* constant_of(llvm::LLVMContext& ctx, DType t, double v) {
  llvm::Type* type = ops::element_type(ctx, t);
  if (is_float(t)) return llvm::ConstantFP::get(type, v);
  if (t == DType::boolean) return llvm::ConstantInt::getBool(ctx, v != 0);
  return llvm::ConstantInt::get(type, static_cast<uint64_t>(static_cast<int64_t>(v)), true);
}

}  // namespace

std::string why_not_index_op(const Graph& g, const Node& n) {
  const auto need_constant = [&](size_t i, const char* what) -> std::string {
    if (!has_input(n, i) || is_constant(g, n, i)) return "";
    return std::string("its ") + what + " input is not a constant";
  };
  switch (index_map(n.op)) {
    case IndexMap::slice: {
      const char* names[] = {"starts", "ends", "axes", "steps"};
      for (size_t i = 1; i <= 4; ++i)
        if (std::string s = need_constant(i, names[i - 1]); !s.empty()) return s;
      if (!has_input(n, 1) && !n.attrs.has("starts")) return "no starts";
      return "";
    }
    case IndexMap::gather:
      if (is_constant(g, n, 0) || is_constant(g, n, 1)) return "";
      return "neither its data nor its indices are constants";
    case IndexMap::pad: {
      if (std::string s = need_constant(1, "pads"); !s.empty()) return s;
      if (std::string s = need_constant(3, "axes"); !s.empty()) return s;
      if (!has_input(n, 1) && !n.attrs.has("pads")) return "no pads";
      if (!pad_mode(n)) return "mode '" + n.attrs.get_string("mode", "") + "'";
      return "";
    }
    default:
      return "";
  }
}

Value* KernelBuilder::clamp(Value* i, int64_t lo, int64_t hi) {
  SG_ASSERT(lo <= hi) << "empty clamp range [" << lo << ", " << hi << "]";
  if (lo == hi) return i64(lo);
  return b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i, i64(hi)), i64(lo));
}

Value* KernelBuilder::compute_index_op(const Node& n, IndexMap map, const Index& idx) {
  const Shape& out = shape(n.outputs[0]);
  switch (map) {
    case IndexMap::same_offset: {
      const ValueId in = n.inputs[0];
      SG_CHECK(numel(shape(in)) == numel(out))
          << node_str(n) << ": input shape " << shape_str(shape(in)) << " and output shape "
          << shape_str(out) << " differ in size";
      if (std::optional<Index> same = unit_dims_map(idx, out, shape(in))) return element(in, *same);
      return element_at_offset(in, offset_of(idx, out));
    }
    case IndexMap::transpose: {
      const Ints perm = n.attrs.get_ints("perm", reversed_dims(out.size()));
      const Shape& in = shape(n.inputs[0]);
      SG_CHECK(perm.size() == out.size() && in.size() == out.size())
          << node_str(n) << ": perm " << shape_str(perm) << " does not fit shape " << shape_str(in);
      Index in_idx(out.size());
      for (size_t d = 0; d < out.size(); ++d) {
        SG_CHECK(in.at(perm[d]) == out[d]) << node_str(n) << ": output shape " << shape_str(out)
                                           << " is not a transpose of " << shape_str(in);
        in_idx[perm[d]] = idx[d];
      }
      return element(n.inputs[0], in_idx);
    }
    case IndexMap::broadcast:
      return element(n.inputs[0], broadcast_index(n, idx, out, shape(n.inputs[0])));
    case IndexMap::slice:
      return slice_element(n, idx);
    case IndexMap::concat:
      return concat_element(n, idx);
    case IndexMap::gather:
      return gather_element(n, idx);
    case IndexMap::pad:
      return pad_element(n, idx);
    case IndexMap::none:
      break;
  }
  SG_ASSERT(false) << node_str(n) << " is not an index op";
  return nullptr;
}

Value* KernelBuilder::slice_element(const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const Shape& in = shape(x);
  const Shape& out = shape(n.outputs[0]);
  SG_CHECK(in.size() == out.size()) << node_str(n) << ": output shape " << shape_str(out)
                                    << " is not a slice of " << shape_str(in);
  const std::vector<SliceAxis> axes = slice_axes(g_, n, in);
  Index in_idx(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const auto [start, step] = axes[d];
    // The first and the last element read lie in the input.
    int64_t last = 0;
    const bool fits =
        out[d] == 0 || (out[d] <= in[d] && start >= 0 && start < in[d] &&
                        !__builtin_mul_overflow(out[d] - 1, step, &last) &&
                        !__builtin_add_overflow(last, start, &last) && last >= 0 && last < in[d]);
    SG_CHECK(fits) << node_str(n) << ": output shape " << shape_str(out)
                   << " does not fit a slice of " << shape_str(in) << " on axis " << d;
    if (out[d] <= 1)
      in_idx[d] = i64(start);
    else if (step == 1)
      in_idx[d] = start == 0 ? idx[d] : b_.CreateAdd(idx[d], i64(start), "", true, true);
    else
      in_idx[d] = b_.CreateAdd(b_.CreateMul(idx[d], i64(step), "", false, true), i64(start), "",
                               false, true);
  }
  return element(x, in_idx);
}

Value* KernelBuilder::concat_element(const Node& n, const Index& idx) {
  const Shape& out = shape(n.outputs[0]);
  const auto axis = static_cast<size_t>(
      ops::normalize_axis(n.attrs.get_int("axis"), static_cast<int64_t>(out.size())));
  Value* const i = idx[axis];
  Value* r = nullptr;
  int64_t off = 0;  // where the operand starts along the axis
  for (ValueId v : n.inputs) {
    const Shape& s = shape(v);
    bool fits = s.size() == out.size();
    for (size_t d = 0; fits && d < s.size(); ++d) fits = d == axis || s[d] == out[d];
    SG_CHECK(fits) << node_str(n) << ": operand shape " << shape_str(s)
                   << " does not fit output shape " << shape_str(out) << " along axis " << axis;
    const int64_t len = s[axis];
    if (len == 0) continue;
    Index j = idx;
    j[axis] = clamp(off == 0 ? i : b_.CreateSub(i, i64(off), "", false, true), 0, len - 1);
    Value* e = element(v, j);
    r = r ? b_.CreateSelect(b_.CreateICmpSLT(i, i64(off)), r, e) : e;
    off += len;
  }
  SG_CHECK(off == out[axis]) << node_str(n) << ": operands add up to " << off << " along axis "
                             << axis << ", the output has " << out[axis];
  SG_ASSERT(r) << node_str(n) << ": an element of an empty output";
  return r;
}

Value* KernelBuilder::gather_element(const Node& n, const Index& idx) {
  const ValueId data = n.inputs[0], indices = n.inputs[1];
  const Shape& ds = shape(data);
  const Shape& is = shape(indices);
  const Shape& out = shape(n.outputs[0]);
  const int64_t rank = static_cast<int64_t>(ds.size());
  SG_CHECK(rank > 0) << node_str(n) << ": data is a scalar";
  const int64_t axis = ops::normalize_axis(n.attrs.get_int("axis", 0), rank);
  Shape expect(ds.begin(), ds.begin() + axis);
  expect.insert(expect.end(), is.begin(), is.end());
  expect.insert(expect.end(), ds.begin() + axis + 1, ds.end());
  SG_CHECK(out == expect) << node_str(n) << ": output shape " << shape_str(out)
                          << " is not a gather of " << shape_str(ds) << " by " << shape_str(is);
  const int64_t dim = ds[axis];
  SG_CHECK(dim > 0) << node_str(n) << ": gathers from an empty axis";
  const Tensor& known = g_.values[indices].initializer;
  if (known.defined())
    for (int64_t k : known.to_int64())
      SG_CHECK(k >= -dim && k < dim) << node_str(n) << ": index " << k
                                     << " is out of range for axis " << axis << " of size " << dim;
  const auto at = idx.begin() + axis;
  Value* k = b_.CreateSExt(element(indices, Index(at, at + is.size())), b_.getInt64Ty());
  k = b_.CreateSelect(b_.CreateICmpSLT(k, i64(0)), b_.CreateAdd(k, i64(dim)), k);
  if (!known.defined()) k = clamp(k, 0, dim - 1);  // see the top of this file
  Index data_idx(idx.begin(), at);
  data_idx.push_back(k);
  data_idx.insert(data_idx.end(), at + is.size(), idx.end());
  return element(data, data_idx);
}

Value* KernelBuilder::pad_element(const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const Shape& in = shape(x);
  const Shape& out = shape(n.outputs[0]);
  SG_CHECK(in.size() == out.size()) << node_str(n) << ": output shape " << shape_str(out)
                                    << " is not a padding of " << shape_str(in);
  const PadSpec p = pad_spec(g_, n, in.size());
  const auto pad_value = [&]() -> Value* {
    if (has_input(n, 2)) {
      const ValueId v = n.inputs[2];
      return element(v, Index(shape(v).size(), i64(0)));
    }  // the opset-2 `value` attribute goes with the `pads` attribute
    const double v = has_input(n, 1) ? 0.0 : n.attrs.get_float("value", 0.0);
    return constant_of(ctx_, g_.values[x].dtype, v);
  };
  Value* inside = nullptr;  // constant mode: whether idx lies in the (cropped) input
  Index in_idx(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t b = p.begin[d], e = p.end[d];
    // The input's kept range is [first, last]; output index o reads input index o - b.
    const int64_t first = std::max<int64_t>(-b, 0), last = in[d] - 1 - std::max<int64_t>(-e, 0);
    SG_CHECK(out[d] == in[d] + b + e && first <= last + 1)
        << node_str(n) << ": output shape " << shape_str(out) << " is not a padding of "
        << shape_str(in) << " on axis " << d;
    Value* j = b == 0 ? idx[d] : b_.CreateSub(idx[d], i64(b), "", false, true);
    if (b <= 0 && e <= 0) {  // only cropped: always inside
      in_idx[d] = j;
      continue;
    }
    if (first > last) {  // nothing kept: every element is padding
      SG_CHECK(p.mode == PadMode::constant)
          << node_str(n) << ": edge or reflect padding of an empty axis " << d;
      return pad_value();
    }
    if (p.mode == PadMode::reflect) {
      // Mirrored at both ends of the kept range: r = |j - first|, then m - |m - r|, m = last -
      // first.
      const int64_t m = last - first;
      SG_CHECK(std::max(b, e) <= m) << node_str(n) << ": reflect pads " << b << ", " << e
                                    << " on axis " << d << " reach past the mirrored range";
      const auto abs = [&](Value* v) {
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, v, b_.getFalse());
      };
      Value* r = abs(first == 0 ? j : b_.CreateSub(j, i64(first), "", false, true));
      r = b_.CreateSub(i64(m), abs(b_.CreateSub(i64(m), r, "", false, true)), "", false, true);
      in_idx[d] = first == 0 ? r : b_.CreateAdd(r, i64(first), "", false, true);
      continue;
    }
    in_idx[d] = clamp(j, first, last);
    if (p.mode == PadMode::constant) {
      Value* in_range = b_.CreateICmpULT(b_.CreateSub(j, i64(first)), i64(last - first + 1));
      inside = inside ? b_.CreateAnd(inside, in_range) : in_range;
    }
  }
  Value* v = element(x, in_idx);
  return inside ? b_.CreateSelect(inside, v, pad_value()) : v;
}

}  // namespace sgraph::jit
