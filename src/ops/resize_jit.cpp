// Resize's lowering, from the same per-dim tap tables as its reference kernel (resize.h): nearest
// mode reads the input at the mapped index on each resized dim (an integer factor as a division,
// else a table load); linear and cubic modes sum weight products over the combinations of each
// dim's taps, in f64, with each dim's taps padded to its largest count (weight 0). roi, scales and
// sizes must be constants; antialias and tf_crop_and_resize stay interpreted.
#include <algorithm>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/resize.h"

namespace sgraph::ops {
namespace {

std::string why_not_resize(const Graph& g, const Node& n) {
  const char* names[] = {"roi", "scales", "sizes"};
  for (size_t i = 1; i <= 3; ++i)
    if (std::string s = need_constant(g, n, i, names[i - 1]); !s.empty()) return s;
  const ResizeMode mode = resize_mode(n.attrs);
  if (mode.antialias) return "antialias";
  if (mode.crop) return "tf_crop_and_resize";
  return "";
}

// How one dim's output index maps to input taps, planned once per node (its tables are globals
// of the module, valid in every nest).
struct DimPlan {
  enum Kind { same, by_factor, table, weighted } kind = same;
  int64_t factor = 1, width = 1;  // by_factor: input index o / factor; weighted: taps per output
  llvm::Value* idx = nullptr;     // i64 table: [out] (table), [out * width] (weighted)
  llvm::Value* w = nullptr;       // f64 table [out * width] (weighted)
};

struct ResizePlan {
  Shape out;
  std::vector<DimPlan> dims;  // one per input dim
  size_t combos = 1;          // tap combinations per output element
};

DimPlan plan_dim(Emitter& e, const ResizeTable& t, int64_t in) {
  DimPlan p;
  if (t.identity) return p;
  const int64_t out = static_cast<int64_t>(t.begin.size()) - 1;
  for (int64_t i = 0; i < out; ++i) p.width = std::max(p.width, t.begin[i + 1] - t.begin[i]);
  if (p.width == 1 && std::all_of(t.w.begin(), t.w.end(), [](double w) { return w == 1.0; })) {
    // Nearest: upsampling by an integer factor f reads o / f.
    const int64_t f = in > 0 && out % in == 0 ? out / in : 0;
    bool by_factor = f > 0;
    for (int64_t i = 0; by_factor && i < out; ++i) by_factor = t.idx[i] == i / f;
    if (by_factor) {
      p.kind = DimPlan::by_factor;
      p.factor = f;
      return p;
    }
    p.kind = DimPlan::table;
    p.idx = e.i64_array(t.idx);
    return p;
  }
  Ints idx(out * p.width, 0);
  std::vector<double> w(out * p.width, 0.0);
  for (int64_t i = 0; i < out; ++i) {
    for (int64_t k = t.begin[i]; k < t.begin[i + 1]; ++k) {
      idx[i * p.width + k - t.begin[i]] = t.idx[k];
      w[i * p.width + k - t.begin[i]] = t.w[k];
    }
    // Padding taps repeat a real index (weight 0), so their loads stay in bounds.
    for (int64_t k = t.begin[i + 1] - t.begin[i]; k < p.width; ++k)
      idx[i * p.width + k] = idx[i * p.width];
  }
  p.kind = DimPlan::weighted;
  p.idx = e.i64_array(idx);
  p.w = e.f64_array(w);
  return p;
}

const ResizePlan& plan_of(Emitter& e, const Node& n) {
  std::any& state = e.state(n);
  if (!state.has_value()) {
    const Graph& g = e.graph;
    const Shape& in = e.planned_shape(n.inputs[0]);
    const ResizeParams p = resize_params(n.attrs, in, constant_input(g, n, 1),
                                         constant_input(g, n, 2), constant_input(g, n, 3));
    ResizePlan plan{p.out, {}, 1};
    for (size_t d = 0; d < in.size(); ++d) {
      plan.dims.push_back(plan_dim(e, p.tables[d], in[d]));
      plan.combos *= static_cast<size_t>(plan.dims.back().width);
    }
    SG_CHECK(plan.combos <= 256) << node_str(n) << ": " << plan.combos
                                 << " taps per output element";
    state = std::move(plan);
  }
  return std::any_cast<const ResizePlan&>(state);
}

// One dim's taps at output index o: (input index, weight) pairs; weight nullptr means 1.
struct Tap {
  llvm::Value* index;
  llvm::Value* weight;
};

std::vector<Tap> taps(Emitter& e, const DimPlan& p, llvm::Value* o) {
  llvm::IRBuilderBase& b = e.b;
  llvm::Type* i64t = b.getInt64Ty();
  switch (p.kind) {
    case DimPlan::same:
      return {{o, nullptr}};
    case DimPlan::by_factor:
      return {{p.factor == 1 ? o : b.CreateUDiv(o, e.i64(p.factor)), nullptr}};
    case DimPlan::table:
      return {{b.CreateLoad(i64t, b.CreateInBoundsGEP(i64t, p.idx, o)), nullptr}};
    case DimPlan::weighted:
      break;
  }
  std::vector<Tap> r;
  for (int64_t k = 0; k < p.width; ++k) {
    llvm::Value* at =
        b.CreateAdd(b.CreateMul(o, e.i64(p.width), "", true, true), e.i64(k), "", true, true);
    r.push_back({b.CreateLoad(i64t, b.CreateInBoundsGEP(i64t, p.idx, at)),
                 b.CreateLoad(b.getDoubleTy(), b.CreateInBoundsGEP(b.getDoubleTy(), p.w, at))});
  }
  return r;
}

llvm::Value* generate_resize(Emitter& e, const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const Shape& in = e.shape(x);
  const Shape& out = e.shape(n.outputs[0]);
  const ResizePlan& plan = plan_of(e, n);
  SG_CHECK(plan.out == out) << node_str(n) << ": output shape " << shape_str(out)
                            << " is not the resize of " << shape_str(in) << " ("
                            << shape_str(plan.out) << ")";
  std::vector<std::vector<Tap>> dims;
  for (size_t d = 0; d < in.size(); ++d) dims.push_back(taps(e, plan.dims[d], idx[d]));
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* sum = nullptr;
  for (size_t c = 0; c < plan.combos; ++c) {
    Index at(in.size());
    llvm::Value* weight = nullptr;
    for (size_t d = 0, rest = c; d < in.size(); ++d) {
      const Tap& tap = dims[d][rest % dims[d].size()];
      rest /= dims[d].size();
      at[d] = tap.index;
      if (tap.weight) weight = weight ? b.CreateFMul(weight, tap.weight) : tap.weight;
    }
    llvm::Value* v = e.element(x, at);
    if (!weight) return v;  // nearest (or no dim resized): the element itself
    llvm::Value* term = b.CreateFMul(weight, b.CreateFPExt(v, b.getDoubleTy()));
    sum = sum ? reassoc_fadd(b, sum, term) : term;
  }
  return b.CreateFPTrunc(sum, element_type(e.context(), e.dtype(x)));
}

}  // namespace

extern const Lowering kResizeLowering;
const Lowering kResizeLowering{.why_not = why_not_resize, .generate = generate_resize};

}  // namespace sgraph::ops
