// The fuzz targets' common shape (docs/testing.md, "Fuzzing").
//
// A target is a function from one input (bytes) to: accepted (true), rejected as bad input (it
// throws tessel::Error: the message names the file, line, key or node) or a finding (anything
// else: another exception, an InternalError, a broken round-trip property reported with
// fuzz_check, or a crash/leak/undefined behaviour caught by ASan/UBSan).
//
//   TESSEL_FUZZ_TARGET(hw_config) { ...; return true; }
//
// defines the target `hw_config`. The same source builds two ways:
//  - with TESSEL_LIBFUZZER (the fuzz build, `make fuzz`): LLVMFuzzerTestOneInput for libFuzzer,
//    one executable per target (fuzz_<name>); a finding prints its message and aborts, which
//    libFuzzer records as a crash with the input that caused it;
//  - otherwise (every other build, test_fuzz): the target registers itself by name and
//    tests/fuzz/test_fuzz_replay.cpp replays the seed corpus and the regression corpus of every
//    target through it, so each finding's input stays a test in `make test` and
//    `make test-sanitize`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "compiler/support/error.h"

namespace tessel::fuzz {

/// One target: the input's bytes -> true if accepted, false if rejected without an exception
/// (e.g. an input the target skips); throws tessel::Error for bad input.
using TargetFn = bool (*)(std::string_view data);

/// A broken property of an accepted input (e.g. a round trip that does not reproduce it): a bug.
class Finding : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws Finding with the fmt-formatted message when `cond` is false.
template <class... Args>
void fuzz_check(bool cond, fmt::format_string<Args...> format, Args&&... args) {
  if (!cond) throw Finding(fmt::format(format, std::forward<Args>(args)...));
}

/// Runs `step` (a step that must not fail on an accepted input, e.g. re-parsing printed IR) and
/// returns its result; a tessel::Error from it becomes a Finding naming `what`.
template <class F>
auto must_succeed(const char* what, F&& step) -> decltype(step()) {
  try {
    return step();
  } catch (const Error& e) {
    throw Finding(fmt::format("{} failed on an accepted input: {}", what, e.what()));
  }
}

/// How one input ended.
enum class Outcome { accepted, rejected, finding };

/// Runs `fn` on `data`: accepted/rejected, or finding with `message` set to what went wrong
/// (the exception's type and text).
inline Outcome run_target(TargetFn fn, std::string_view data, std::string& message) {
  try {
    return fn(data) ? Outcome::accepted : Outcome::rejected;
  } catch (const Error& e) {
    message = e.what();
    return Outcome::rejected;
  } catch (const Finding& e) {
    message = std::string("broken property: ") + e.what();
  } catch (const InternalError& e) {
    message = std::string("tessel::InternalError: ") + e.what();
  } catch (const std::exception& e) {
    message = std::string("unexpected exception (not tessel::Error): ") + e.what();
  } catch (...) {
    message = "unexpected exception of a non-std type";
  }
  return Outcome::finding;
}

/// Every target linked into this executable, by name (replay builds only).
inline std::map<std::string, TargetFn>& registry() {
  static std::map<std::string, TargetFn> targets;
  return targets;
}

inline bool register_target(const char* name, TargetFn fn) {
  registry()[name] = fn;
  return true;
}

}  // namespace tessel::fuzz

#ifdef TESSEL_LIBFUZZER
#include <cstdio>
#include <cstdlib>
#define TESSEL_FUZZ_DEFINE_ENTRY(name)                                                          \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {                     \
    std::string message;                                                                        \
    if (::tessel::fuzz::run_target(&tessel_fuzz_##name,                                         \
                                   std::string_view(reinterpret_cast<const char*>(data), size), \
                                   message) == ::tessel::fuzz::Outcome::finding) {              \
      std::fprintf(stderr, "fuzz target " #name ": %s\n", message.c_str());                     \
      std::abort();                                                                             \
    }                                                                                           \
    return 0;                                                                                   \
  }
#else
#define TESSEL_FUZZ_DEFINE_ENTRY(name)                        \
  [[maybe_unused]] static const bool tessel_fuzz_reg_##name = \
      ::tessel::fuzz::register_target(#name, &tessel_fuzz_##name);
#endif

/// Defines fuzz target `name`; the braces that follow are its body, with `std::string_view data`.
#define TESSEL_FUZZ_TARGET(name)                         \
  static bool tessel_fuzz_##name(std::string_view data); \
  TESSEL_FUZZ_DEFINE_ENTRY(name)                         \
  static bool tessel_fuzz_##name(std::string_view data)
