// Error types shared by every tessel component.
//
// tessel::Error is raised for bad user input (a malformed YAML key, an unsupported ONNX op, an
// unbound dynamic dimension, ...). Its message names the file, line, key or node and what was
// expected; the CLI prints it and exits with code 2. tessel::InternalError marks a broken invariant
// inside tessel (a bug), never a user mistake.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace tessel {

/// A user-facing error: bad input, an unsupported construct, a resource that does not fit.
/// The message is complete on its own (it names the file/line/key/node and what was expected).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An input tessel does not support (an op without a shape rule, kernel or lowering, an attribute
/// value outside what is implemented). Conformance runs report these as "unsupported", not "fail".
class Unsupported : public Error {
 public:
  using Error::Error;
};

/// A violated internal invariant (a bug in tessel, not in the input).
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws tessel::Error with an fmt-formatted message.
template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

/// Throws tessel::InternalError with an fmt-formatted message.
template <class... Args>
[[noreturn]] void internal_fail(fmt::format_string<Args...> format, Args&&... args) {
  throw InternalError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tessel

/// Checks an internal invariant; on failure throws tessel::InternalError naming the condition.
#define TESSEL_CHECK(cond, ...)                                                        \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::tessel::internal_fail("{}:{}: check '{}' failed: {}", __FILE__, __LINE__, #cond, \
                              ::fmt::format(__VA_ARGS__));                             \
  } while (0)
