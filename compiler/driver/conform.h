// ONNX backend-test conformance runs: finding case directories, running each case on a target
// (the reference interpreter or the simulated NPU), classifying it, and reporting the results
// (summary lines, JSON, Markdown tables, expected-results files). Shared by `tessel conform`
// (cli_conform.cpp) and the conformance tests (tests/conformance).
//
// A case directory holds model.onnx and test_data_set_N/{input_K,output_K}.pb (the layout of
// onnx/backend/test/data, installed by the libonnx-testdata package under
// /usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}). Every data
// set of a case is run; the case ends as
//   pass         every output of every data set matches within the tolerance,
//   fail         some output differs (message: the first failing output, its max abs/rel error
//                and the tolerance),
//   unsupported  tessel::Unsupported was raised (message names the op / attribute / dtype),
//   error        anything else: tessel::Error, an internal error, a crash or a timeout of the
//                case's child process (the message says which) -- a bug in tessel or the case.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "npu_model/hw_config.h"

namespace tessel::driver {

/// One case directory. `suite` is the name of the directory that contains it (e.g. "node" for
/// .../data/node/test_abs), `name` its own directory name; "suite/name" identifies the case.
struct ConformCase {
  std::string suite;
  std::string name;
  std::string dir;
  std::string id() const { return suite + "/" + name; }
};

/// Finds every case directory (a directory holding model.onnx and at least one test_data_set_*
/// directory) under each root, recursively (a root may itself be a case directory). Sorted by
/// suite, then name; a case reached from two roots is listed once. Throws tessel::Error naming
/// the root when it is not a directory.
std::vector<ConformCase> find_conform_cases(const std::vector<std::string>& roots);

enum class ConformStatus { pass, fail, unsupported, error };
const char* conform_status_name(ConformStatus s);
/// "pass" / "fail" / "unsupported" / "error"; throws tessel::Error naming `context` otherwise.
ConformStatus parse_conform_status(const std::string& name, const std::string& context);

/// One output of one data set compared with its expected value. Passing needs equal shapes, equal
/// dtypes on the reference target (the NPU returns every output as fp32), NaN exactly where NaN is
/// expected, equal infinities, equality for integer and bool outputs, and for floats
/// |actual - expected| <= atol + rtol * |expected| per element (numpy.testing.assert_allclose).
struct ConformOutput {
  std::string data_set;      // "test_data_set_0"
  int index = 0;             // K of output_K.pb
  std::string name;          // graph output name
  double max_abs_error = 0;  // over finite elements; +inf for a NaN/inf mismatch
  double max_rel_error = 0;  // over elements with |expected| >= 1e-3 * max|expected| (compare.h)
  double atol = 0, rtol = 0;
  bool pass = false;
  std::string detail;  // why it failed: dtype/shape mismatch, or the first mismatching element
};

struct ConformResult {
  ConformCase c;
  ConformStatus status = ConformStatus::error;
  std::string message;           // empty for pass
  std::vector<std::string> ops;  // op types in the model ("domain.Op" outside ai.onnx)
  std::string missing_op;        // unsupported: an op tessel does not register, if that is why
  std::vector<ConformOutput> outputs;
  double seconds = 0;  // wall time of the case (all data sets, fork included)
};

struct ConformOptions {
  Target target = Target::ref;
  const npu::HwConfig* hw = nullptr;  // required for Target::npu
  /// Run each case in a forked child process, so that a crash or a hang of one case becomes an
  /// "error" result instead of ending the run. Off: in this process (for debugging).
  bool isolate = true;
  double timeout_seconds = 300;  // per case, isolated runs only
  /// Called in the child (isolated runs) or in-process right before a case runs. For tests that
  /// need a case to crash or hang; empty in normal use.
  std::function<void(const ConformCase&)> before_case;
  /// Called with every data set's imported graph before it runs (in the child for isolated
  /// runs): for tests that inspect the compiled form. An exception it throws ends the case as
  /// the run's would.
  std::function<void(const ConformCase&, const Graph&)> after_import;
};

/// Tolerance of the fp32 targets (ref, cpu): the ONNX backend test default (rtol 1e-3, atol 1e-7,
/// onnx/backend/test/runner). The npu's comes from the case's graph and data:
/// driver::npu_tolerances (compare.h), computed by run_conform_case.
Tolerance conform_tolerance(const ConformOptions& options, const Tensor& expected);
/// Tolerance of a gpu / gpu-emu run: fp32 (no tensor cores) -> the cpu target's; fp16 tensor
/// cores -> driver::gpu_tolerance(true, expected) over the finite elements (compare.h).
Tolerance conform_gpu_tolerance(bool fp16, const Tensor& expected);

/// Runs one case in the calling process. Never throws: tessel::Error, tessel::Unsupported and any
/// other std::exception become the result's status and message.
///
/// Input handling (as the ONNX node-conformance harness, tests/ops/test_onnx_node_conformance.cpp,
/// each keeping the op's semantics):
///  * a graph input that a compile-time input slot depends on (Reshape's shape, Slice's starts...,
///    the values of data-dependent ops such as NonZero; see conform.cpp) is turned into an
///    initializer holding the data set's value, as a deployment binds shapes;
///  * a model declaring default-domain opset 1..6 whose ops all kept their semantics since opset 1
///    (only type constraints changed) is imported as opset 7;
///  * the shapes of the data set's runtime inputs bind the model's dynamic dims;
///  * a missing input_K.pb is an omitted optional input.
ConformResult run_conform_case(const ConformCase& c, const ConformOptions& options);

/// Runs the cases, each in a forked child when options.isolate (at most `jobs` at a time), and
/// returns the results in the order of `cases`. `on_result` (if set) is called as each case ends.
/// A child that dies by a signal gives status error "crashed (signal N: NAME)" with the tail of
/// its output; one that runs past the timeout is killed and gives "timed out after S s".
std::vector<ConformResult> run_conform_cases(
    const std::vector<ConformCase>& cases, const ConformOptions& options, int jobs = 1,
    const std::function<void(const ConformResult&)>& on_result = {});

/// Counts of one suite.
struct ConformCounts {
  int pass = 0, fail = 0, unsupported = 0, error = 0;
  int total() const { return pass + fail + unsupported + error; }
};
/// Counts per suite, in suite order.
std::map<std::string, ConformCounts> conform_counts(const std::vector<ConformResult>& results);
/// "node: 865 pass, 0 fail, 52 unsupported, 15 error (932 cases, 92.8% pass)".
std::string conform_summary_line(const std::string& suite, const ConformCounts& counts);

/// JSON of one result: suite, case, dir, status, message, ops, missing_op, seconds, outputs
/// (data_set, index, name, max_abs_error, max_rel_error, atol, rtol, pass, detail; infinite
/// errors are written as null).
nlohmann::json conform_result_json(const ConformResult& r);
/// Parses conform_result_json's output back (the isolated child's reply). Throws tessel::Error.
ConformResult conform_result_from_json(const nlohmann::json& j);

/// The Markdown section of a run: per-suite table (cases, pass, fail, unsupported, error, pass %),
/// the unsupported reasons with their case counts, and every fail/error case with its ops and
/// message. `title` heads the section (e.g. "ref (reference interpreter)").
std::string conform_markdown(const std::string& title, const std::vector<ConformResult>& results);

// ---- expected results -------------------------------------------------------------------------

/// An expected-results file: one line per case, "suite/case status", optionally followed by
/// "# reason"; '#' lines and blank lines are comments.
struct ConformExpected {
  std::string source;                           // the file
  std::map<std::string, ConformStatus> status;  // by case id
  std::map<std::string, std::string> reason;    // by case id (the comment after '#', if any)
};
/// Reads an expected-results file. Throws tessel::Error naming the file and line on a malformed
/// line, an unknown status or a case listed twice.
ConformExpected load_conform_expected(const std::string& path);
/// The file text for `results` (sorted by case id); non-pass lines carry the message as reason.
/// `header` lines are written as '#' comments first.
std::string conform_expected_text(const std::vector<ConformResult>& results,
                                  const std::vector<std::string>& header);

/// How a result differs from its expectation.
enum class ConformChange { same, improvement, regression, new_case };
/// Ranks pass > unsupported > fail > error: a higher status than expected is an improvement (to be
/// recorded in the expected file), a lower one a regression. A wrong value (fail) ranks below a
/// refusal (unsupported).
ConformChange conform_change(const ConformExpected& expected, const ConformResult& r);
/// One line describing a change, e.g. "regression: node/test_abs expected pass, got fail (...)".
std::string conform_change_text(const ConformExpected& expected, const ConformResult& r);

// ---- the command -------------------------------------------------------------------------------

struct ConformArgs {
  std::vector<std::string> dirs;
  std::string target = "ref";
  std::string hw;
  std::vector<std::string> hw_set;
  std::string report_path;     // --report FILE.json
  std::string markdown_path;   // --markdown FILE
  std::string expected_path;   // --expected FILE: compare statuses with it
  std::string write_expected;  // --write-expected FILE: write this run's statuses
  int jobs = 1;
  double timeout_seconds = 300;
  bool in_process = false;  // --in-process: no child per case (debugging)
  bool verbose = false;     // one line per case
};

/// `tessel conform DIR... --target ref|npu`. Prints a line per failing/erroring case as it ends
/// (every case with --verbose) and a summary line per suite. Exit code: without --expected 0 when
/// every case is pass or unsupported, 1 when any case is fail or error; with --expected 0 when
/// every case has its expected status, 1 otherwise; 2 on a usage error (bad option, no case found,
/// unreadable expected file, unwritable output path).
int cmd_conform(const ConformArgs& args, std::ostream& out, std::ostream& err,
                const ConformOptions* base_options = nullptr);

}  // namespace tessel::driver
