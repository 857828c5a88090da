// `sgraph train [--model mlp|cnn] [--epochs N] [--batch N] [--hidden N] [--lr X]
//               [--optimizer adam|sgd] [--seed N] [--data FILE.csv.gz] [--no-jit]`: the digits
// training demo (examples/train_digits) on the bundled data: loss and test accuracy per epoch,
// then what stayed compiled and what fell back to the interpreter when the last batch of each
// epoch was smaller.
#include "cli.h"
#include "digits.h"

namespace sgraph::cli {

int cmd_train(const Args& args) {
  if (!args.positional.empty()) throw UsageError("train: takes no positional arguments");
  examples::TrainConfig c;
  c.data = SGRAPH_DIGITS_DATA;
  if (auto d = args.all("--data"); !d.empty()) c.data = d.back();
  c.epochs = static_cast<int>(args.integer("--epochs", c.epochs, 0));
  c.batch = args.integer("--batch", c.batch, 1);
  c.hidden = args.integer("--hidden", c.hidden, 1);
  c.seed = static_cast<uint32_t>(args.integer("--seed", c.seed, 0));
  c.learning_rate = args.number("--lr", c.learning_rate);
  if (auto m = args.all("--model"); !m.empty()) c.model = m.back();
  if (c.model != "mlp" && c.model != "cnn")
    throw UsageError("train: --model is mlp or cnn, got '" + c.model + "'");
  if (auto o = args.all("--optimizer"); !o.empty()) c.optimizer = o.back();
  if (c.optimizer != "adam" && c.optimizer != "sgd")
    throw UsageError("train: --optimizer is adam or sgd, got '" + c.optimizer + "'");
  c.jit = args.all("--no-jit").empty();
  examples::train_digits(c);
  return 0;
}

}  // namespace sgraph::cli
