// sgraph/error.h — the one exception type sgraph throws, and the two check macros.
//
//   SG_CHECK(cond) << "message";   // bad user input: throws sgraph::Error
//   SG_ASSERT(cond) << "message";  // broken internal invariant: throws sgraph::Error marked
//   internal
//
// An Error carries the file, node and op it concerns; callers that know more context add it
// (`e.at_node(...)`) as the error passes through them, so a user sees e.g.
//   model.onnx: node 'fc1' (MatMul): inner dimensions differ: [2,3] x [4,5]
#pragma once

#include <exception>
#include <sstream>
#include <string>

namespace sgraph {

class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) { compose(); }

  const char* what() const noexcept override { return what_.c_str(); }
  const std::string& message() const { return message_; }
  const std::string& file() const { return file_; }
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }

  // Adds context unless a more precise one is already recorded.
  Error& at_node(std::string node, std::string op) {
    if (node_.empty() && op_.empty()) {
      node_ = std::move(node);
      op_ = std::move(op);
      compose();
    }
    return *this;
  }
  Error& in_file(std::string file) {
    if (file_.empty()) {
      file_ = std::move(file);
      compose();
    }
    return *this;
  }

 private:
  void compose() {
    what_.clear();
    if (!file_.empty()) what_ += file_ + ": ";
    if (!op_.empty()) what_ += "node '" + node_ + "' (" + op_ + "): ";
    what_ += message_;
  }
  std::string message_, file_, node_, op_, what_;
};

namespace detail {
class Message {
 public:
  template <class T>
  Message& operator<<(const T& v) {
    out_ << v;
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};
struct Raise {
  const char* prefix;
  [[noreturn]] void operator&(const Message& m) const { throw Error(prefix + m.str()); }
};
}  // namespace detail
}  // namespace sgraph

#define SG_CHECK(cond) (cond) ? (void)0 : ::sgraph::detail::Raise{""} & ::sgraph::detail::Message()
#define SG_FAIL() ::sgraph::detail::Raise{""} & ::sgraph::detail::Message()
#define SG_STRINGIFY2(x) #x
#define SG_STRINGIFY(x) SG_STRINGIFY2(x)
#define SG_ASSERT(cond)                                                          \
  (cond) ? (void)0                                                               \
         : ::sgraph::detail::Raise{"internal error (" __FILE__                   \
                                   ":" SG_STRINGIFY(__LINE__) "): " #cond " "} & \
               ::sgraph::detail::Message()
