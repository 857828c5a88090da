// Trains an MLP or a small CNN on the bundled 8x8 digits with sgraph's Trainer (autodiff, Adam,
// the JIT):
//   build/release/examples/train_digits [--model mlp|cnn] [--epochs N] [--batch N] [--hidden N]
//                                       [--lr X] [--optimizer adam|sgd] [--no-jit]
//                                       [--data FILE.csv.gz]
// The same routine runs as `sgraph train`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "digits.h"

int main(int argc, char** argv) {
  sgraph::examples::TrainConfig c;
  c.data = SGRAPH_DIGITS_DATA;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "train_digits: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model")
      c.model = value();
    else if (a == "--epochs")
      c.epochs = std::atoi(value().c_str());
    else if (a == "--batch")
      c.batch = std::atoll(value().c_str());
    else if (a == "--hidden")
      c.hidden = std::atoll(value().c_str());
    else if (a == "--lr")
      c.learning_rate = std::atof(value().c_str());
    else if (a == "--optimizer")
      c.optimizer = value();
    else if (a == "--data")
      c.data = value();
    else if (a == "--no-jit")
      c.jit = false;
    else {
      std::fprintf(stderr,
                   "usage: train_digits [--model mlp|cnn] [--epochs N] [--batch N] [--hidden N] "
                   "[--lr X] [--optimizer adam|sgd] [--no-jit] [--data FILE.csv.gz]\n");
      return 2;
    }
  }
  try {
    sgraph::examples::train_digits(c);
  } catch (const sgraph::Error& e) {
    std::fprintf(stderr, "train_digits: %s\n", e.what());
    return 1;
  }
  return 0;
}
