// The digits training example as a reusable routine (examples/train_digits/main.cpp and
// `sgraph train` run it): loads the 8x8 digits data set, splits it 80/20 after a seeded shuffle,
// builds an MLP (64 -> hidden -> 10, ReLU, softmax cross-entropy) or a small CNN (two 3x3 convs
// with ReLU and 2x2 max pooling, then a linear layer) with sgraph's GraphBuilder and trains it
// with sgraph::Trainer in batches whose last one per epoch is smaller, printing the
// loss and the test accuracy per epoch and, at the end, what the Session compiled and what fell
// back to the interpreter.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sgraph/sgraph.h"
#include "sgraph/train.h"

namespace sgraph::examples {

struct Digits {
  Tensor x;                    // f32 [n, 64], pixels scaled to 0..1
  std::vector<int64_t> label;  // 0..9
};

// Reads the gzip'ed CSV (64 pixel columns, then the label). Throws sgraph::Error naming the file
// and line on bad input.
Digits load_digits(const std::string& path);

struct TrainConfig {
  std::string data;  // the .csv.gz
  int epochs = 30;
  int64_t batch = 64;
  std::string model = "mlp";  // or "cnn": [N,1,8,8] -> conv 3x3 to 8 channels, ReLU, max pool 2x2
                              // -> conv 3x3 to 16, ReLU, max pool 2x2 -> [N,64] -> 10
  int64_t hidden = 64;        // the MLP's hidden layer
  std::string optimizer = "adam";  // or "sgd" (momentum 0.9)
  double learning_rate = 0.01;
  bool jit = true;
  uint32_t seed = 7;
  bool progress = true;  // a progress bar per epoch (when stdout is a terminal)
  FILE* out = stdout;    // nullptr: silent
};

struct EpochStats {
  double loss = 0;           // mean training loss over the epoch's batches
  double test_accuracy = 0;  // on the held-out 20%
  double seconds = 0;        // the epoch's training steps, wall time
};

struct TrainResult {
  std::vector<EpochStats> epochs;
  Report report;  // the training-step Session's
  int64_t train_size = 0, test_size = 0;
};

TrainResult train_digits(const TrainConfig& config);

}  // namespace sgraph::examples
