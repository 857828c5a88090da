// Builds y = relu(x + b) through the installed package and checks one value.
#include <sgraph/sgraph.h>

#include <cstdio>

int main() {
  using namespace sgraph;
  GraphBuilder b("consumer");
  ValueId x = b.input("x", DType::f32, {2});
  ValueId bias = b.constant("b", Tensor::from<float>({2}, {1.0f, -5.0f}));
  b.output(b.relu(b.add(x, bias)), "y");
  Session s(b.build());
  std::vector<Tensor> out = s.run({Tensor::from<float>({2}, {2.0f, 3.0f})});
  const float* y = out[0].data<float>();
  if (y[0] != 3.0f || y[1] != 0.0f) {
    std::printf("consumer: wrong result %g %g\n", y[0], y[1]);
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
