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

// Input i's value when present and non-empty, else nullptr (why_not_resize checked it is a
// constant).
const Tensor* given(const Graph& g, const Node& n, size_t i) {
  const Tensor* t = constant_input(g, n, i);
  return t && t->numel() > 0 ? t : nullptr;
}

ResizeParams params(const Graph& g, const Node& n, const Shape& in) {
  return resize_params(n.attrs, in, given(g, n, 1), given(g, n, 2), given(g, n, 3));
}

std::string why_not_resize(const Graph& g, const Node& n) {
  const char* names[] = {"roi", "scales", "sizes"};
  for (size_t i = 1; i <= 3; ++i)
    if (std::string s = need_constant(g, n, i, names[i - 1]); !s.empty()) return s;
  if (n.attrs.get_int("antialias", 0) != 0 && n.attrs.get_string("mode", "nearest") != "nearest")
    return "antialias";
  if (n.attrs.get_string("coordinate_transformation_mode", "") == "tf_crop_and_resize")
    return "tf_crop_and_resize";
  return "";
}

// One dim's taps at output index o: (input index, weight) pairs; weight nullptr means 1.
struct Tap {
  llvm::Value* index;
  llvm::Value* weight;
};

std::vector<Tap> taps(Emitter& e, const ResizeTable& t, int64_t in, llvm::Value* o) {
  llvm::IRBuilderBase& b = e.b;
  if (t.identity) return {{o, nullptr}};
  const int64_t out = static_cast<int64_t>(t.begin.size()) - 1;
  int64_t width = 0;
  for (int64_t i = 0; i < out; ++i) width = std::max(width, t.begin[i + 1] - t.begin[i]);
  if (width == 1 && std::all_of(t.w.begin(), t.w.end(), [](double w) { return w == 1.0; })) {
    // Nearest: upsampling by an integer factor f reads o / f.
    const int64_t f = in > 0 && out % in == 0 ? out / in : 0;
    bool by_factor = f > 0;
    for (int64_t i = 0; by_factor && i < out; ++i) by_factor = t.idx[i] == i / f;
    if (by_factor) return {{f == 1 ? o : b.CreateUDiv(o, e.i64(f)), nullptr}};
    llvm::Value* table = e.i64_array(t.idx);
    return {{b.CreateLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), table, o)), nullptr}};
  }
  Ints idx(out * width, 0);
  std::vector<double> w(out * width, 0.0);
  for (int64_t i = 0; i < out; ++i)
    for (int64_t k = t.begin[i]; k < t.begin[i + 1]; ++k) {
      idx[i * width + k - t.begin[i]] = t.idx[k];
      w[i * width + k - t.begin[i]] = t.w[k];
    }
  for (int64_t i = 0; i < out; ++i)  // padding taps repeat a real index, so loads stay in bounds
    for (int64_t k = t.begin[i + 1] - t.begin[i]; k < width; ++k)
      idx[i * width + k] = idx[i * width];
  llvm::Value* idx_table = e.i64_array(idx);
  llvm::Value* w_table = e.f64_array(w);
  std::vector<Tap> r;
  for (int64_t k = 0; k < width; ++k) {
    llvm::Value* at =
        b.CreateAdd(b.CreateMul(o, e.i64(width), "", true, true), e.i64(k), "", true, true);
    r.push_back({b.CreateLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), idx_table, at)),
                 b.CreateLoad(b.getDoubleTy(), b.CreateInBoundsGEP(b.getDoubleTy(), w_table, at))});
  }
  return r;
}

llvm::Value* generate_resize(Emitter& e, const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const Shape& in = e.shape(x);
  const Shape& out = e.shape(n.outputs[0]);
  const ResizeParams p = params(e.graph, n, in);
  SG_CHECK(p.out == out) << node_str(n) << ": output shape " << shape_str(out)
                         << " is not the resize of " << shape_str(in) << " (" << shape_str(p.out)
                         << ")";
  std::vector<std::vector<Tap>> dims;
  size_t combos = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    dims.push_back(taps(e, p.tables[d], in[d], idx[d]));
    combos *= dims.back().size();
  }
  SG_CHECK(combos <= 256) << node_str(n) << ": " << combos << " taps per output element";
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* sum = nullptr;
  for (size_t c = 0; c < combos; ++c) {
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
