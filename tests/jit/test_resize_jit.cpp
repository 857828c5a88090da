// Resize inside regions: nearest, linear and cubic, up and down, against the interpreter; which
// Resize nodes stay interpreted, and why.
#include <string>
#include <vector>

#include "jit/region_test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace sgraph::test::region;

namespace {

// Neg(x) -> Resize(scales or sizes) -> Relu, as one region.
Graph resize_graph(DType t, const Shape& in, Attributes attrs, const std::vector<float>& scales,
                   const std::vector<int64_t>& sizes) {
  GraphBuilder b;
  ValueId x = b.neg(b.input("x", t, to_dims(in)));
  ValueId roi = kNoValue;
  ValueId sc = scales.empty()
                   ? kNoValue
                   : b.constant("scales",
                                Tensor::from<float>({static_cast<int64_t>(scales.size())}, scales));
  ValueId sz = sizes.empty() ? kNoValue : b.constant("sizes", ints(sizes));
  ValueId y = b.node(OpKind::Resize, {x, roi, sc, sz}, std::move(attrs))[0];
  b.output(b.relu(y), "y");
  return b.build();
}

}  // namespace

TEST_CASE(
    "JIT Resize: nearest up and down, every rounding and coordinate mode, vs the interpreter") {
  const char* coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                          "tf_half_pixel_for_nn"};
  const char* roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const Shape in = {1, 3, 5, 7};
  const Tensor x = random_f32(in, 1);
  for (const char* coord : coords)
    for (const char* rounding : roundings)
      for (const std::vector<float>& s :
           {std::vector<float>{1, 1, 2, 2}, {1, 1, 0.5f, 0.6f}, {1, 1, 1.7f, 3}}) {
        INFO(coord << " " << rounding << " scales " << s[2] << " " << s[3]);
        check_region_same(resize_graph(DType::f32, in,
                                       {{"mode", std::string("nearest")},
                                        {"coordinate_transformation_mode", std::string(coord)},
                                        {"nearest_mode", std::string(rounding)}},
                                       s, {}),
                          {x});
      }
}

TEST_CASE("JIT Resize: nearest of an integer tensor, by sizes") {
  const Shape in = {2, 3, 4};
  const Tensor x = iota<int64_t>(in, -7);
  GraphBuilder b;
  ValueId v = b.input("x", DType::i64, to_dims(in));
  ValueId y = b.node(OpKind::Resize, {v, kNoValue, kNoValue, b.constant("sizes", ints({2, 6, 9}))},
                     {{"mode", std::string("nearest")}})[0];
  b.output(b.add(y, y), "y");
  check_region_same(b.build(), {x});
}

TEST_CASE("JIT Resize: linear and cubic, up and down, vs the interpreter") {
  const Shape in = {2, 2, 6, 5};
  for (DType t : {DType::f32, DType::f64}) {
    const Tensor x = t == DType::f32 ? random_f32(in, 2) : random_f64(in, 2);
    for (const char* mode : {"linear", "cubic"})
      for (const char* coord : {"half_pixel", "align_corners", "asymmetric"})
        for (const std::vector<float>& s :
             {std::vector<float>{1, 1, 2, 2}, {1, 1, 0.5f, 0.8f}, {1, 1, 1.5f, 1}}) {
          INFO(dtype_name(t) << " " << mode << " " << coord << " scales " << s[2] << " " << s[3]);
          Attributes a{{"mode", std::string(mode)},
                       {"coordinate_transformation_mode", std::string(coord)}};
          if (std::string(mode) == "cubic") a.set("exclude_outside", int64_t{1});
          check_region(resize_graph(t, in, a, s, {}), {x}, 1e-5, 1e-6);
        }
  }
}

TEST_CASE("JIT Resize: what stays interpreted") {
  const Shape in = {1, 1, 4, 4};
  const auto why = [](const Graph& g) { return why_not_compilable(g, whole_graph(g)); };
  // scales computed at run time: the taps are not known when compiling
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, to_dims(in));
  ValueId s = b.input("s", DType::f32, {4});
  b.output(b.node(OpKind::Resize, {x, kNoValue, s}, {{"mode", std::string("nearest")}})[0], "y");
  CHECK(test::contains(why(b.build()), "its scales input is not a constant"));
  CHECK(test::contains(
      why(resize_graph(DType::f32, in, {{"mode", std::string("linear")}, {"antialias", int64_t{1}}},
                       {1, 1, 0.5f, 0.5f}, {})),
      "antialias"));
  GraphBuilder c;
  ValueId cx = c.input("x", DType::f32, to_dims(in));
  ValueId roi = c.constant("roi", Tensor::from<float>({8}, {0, 0, 0.1f, 0.2f, 1, 1, 0.8f, 0.9f}));
  c.output(c.node(OpKind::Resize, {cx, roi, kNoValue, c.constant("sizes", ints({1, 1, 3, 3}))},
                  {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}})[0],
           "y");
  CHECK(test::contains(why(c.build()), "tf_crop_and_resize"));
}
