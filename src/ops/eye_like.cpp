// EyeLike(x) {dtype, k = 0}: a 2-D tensor of x's shape with ones on the k-th diagonal (k > 0 above
// the main one, k < 0 below) and zeros elsewhere; of dtype `dtype` (an ONNX code), else x's.
#include <algorithm>

#include "ops/op.h"

namespace sgraph::ops {

extern const OpDef kEyeLike;
const OpDef kEyeLike{
    "EyeLike",
    1,
    1,
    1,
    1,
    [](TypeCtx& c) {
      c.out[0] =
          c.attrs().has("dtype") ? dtype_from_onnx_code(c.attrs().get_int("dtype")) : c.in[0];
    },
    [](ShapeCtx& c) {
      SG_CHECK(c.rank(0) == 2) << "EyeLike input must be 2-D, got " << shape_str(c.shape(0));
      shapes_same_as_input0(c);
    },
    [](KernelCtx& c) {
      const int64_t rows = c.out[0].dim(0), cols = c.out[0].dim(1);
      const int64_t k = c.attrs().get_int("k", 0);
      visit_dtype(c.out[0].dtype(), [&]<class T>() {
        T* y = c.out[0].data<T>();
        std::fill(y, y + rows * cols, T(0));
        // Row i holds its one at column i + k when that is inside; compared so as not to overflow.
        for (int64_t i = 0; i < rows; ++i)
          if (k >= -i && k < cols - i) y[i * cols + i + k] = T(1);
      });
    }};

}  // namespace sgraph::ops
