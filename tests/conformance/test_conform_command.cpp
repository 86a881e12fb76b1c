// `tessel conform` and the conformance library (compiler/driver/conform.h) on small case
// directories built here: discovery, the four statuses, the tolerances, input binding, crash and
// timeout isolation, summary lines, JSON, Markdown, expected-results files and exit codes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "compiler/driver/cli.h"
#include "compiler/driver/conform.h"
#include "compiler/support/error.h"
#include "npu_model/hw_config.h"
#include "tests/frontend/onnx_builder.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using driver::ConformCase;
using driver::ConformOptions;
using driver::ConformResult;
using driver::ConformStatus;
using nlohmann::json;

const std::string kSrc = TESSEL_SOURCE_DIR;

#define EXPECT_CONTAINS(haystack, needle)                                                         \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n" \
                                                        << (haystack)

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) /
               (name + "_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Writes a case directory: model.onnx and test_data_set_0 with the given inputs and outputs.
void write_case(const fs::path& dir, const onnx::ModelProto& model,
                const std::vector<onnx::TensorProto>& inputs,
                const std::vector<onnx::TensorProto>& outputs) {
  write_bytes(dir / "model.onnx", serialize(model));
  for (size_t k = 0; k < inputs.size(); ++k)
    write_bytes(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"),
                inputs[k].SerializeAsString());
  for (size_t k = 0; k < outputs.size(); ++k)
    write_bytes(dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb"),
                outputs[k].SerializeAsString());
}

/// y = Relu(x), x: float [2, 3], in the given domain/op.
onnx::ModelProto unary_model(const std::string& op = "Relu", const std::string& domain = "",
                             int64_t opset = 17) {
  onnx::ModelProto m = make_model(opset);
  if (!domain.empty()) {
    auto* os = m.add_opset_import();
    os->set_domain(domain);
    os->set_version(1);
  }
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  add_output(m, "y");
  add_node(m, op, {"x"}, {"y"}, "n0")->set_domain(domain);
  return m;
}

const std::vector<float> kX = {-1.0f, 0.25f, 2.0f, -3.0f, 4.0f, 0.5f};
const std::vector<float> kRelu = {0.0f, 0.25f, 2.0f, 0.0f, 4.0f, 0.5f};  // max(x, 0)

/// A Relu case whose expected output has element 2 replaced by `y2` (correct: 2.0).
void write_relu_case(const fs::path& dir, float y2 = 2.0f) {
  std::vector<float> y = kRelu;
  y[2] = y2;
  write_case(dir, unary_model(), {float_tensor("x", {2, 3}, kX)}, {float_tensor("y", {2, 3}, y)});
}

/// Four cases in suiteA (pass, fail, unsupported, error) and one in suiteB/nested.
fs::path make_suites(const std::string& name) {
  const fs::path root = temp_dir(name);
  write_relu_case(root / "suiteA" / "case_pass");
  write_relu_case(root / "suiteA" / "case_fail", 2.5f);  // |2 - 2.5| = 0.5 > 1e-7 + 1e-3 * 2.5
  write_case(root / "suiteA" / "case_unsupported", unary_model("Frobnicate", "com.example"),
             {float_tensor("x", {2, 3}, kX)}, {float_tensor("y", {2, 3}, kRelu)});
  write_relu_case(root / "suiteA" / "case_error");
  write_bytes(root / "suiteA" / "case_error" / "model.onnx", "this is not a protobuf");
  write_relu_case(root / "suiteB" / "nested" / "case_b");
  // Not cases: a model without data sets, a data-set-like folder without a model.
  write_bytes(root / "suiteA" / "no_data" / "model.onnx", serialize(unary_model()));
  fs::create_directories(root / "suiteA" / "no_model" / "test_data_set_0");
  return root;
}

ConformCase case_at(const fs::path& dir) {
  return {dir.parent_path().filename().string(), dir.filename().string(), dir.string()};
}

ConformOptions ref_options(bool isolate) {
  ConformOptions o;
  o.isolate = isolate;
  o.timeout_seconds = 60;
  return o;
}

std::map<std::string, ConformResult> by_id(const std::vector<ConformResult>& rs) {
  std::map<std::string, ConformResult> m;
  for (const auto& r : rs) m[r.c.id()] = r;
  return m;
}

// ---- discovery ------------------------------------------------------------------------------

TEST(ConformDiscovery, FindsCaseDirectoriesRecursivelyAndNamesSuitesByTheirParent) {
  const fs::path root = make_suites("conform_find");
  const auto cases = driver::find_conform_cases({root.string()});
  std::vector<std::string> ids;
  for (const auto& c : cases) ids.push_back(c.id());
  // Sorted by suite, then name; no_data (no test_data_set_*) and no_model are not cases.
  EXPECT_EQ(ids, (std::vector<std::string>{"nested/case_b", "suiteA/case_error", "suiteA/case_fail",
                                           "suiteA/case_pass", "suiteA/case_unsupported"}));
  // A case directory given directly, twice (once with a trailing slash): listed once.
  const auto one = driver::find_conform_cases(
      {(root / "suiteA" / "case_pass").string(), (root / "suiteA" / "case_pass").string() + "/"});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id(), "suiteA/case_pass");
}

TEST(ConformDiscovery, MissingDirectoryIsAnError) {
  try {
    driver::find_conform_cases({"/nonexistent/conform_dir"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "/nonexistent/conform_dir: not a directory");
  }
}

// ---- statuses -------------------------------------------------------------------------------

void check_four_statuses(const std::map<std::string, ConformResult>& r) {
  const auto& pass = r.at("suiteA/case_pass");
  EXPECT_EQ(pass.status, ConformStatus::pass) << pass.message;
  EXPECT_EQ(pass.message, "");
  EXPECT_EQ(pass.ops, std::vector<std::string>{"Relu"});
  ASSERT_EQ(pass.outputs.size(), 1u);
  EXPECT_EQ(pass.outputs[0].name, "y");
  EXPECT_EQ(pass.outputs[0].data_set, "test_data_set_0");
  EXPECT_EQ(pass.outputs[0].max_abs_error, 0.0);  // Relu is exact in fp32
  EXPECT_DOUBLE_EQ(pass.outputs[0].atol, 1e-7);   // ONNX backend test default
  EXPECT_DOUBLE_EQ(pass.outputs[0].rtol, 1e-3);

  const auto& bad = r.at("suiteA/case_fail");
  EXPECT_EQ(bad.status, ConformStatus::fail);
  ASSERT_EQ(bad.outputs.size(), 1u);
  EXPECT_FALSE(bad.outputs[0].pass);
  EXPECT_DOUBLE_EQ(bad.outputs[0].max_abs_error, 0.5);        // |2 - 2.5|
  EXPECT_DOUBLE_EQ(bad.outputs[0].max_rel_error, 0.5 / 2.5);  // relative to the expected 2.5
  EXPECT_CONTAINS(bad.message, "output 0 'y' (test_data_set_0): max abs error 5.000e-01");
  EXPECT_CONTAINS(bad.message, "1 of 6 elements differ; first at index 2: 2 vs expected 2.5");

  const auto& un = r.at("suiteA/case_unsupported");
  EXPECT_EQ(un.status, ConformStatus::unsupported) << un.message;
  EXPECT_CONTAINS(un.message, "com.example");
  EXPECT_EQ(un.missing_op, "com.example.Frobnicate");
  EXPECT_TRUE(un.outputs.empty());

  const auto& err = r.at("suiteA/case_error");
  EXPECT_EQ(err.status, ConformStatus::error);
  EXPECT_CONTAINS(err.message, "model.onnx: not a valid ONNX model");
}

TEST(ConformRun, FourStatusesInProcess) {
  const fs::path root = make_suites("conform_inproc");
  const auto cases = driver::find_conform_cases({root.string()});
  check_four_statuses(by_id(driver::run_conform_cases(cases, ref_options(false))));
}

TEST(ConformRun, FourStatusesInChildProcessesWithTwoJobs) {
  const fs::path root = make_suites("conform_isolated");
  const auto cases = driver::find_conform_cases({root.string()});
  std::vector<std::string> seen;
  const auto results = driver::run_conform_cases(
      cases, ref_options(true), 2, [&](const ConformResult& r) { seen.push_back(r.c.id()); });
  ASSERT_EQ(results.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(results[i].c.id(), cases[i].id());  // order
  EXPECT_EQ(seen.size(), cases.size());  // on_result once per case
  check_four_statuses(by_id(results));
  EXPECT_GT(by_id(results).at("suiteA/case_pass").seconds, 0.0);
}

TEST(ConformRun, ToleranceIsTheOnnxBackendDefaultOnRef) {
  // allclose: |a - e| <= 1e-7 + 1e-3 |e|. Actual 2: expected 2.001 passes (0.001 <= 0.002001),
  // expected 2.003 fails (0.003 > 0.002003).
  const fs::path root = temp_dir("conform_tol");
  write_relu_case(root / "s" / "inside", 2.001f);
  write_relu_case(root / "s" / "outside", 2.003f);
  const auto r = by_id(
      driver::run_conform_cases(driver::find_conform_cases({root.string()}), ref_options(false)));
  EXPECT_EQ(r.at("s/inside").status, ConformStatus::pass) << r.at("s/inside").message;
  EXPECT_EQ(r.at("s/outside").status, ConformStatus::fail);
  EXPECT_NEAR(r.at("s/outside").outputs[0].max_abs_error, 0.003, 1e-6);
}

TEST(ConformRun, IntegerOutputsMustBeEqual) {
  // z = x + y in int64: 1000 + 1000 = 2000; an expected 2001 is within rtol 1e-3 of 2000 but an
  // integer output must be equal; a wrong dtype (int32) fails on ref too.
  const fs::path root = temp_dir("conform_int");
  auto write = [&](const std::string& name, const onnx::TensorProto& z) {
    onnx::ModelProto m = make_model(17);
    add_input(m, "x", onnx::TensorProto::INT64, {int64_t{1}});
    add_input(m, "y", onnx::TensorProto::INT64, {int64_t{1}});
    add_output(m, "z");
    add_node(m, "Add", {"x", "y"}, {"z"});
    write_case(root / "s" / name, m,
               {int64_tensor("x", {1}, {1000}), int64_tensor("y", {1}, {1000})}, {z});
  };
  write("equal", int64_tensor("z", {1}, {2000}));
  write("off_by_one", int64_tensor("z", {1}, {2001}));
  write("wrong_dtype", raw_tensor<int32_t>("z", onnx::TensorProto::INT32, {1}, {2000}));
  const auto r = by_id(
      driver::run_conform_cases(driver::find_conform_cases({root.string()}), ref_options(false)));
  EXPECT_EQ(r.at("s/equal").status, ConformStatus::pass) << r.at("s/equal").message;
  EXPECT_EQ(r.at("s/off_by_one").status, ConformStatus::fail);
  EXPECT_CONTAINS(r.at("s/off_by_one").message, "integer output: must be equal");
  EXPECT_EQ(r.at("s/wrong_dtype").status, ConformStatus::fail);
  EXPECT_CONTAINS(r.at("s/wrong_dtype").message, "dtype i64, expected i32");
}

TEST(ConformRun, ShapeInputsAreBoundAndOldOpsetsRaisedWhereSemanticsAreUnchanged) {
  const fs::path root = temp_dir("conform_inputs");
  // Reshape(x, shape) with shape a graph input: bound to its value (3, 2) at compile time.
  {
    onnx::ModelProto m = make_model(17);
    add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    add_input(m, "shape", onnx::TensorProto::INT64, {int64_t{2}});
    add_output(m, "y");
    add_node(m, "Reshape", {"x", "shape"}, {"y"});
    write_case(root / "s" / "reshape", m,
               {float_tensor("x", {2, 3}, kX), int64_tensor("shape", {2}, {3, 2})},
               {float_tensor("y", {3, 2}, kX)});
  }
  // Elu at opset 6 (same semantics since opset 1): imported as opset 7. Elu(x) = x for x > 0,
  // alpha (e^x - 1) otherwise (alpha = 1).
  {
    std::vector<float> y;
    for (float v : kX) y.push_back(v > 0 ? v : std::expm1(v));
    write_case(root / "s" / "elu_opset6", unary_model("Elu", "", 6),
               {float_tensor("x", {2, 3}, kX)}, {float_tensor("y", {2, 3}, y)});
  }
  // Relu at opset 5 is not raised (Relu is not in the list): the frontend refuses opsets below 6.
  write_case(root / "s" / "relu_opset5", unary_model("Relu", "", 5),
             {float_tensor("x", {2, 3}, kX)}, {float_tensor("y", {2, 3}, kRelu)});
  const auto r = by_id(
      driver::run_conform_cases(driver::find_conform_cases({root.string()}), ref_options(false)));
  EXPECT_EQ(r.at("s/reshape").status, ConformStatus::pass) << r.at("s/reshape").message;
  EXPECT_EQ(r.at("s/elu_opset6").status, ConformStatus::pass) << r.at("s/elu_opset6").message;
  EXPECT_EQ(r.at("s/relu_opset5").status, ConformStatus::unsupported);
  EXPECT_CONTAINS(r.at("s/relu_opset5").message, "opset 5");
}

TEST(ConformRun, ExceptionsBecomeErrors) {
  const fs::path root = temp_dir("conform_exc");
  write_relu_case(root / "s" / "c");
  ConformOptions o = ref_options(false);
  o.before_case = [](const ConformCase&) { throw std::runtime_error("boom"); };
  auto r = driver::run_conform_case(case_at(root / "s" / "c"), o);
  EXPECT_EQ(r.status, ConformStatus::error);
  EXPECT_EQ(r.message, "internal error (std::exception): boom");
  o.before_case = [](const ConformCase&) { internal_fail("invariant {}", 7); };
  r = driver::run_conform_case(case_at(root / "s" / "c"), o);
  EXPECT_EQ(r.status, ConformStatus::error);
  EXPECT_EQ(r.message, "internal error: invariant 7");
}

TEST(ConformRun, CrashInAChildIsAnErrorAndTheRunContinues) {
  const fs::path root = temp_dir("conform_crash");
  write_relu_case(root / "s" / "a_crashes");
  write_relu_case(root / "s" / "b_passes");
  ConformOptions o = ref_options(true);
  o.before_case = [](const ConformCase& c) {
    if (c.name == "a_crashes") {
      std::fprintf(stderr, "about to crash\n");
      std::raise(SIGSEGV);
    }
  };
  const auto r =
      by_id(driver::run_conform_cases(driver::find_conform_cases({root.string()}), o, 2));
  EXPECT_EQ(r.at("s/a_crashes").status, ConformStatus::error);
  EXPECT_CONTAINS(r.at("s/a_crashes").message, "crashed (signal 11");
  EXPECT_CONTAINS(r.at("s/a_crashes").message, "last output: about to crash");
  EXPECT_EQ(r.at("s/a_crashes").ops, std::vector<std::string>{"Relu"});  // read by the parent
  EXPECT_EQ(r.at("s/b_passes").status, ConformStatus::pass) << r.at("s/b_passes").message;
}

TEST(ConformRun, HangInAChildIsKilledAfterTheTimeout) {
  const fs::path root = temp_dir("conform_hang");
  write_relu_case(root / "s" / "hangs");
  ConformOptions o = ref_options(true);
  o.timeout_seconds = 0.5;
  // The child would sleep for an hour: that the run returns at all (ctest's timeout would stop a
  // hang) with this status and message is the behaviour; no wall-clock bound is asserted.
  o.before_case = [](const ConformCase&) { std::this_thread::sleep_for(std::chrono::hours(1)); };
  const auto r = driver::run_conform_cases(driver::find_conform_cases({root.string()}), o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, ConformStatus::error);
  EXPECT_CONTAINS(r[0].message, "timed out after 0.5 s (killed)");
  EXPECT_TRUE(r[0].outputs.empty());  // killed before it compared anything
}

TEST(ConformRun, NpuUsesTheDerivedNpuTolerance) {
  // On npu_4core the tolerance is driver::npu_tolerances of the case's graph and data
  // (compare.h). Relu of an fp32 graph input runs on the vector unit in fp32 (the mixed-precision
  // plan, compiler/backend/npu/precision.h) and rounds nothing (npu_roundings = 0), so the
  // derived bound is its floor, atol n = 2^-126 (fp32's smallest normal) and rtol 2u = 2^-23,
  // and the NPU's result is exact. An expected 2 + 2^-22 (one fp32 ulp above 2) is 2^-22 off,
  // inside 2^-126 + 2^-23 x (2 + 2^-22); an expected 2.02 is 1% off and outside.
  const fs::path root = temp_dir("conform_npu");
  write_relu_case(root / "s" / "exact");
  write_relu_case(root / "s" / "within", 2.0f + std::ldexp(1.0f, -22));
  write_relu_case(root / "s" / "outside", 2.02f);
  const npu::HwConfig hw = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml");
  ConformOptions o = ref_options(true);
  o.target = driver::Target::npu;
  o.hw = &hw;
  const auto r = by_id(driver::run_conform_cases(driver::find_conform_cases({root.string()}), o));
  ASSERT_EQ(r.at("s/exact").status, ConformStatus::pass) << r.at("s/exact").message;
  EXPECT_EQ(r.at("s/exact").outputs[0].max_abs_error, 0.0);
  EXPECT_EQ(r.at("s/exact").outputs[0].atol, std::ldexp(1.0, -126));
  EXPECT_EQ(r.at("s/exact").outputs[0].rtol, std::ldexp(1.0, -23));
  EXPECT_EQ(r.at("s/within").status, ConformStatus::pass) << r.at("s/within").message;
  EXPECT_EQ(r.at("s/outside").status, ConformStatus::fail);
  EXPECT_NEAR(r.at("s/outside").outputs[0].max_abs_error, 0.02, 1e-6);
}

// ---- reports --------------------------------------------------------------------------------

TEST(ConformReport, SummaryLine) {
  driver::ConformCounts c;
  c.pass = 865;
  c.fail = 0;
  c.unsupported = 52;
  c.error = 15;
  // 865 / 932 = 92.81%.
  EXPECT_EQ(driver::conform_summary_line("node", c),
            "node: 865 pass, 0 fail, 52 unsupported, 15 error (932 cases, 92.8% pass)");
  EXPECT_EQ(driver::conform_summary_line("empty", {}),
            "empty: 0 pass, 0 fail, 0 unsupported, 0 error (0 cases, 0.0% pass)");
}

TEST(ConformReport, JsonRoundTripsWithInfiniteErrorsAsNull) {
  ConformResult r;
  r.c = {"node", "test_x", "/d/node/test_x"};
  r.status = ConformStatus::fail;
  r.message = "m";
  r.ops = {"Add", "Mul"};
  r.seconds = 0.25;
  driver::ConformOutput o;
  o.data_set = "test_data_set_1";
  o.index = 1;
  o.name = "z";
  o.max_abs_error = INFINITY;
  o.max_rel_error = 0.5;
  o.atol = 1e-7;
  o.rtol = 1e-3;
  o.detail = "d";
  r.outputs = {o};
  const json j = driver::conform_result_json(r);
  for (const char* k : {"suite", "case", "dir", "status", "message", "ops", "seconds", "outputs"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["status"], "fail");
  EXPECT_TRUE(j["outputs"][0]["max_abs_error"].is_null());
  EXPECT_EQ(j["outputs"][0]["max_rel_error"], 0.5);
  const ConformResult back = driver::conform_result_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.c.id(), "node/test_x");
  EXPECT_EQ(back.status, ConformStatus::fail);
  EXPECT_EQ(back.ops, r.ops);
  ASSERT_EQ(back.outputs.size(), 1u);
  EXPECT_TRUE(std::isinf(back.outputs[0].max_abs_error));
  EXPECT_EQ(back.outputs[0].index, 1);
  EXPECT_THROW(driver::conform_result_from_json(json{{"suite", "x"}}), Error);
}

// ---- expected-results files ----------------------------------------------------------------

TEST(ConformExpected, ParsesAndRejectsMalformedLines) {
  const fs::path root = temp_dir("conform_expected");
  write_bytes(root / "ok.txt",
              "# header\n\nnode/test_a pass\nnode/test_b unsupported  # op X is not implemented\n");
  const auto e = driver::load_conform_expected((root / "ok.txt").string());
  EXPECT_EQ(e.status.size(), 2u);
  EXPECT_EQ(e.status.at("node/test_b"), ConformStatus::unsupported);
  EXPECT_EQ(e.reason.at("node/test_b"), "op X is not implemented");
  auto error_of = [&](const std::string& text) {
    write_bytes(root / "bad.txt", text);
    try {
      driver::load_conform_expected((root / "bad.txt").string());
    } catch (const Error& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  const std::string bad = (root / "bad.txt").string();
  EXPECT_CONTAINS(error_of("node/a pass\nnode/b passes\n"), bad + ":2: unknown status 'passes'");
  EXPECT_CONTAINS(error_of("node/a pass\nnode/a fail\n"),
                  bad + ":2: case 'node/a' is listed twice");
  EXPECT_CONTAINS(error_of("node/a\n"), bad + ":1: 'node/a' has no status");
  EXPECT_CONTAINS(error_of("test_a pass\n"),
                  bad + ":1: case 'test_a' must be written as SUITE/CASE");
  EXPECT_CONTAINS(error_of("node/a pass fail\n"), bad + ":1: unexpected 'fail'");
  EXPECT_THROW(driver::load_conform_expected((root / "missing.txt").string()), Error);
}

TEST(ConformExpected, ClassifiesChanges) {
  driver::ConformExpected e;
  e.source = "exp.txt";
  e.status = {{"s/p", ConformStatus::pass},
              {"s/u", ConformStatus::unsupported},
              {"s/f", ConformStatus::fail}};
  auto result = [](const std::string& name, ConformStatus st) {
    ConformResult r;
    r.c = {"s", name, "/d"};
    r.status = st;
    r.message = st == ConformStatus::pass ? "" : "why";
    return r;
  };
  using driver::ConformChange;
  EXPECT_EQ(driver::conform_change(e, result("p", ConformStatus::pass)), ConformChange::same);
  EXPECT_EQ(driver::conform_change(e, result("p", ConformStatus::fail)), ConformChange::regression);
  EXPECT_EQ(driver::conform_change(e, result("u", ConformStatus::fail)), ConformChange::regression);
  EXPECT_EQ(driver::conform_change(e, result("u", ConformStatus::pass)),
            ConformChange::improvement);
  EXPECT_EQ(driver::conform_change(e, result("f", ConformStatus::error)),
            ConformChange::regression);
  EXPECT_EQ(driver::conform_change(e, result("new", ConformStatus::pass)), ConformChange::new_case);
  EXPECT_EQ(driver::conform_change_text(e, result("p", ConformStatus::fail)),
            "regression: s/p expected pass, got fail (why)");
  EXPECT_CONTAINS(driver::conform_change_text(e, result("u", ConformStatus::pass)),
                  "improvement: s/u expected unsupported, got pass: record it in exp.txt");
}

// ---- the command ----------------------------------------------------------------------------

struct Cmd {
  int code = -1;
  std::string out, err;
};

Cmd conform(const driver::ConformArgs& args, const ConformOptions* base = nullptr) {
  std::ostringstream out, err;
  Cmd c;
  c.code = driver::cmd_conform(args, out, err, base);
  c.out = out.str();
  c.err = err.str();
  return c;
}

TEST(ConformCommand, ExitCodesSummaryJsonMarkdownAndExpectedFiles) {
  const fs::path root = make_suites("conform_cmd");
  driver::ConformArgs a;
  a.dirs = {(root / "suiteA" / "case_pass").string(),
            (root / "suiteA" / "case_unsupported").string(), (root / "suiteB").string()};
  a.jobs = 2;
  a.report_path = (root / "report.json").string();
  a.markdown_path = (root / "table.md").string();
  a.write_expected = (root / "expected.txt").string();
  // Only pass and unsupported: exit code 0.
  Cmd c = conform(a);
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  EXPECT_CONTAINS(c.out, "conform: 3 cases in 2 suites (nested, suiteA) on ref");
  EXPECT_CONTAINS(c.out, "nested: 1 pass, 0 fail, 0 unsupported, 0 error (1 cases, 100.0% pass)");
  EXPECT_CONTAINS(c.out, "suiteA: 1 pass, 0 fail, 1 unsupported, 0 error (2 cases, 50.0% pass)");
  EXPECT_CONTAINS(c.out, "all: 2 pass, 0 fail, 1 unsupported, 0 error (3 cases, 66.7% pass)");
  const json report = json::parse(slurp(root / "report.json"));
  EXPECT_EQ(report["command"], "conform");
  EXPECT_EQ(report["target"], "ref");
  EXPECT_EQ(report["summary"]["suiteA"]["unsupported"], 1);
  ASSERT_EQ(report["cases"].size(), 3u);
  for (const auto& cj : report["cases"])
    for (const char* k : {"suite", "case", "status", "message", "ops", "seconds", "outputs"})
      EXPECT_TRUE(cj.contains(k)) << k;
  const std::string md = slurp(root / "table.md");
  EXPECT_CONTAINS(md, "| suiteA | 2 | 1 | 0 | 1 | 0 | 50.0% |");
  EXPECT_CONTAINS(md,
                  "| op com.example.Frobnicate is not implemented | 1 | suiteA/case_unsupported |");
  const std::string exp = slurp(root / "expected.txt");
  EXPECT_CONTAINS(exp, "\nsuiteA/case_pass pass\n");
  EXPECT_CONTAINS(exp, "\nsuiteA/case_unsupported unsupported  # ");

  // The same run against the file it wrote: no difference, exit code 0.
  driver::ConformArgs same = a;
  same.report_path = same.markdown_path = same.write_expected = "";
  same.expected_path = (root / "expected.txt").string();
  c = conform(same);
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_CONTAINS(c.out, "0 differences");

  // A fail and an error: exit code 1, one line each.
  driver::ConformArgs all;
  all.dirs = {root.string()};
  c = conform(all);
  EXPECT_EQ(c.code, 1) << c.out << c.err;
  EXPECT_CONTAINS(c.out, "fail        suiteA/case_fail");
  EXPECT_CONTAINS(c.out, "error       suiteA/case_error");
  EXPECT_EQ(c.out.find("suiteA/case_pass"), std::string::npos);  // only with --verbose
  all.verbose = true;
  EXPECT_CONTAINS(conform(all).out, "pass        suiteA/case_pass");

  // All cases against the expected file of three: the two new ones (fail, error) are
  // differences, exit code 1.
  all.expected_path = (root / "expected.txt").string();
  c = conform(all);
  EXPECT_EQ(c.code, 1);
  EXPECT_CONTAINS(c.out, "compared with " + all.expected_path + ": 2 differences");
  EXPECT_CONTAINS(c.out, "new case: suiteA/case_fail");

  // An only-error run is exit code 1 as well.
  driver::ConformArgs err_only;
  err_only.dirs = {(root / "suiteA" / "case_error").string()};
  EXPECT_EQ(conform(err_only).code, 1);
}

TEST(ConformCommand, ACrashingCaseIsReportedAndTheRunGoesOn) {
  const fs::path root = make_suites("conform_cmd_crash");
  driver::ConformArgs a;
  a.dirs = {(root / "suiteA" / "case_pass").string(), (root / "suiteB").string()};
  ConformOptions base;
  base.before_case = [](const ConformCase& c) {
    if (c.name == "case_pass") std::abort();
  };
  const Cmd c = conform(a, &base);
  EXPECT_EQ(c.code, 1);
  EXPECT_CONTAINS(c.out, "error       suiteA/case_pass");
  EXPECT_CONTAINS(c.out, "crashed (signal 6");
  EXPECT_CONTAINS(c.out, "nested: 1 pass");
}

TEST(ConformCommand, UsageErrorsExitWithTwo) {
  const fs::path root = make_suites("conform_cmd_usage");
  auto code = [&](driver::ConformArgs a, const std::string& message) {
    if (a.dirs.empty()) a.dirs = {root.string()};
    const Cmd c = conform(a);
    EXPECT_CONTAINS(c.err, message);
    EXPECT_EQ(c.out, "");  // nothing ran
    return c.code;
  };
  driver::ConformArgs a;
  a.target = "tpu";
  EXPECT_EQ(code(a, "--target: unknown target 'tpu'"), 2);
  a = {};
  a.target = "npu";
  EXPECT_EQ(code(a, "--target npu needs --hw FILE"), 2);
  a = {};
  a.hw = kSrc + "/hw_configs/npu_4core.yaml";
  EXPECT_EQ(code(a, "--hw only applies to --target npu"), 2);
  a = {};
  a.jobs = 0;
  EXPECT_EQ(code(a, "--jobs 0"), 2);
  a = {};
  a.dirs = {(root / "nothing_here").string()};
  EXPECT_EQ(code(a, "nothing_here: not a directory"), 2);
  a = {};
  fs::create_directories(root / "empty");
  a.dirs = {(root / "empty").string()};
  EXPECT_EQ(code(a, "no case directory (model.onnx + test_data_set_N/) under"), 2);
  a = {};
  a.report_path = (root / "no_such_dir" / "r.json").string();
  EXPECT_EQ(code(a, "--report"), 2);
  a = {};
  a.expected_path = (root / "missing_expected.txt").string();
  EXPECT_EQ(code(a, "cannot open the expected-results file"), 2);
  EXPECT_FALSE(fs::exists(root / "no_such_dir"));
}

TEST(ConformCommand, RegistersAsASubcommand) {
  const fs::path root = make_suites("conform_cli");
  CLI::App app{"tessel"};
  driver::Command cmd = driver::add_conform_command(app);
  EXPECT_EQ(cmd.app->get_name(), "conform");
  // CLI11 parses a reversed argument vector.
  std::vector<std::string> argv = {
      "conform", (root / "suiteB").string(), "--target", "ref", "--jobs", "2", "--timeout", "60"};
  std::reverse(argv.begin(), argv.end());
  app.parse(argv);
  EXPECT_EQ(cmd.run(), 0);
}

}  // namespace
}  // namespace tessel::testing
