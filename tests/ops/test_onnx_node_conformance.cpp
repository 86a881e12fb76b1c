// ONNX backend conformance of the reference kernels: every case of the ONNX node test suite
// (/usr/share/libonnx-testdata/data/node/<case>/model.onnx + test_data_set_N/{input,output}_K.pb)
// is one parameterised test. A case is imported with tessel::frontend::import_onnx_bytes, run
// with tessel::ops::run_reference and every output compared with the expected one.
//
// Tolerance: the ONNX backend test default (onnx/backend/test/runner: rtol 1e-3, atol 1e-7,
// numpy.testing.assert_allclose semantics): |actual - expected| <= 1e-7 + 1e-3 * |expected|, NaN
// only where NaN is expected; integer and bool outputs must be equal; dtype and shape must match.
//
// Harness adaptations (each keeps the op's semantics unchanged):
//  * Inputs an op needs at compile time (Reshape's shape, Slice's starts/ends/axes/steps, the
//    values of data-dependent ops such as NonZero's input; see ops::shape_input_slots) are graph
//    inputs in many cases. tessel compiles static shapes, so a graph input that such a slot depends
//    on (directly or through other nodes, e.g. Size -> Cast -> Range) is turned into an initializer
//    holding the test data set's value, as a deployment does when it binds shapes.
//  * The frontend accepts default-domain opsets >= 7. Models declaring opset 1..6 whose ops all
//    have the same semantics in opset 7..17 (only type constraints changed; see
//    frontend::raise_opset_to_7_when_unchanged) are imported with the declared opset raised to 7.
//  * Upsample counts as supported: the frontend rewrites it into Resize.
//
// Expectations: a case whose ops are all registered must pass, unless it is listed in
// kExpectedUnsupported with the reason; such a case must fail with tessel::Unsupported (so the
// list stays accurate: a case that starts passing, or fails differently, fails the test). A case
// with an op tessel does not register is skipped only when kExpectedSkips lists it with that op;
// an unlisted skip fails, and so does a listed case that no longer skips for that op (remove or
// update its line). A missing data directory fails (NodeSuite.IsInstalled) instead of making the
// suite vanish. A summary (passing / total, per op) is printed after the run.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "compiler/frontend/backend_test_case.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "compiler/support/error.h"
#include "tests/test_compare.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

const char* kNodeDir = "/usr/share/libonnx-testdata/data/node";

// ONNX backend test default tolerance (onnx.backend.test runner).
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

/// Cases whose ops are registered but which tessel does not support, with the reason. Each must
/// fail with tessel::Unsupported.
const std::map<std::string, std::string> kExpectedUnsupported = {
    // dtypes tessel's Tensor does not have.
    {"test_cast_BFLOAT16_to_FLOAT", "bfloat16 tensors are not supported"},
    {"test_cast_FLOAT_to_BFLOAT16", "bfloat16 tensors are not supported"},
    {"test_castlike_BFLOAT16_to_FLOAT", "bfloat16 tensors are not supported"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "bfloat16 tensors are not supported"},
    {"test_castlike_FLOAT_to_BFLOAT16", "bfloat16 tensors are not supported"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "bfloat16 tensors are not supported"},
    {"test_cast_FLOAT_to_STRING", "string tensors are not supported"},
    {"test_cast_STRING_to_FLOAT", "string tensors are not supported"},
    {"test_castlike_FLOAT_to_STRING", "string tensors are not supported"},
    {"test_castlike_FLOAT_to_STRING_expanded", "string tensors are not supported"},
    {"test_castlike_STRING_to_FLOAT", "string tensors are not supported"},
    {"test_castlike_STRING_to_FLOAT_expanded", "string tensors are not supported"},
    // Training-only semantics.
    {"test_batchnorm_epsilon_training_mode", "BatchNormalization training_mode=1 (inference only)"},
    {"test_batchnorm_example_training_mode", "BatchNormalization training_mode=1 (inference only)"},
    {"test_training_dropout", "training-mode Dropout with ratio > 0 is random"},
    {"test_training_dropout_default", "training-mode Dropout with ratio > 0 is random"},
    {"test_training_dropout_default_mask", "training-mode Dropout with ratio > 0 is random"},
    {"test_training_dropout_mask", "training-mode Dropout with ratio > 0 is random"},
    // Non-tensor types.
    {"test_identity_opt", "optional types are not supported"},
    {"test_identity_sequence", "sequence types are not supported"},
    // Control flow over sequence and optional values (If, Loop themselves are supported).
    {"test_if_opt", "optional and sequence values are not supported"},
    {"test_if_seq", "sequence values are not supported"},
    {"test_loop13_seq", "sequence loop state is not supported"},
    {"test_loop16_seq_none", "optional sequence loop state is not supported"},
};

/// The installed suite (Debian libonnx-testdata 1.12): its case count, so that a partial install
/// or a package update shows up as such.
constexpr size_t kInstalledCases = 932;

/// Cases skipped because a node's op is not registered: case -> that op (the first unregistered
/// op of the model, in name order). Anything else that skips fails.
const std::map<std::string, std::string> kExpectedSkips = {
    {"test_adagrad", "ai.onnx.preview.training.Adagrad"},
    {"test_adagrad_multiple", "ai.onnx.preview.training.Adagrad"},
    {"test_adam", "ai.onnx.preview.training.Adam"},
    {"test_adam_multiple", "ai.onnx.preview.training.Adam"},
    {"test_bernoulli", "Bernoulli"},
    {"test_bernoulli_double", "Bernoulli"},
    {"test_bernoulli_double_expanded", "RandomUniformLike"},
    {"test_bernoulli_expanded", "RandomUniformLike"},
    {"test_bernoulli_seed", "Bernoulli"},
    {"test_bernoulli_seed_expanded", "RandomUniformLike"},
    {"test_momentum", "ai.onnx.preview.training.Momentum"},
    {"test_momentum_multiple", "ai.onnx.preview.training.Momentum"},
    {"test_nesterov_momentum", "ai.onnx.preview.training.Momentum"},
    {"test_optional_get_element", "OptionalGetElement"},
    {"test_optional_get_element_sequence", "OptionalGetElement"},
    {"test_optional_has_element", "OptionalHasElement"},
    {"test_optional_has_element_empty", "OptionalHasElement"},
    {"test_sequence_insert_at_back", "SequenceInsert"},
    {"test_sequence_insert_at_front", "SequenceInsert"},
    {"test_sequence_map_add_1_sequence_1_tensor", "SequenceMap"},
    {"test_sequence_map_add_1_sequence_1_tensor_expanded", "SequenceEmpty"},
    {"test_sequence_map_add_2_sequences", "SequenceMap"},
    {"test_sequence_map_add_2_sequences_expanded", "SequenceEmpty"},
    {"test_sequence_map_extract_shapes", "SequenceMap"},
    {"test_sequence_map_extract_shapes_expanded", "SequenceEmpty"},
    {"test_sequence_map_identity_1_sequence", "SequenceMap"},
    {"test_sequence_map_identity_1_sequence_1_tensor", "SequenceMap"},
    {"test_sequence_map_identity_1_sequence_1_tensor_expanded", "SequenceEmpty"},
    {"test_sequence_map_identity_1_sequence_expanded", "SequenceEmpty"},
    {"test_sequence_map_identity_2_sequences", "SequenceMap"},
    {"test_sequence_map_identity_2_sequences_expanded", "SequenceEmpty"},
    {"test_strnormalizer_export_monday_casesensintive_lower", "StringNormalizer"},
    {"test_strnormalizer_export_monday_casesensintive_nochangecase", "StringNormalizer"},
    {"test_strnormalizer_export_monday_casesensintive_upper", "StringNormalizer"},
    {"test_strnormalizer_export_monday_empty_output", "StringNormalizer"},
    {"test_strnormalizer_export_monday_insensintive_upper_twodim", "StringNormalizer"},
    {"test_strnormalizer_nostopwords_nochangecase", "StringNormalizer"},
};

struct Case {
  std::string name;
  fs::path dir;
};

/// gtest prints a parameter by its case name.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> list_cases() {
  std::vector<Case> cases;
  std::error_code ec;
  if (!fs::is_directory(kNodeDir, ec)) return cases;
  for (const auto& e : fs::directory_iterator(kNodeDir)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
      cases.push_back({e.path().filename().string(), e.path()});
  }
  std::sort(cases.begin(), cases.end(),
            [](const Case& a, const Case& b) { return a.name < b.name; });
  return cases;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error("cannot open " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Per-case outcome, collected for the summary.
enum class Outcome { pass, fail, unsupported_expected, skipped_op };

struct CaseResult {
  std::set<std::string> ops;
  Outcome outcome;
};

std::map<std::string, CaseResult>& results() {
  static std::map<std::string, CaseResult> r;
  return r;
}

/// Compares one output (tests/test_compare.h: NaN only where NaN is expected, equal infinities,
/// integers and bools exactly); returns "" when it matches, else a description of the mismatch.
std::string compare(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype())
    return fmt::format("dtype {} != expected {}", dtype_to_string(actual.dtype()),
                       dtype_to_string(expected.dtype()));
  if (actual.shape() != expected.shape())
    return fmt::format("shape {} != expected {}", shape_to_string(actual.shape()),
                       shape_to_string(expected.shape()));
  const bool is_float = dtype_is_float(expected.dtype());
  const testing::TensorDiff d = testing::diff_tensors(
      actual, expected, is_float ? kAtol : 0, is_float ? kRtol : 0, testing::Specials::must_match);
  return d.pass() ? "" : d.describe(is_float ? kAtol : 0, is_float ? kRtol : 0);
}

class OnnxNodeConformance : public ::testing::TestWithParam<Case> {};

TEST_P(OnnxNodeConformance, MatchesExpectedOutputs) {
  const Case& c = GetParam();
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(read_bytes(c.dir / "model.onnx"))) << c.dir;
  CaseResult& result = results()[c.name];
  result.outcome = Outcome::fail;

  // Skip when an op is not registered (or not in the default domain).
  for (const auto& n : model.graph().node()) {
    const std::string op = n.domain().empty() || n.domain() == "ai.onnx"
                               ? n.op_type()
                               : n.domain() + "." + n.op_type();
    result.ops.insert(op);
  }
  const auto listed_skip = kExpectedSkips.find(c.name);
  for (const std::string& op : result.ops) {
    if (ops::find_op(op) == nullptr && !frontend::rewritten_by_frontend(op)) {
      if (listed_skip == kExpectedSkips.end())
        FAIL() << "op " << op << " is not registered, and the case is not in kExpectedSkips";
      if (listed_skip->second != op)
        FAIL() << "kExpectedSkips lists the case as skipping for op " << listed_skip->second
               << ", but it skips for op " << op << ": update its line";
      result.outcome = Outcome::skipped_op;
      GTEST_SKIP() << "op " << op << " is not registered (listed in kExpectedSkips)";
    }
  }
  if (listed_skip != kExpectedSkips.end())
    FAIL() << "kExpectedSkips lists the case as skipping for op " << listed_skip->second
           << ", but every op of it is registered now: remove its line";

  frontend::raise_opset_to_7_when_unchanged(model, result.ops);
  // Graph inputs in order (input_K.pb is the K-th), and those shapes depend on: bound as
  // initializers.
  const frontend::BackendTestInputs inputs = frontend::backend_test_inputs(model);
  const std::vector<std::string>& input_names = inputs.input_names;
  const std::set<std::string>& bind = inputs.bind;

  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(c.dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  ASSERT_FALSE(sets.empty()) << "no test_data_set_* in " << c.dir;

  auto expected_unsupported = kExpectedUnsupported.find(c.name);
  try {
    for (const fs::path& set : sets) {
      onnx::ModelProto m = model;
      // Bind the compile-time inputs as initializers, import, then load the runtime inputs.
      std::vector<std::pair<std::string, fs::path>> runtime_inputs;
      for (size_t k = 0; k < input_names.size(); ++k) {
        const fs::path file = set / fmt::format("input_{}.pb", k);
        if (!fs::exists(file)) continue;  // an omitted optional input
        if (!bind.count(input_names[k])) {
          runtime_inputs.push_back({input_names[k], file});
          continue;
        }
        onnx::TensorProto t;
        ASSERT_TRUE(t.ParseFromString(read_bytes(file))) << file;
        t.set_name(input_names[k]);
        *m.mutable_graph()->add_initializer() = t;
        auto* inputs = m.mutable_graph()->mutable_input();
        for (int i = 0; i < inputs->size(); ++i)
          if (inputs->Get(i).name() == input_names[k]) {
            inputs->DeleteSubrange(i, 1);
            break;
          }
      }
      std::string bytes;
      ASSERT_TRUE(m.SerializeToString(&bytes));
      auto graph = frontend::import_onnx_bytes(bytes, (c.dir / "model.onnx").string());
      std::map<std::string, Tensor> feeds;
      for (const auto& [name, file] : runtime_inputs)
        feeds[name] = frontend::load_tensor_pb(file.string());
      const auto outputs = ops::run_reference(*graph, feeds);
      ASSERT_EQ(outputs.size(), static_cast<size_t>(m.graph().output_size()));
      for (int k = 0; k < m.graph().output_size(); ++k) {
        const std::string& name = m.graph().output(k).name();
        const Tensor expected =
            frontend::load_tensor_pb((set / fmt::format("output_{}.pb", k)).string());
        auto it = outputs.find(name);
        ASSERT_NE(it, outputs.end()) << "output " << name << " missing";
        const std::string diff = compare(it->second, expected);
        ASSERT_EQ(diff, "") << c.name << " " << set.filename().string() << " output " << k << " ("
                            << name << "): " << diff;
      }
    }
  } catch (const Unsupported& e) {
    if (expected_unsupported != kExpectedUnsupported.end()) {
      result.outcome = Outcome::unsupported_expected;
      SUCCEED() << "unsupported as expected (" << expected_unsupported->second << "): " << e.what();
      return;
    }
    FAIL() << "tessel::Unsupported: " << e.what();
  } catch (const std::exception& e) {
    FAIL() << "error: " << e.what();
  }
  if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) return;
  if (expected_unsupported != kExpectedUnsupported.end()) {
    FAIL() << "listed as unsupported (" << expected_unsupported->second
           << ") but it passes: remove it from kExpectedUnsupported";
  }
  result.outcome = Outcome::pass;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeConformance, ::testing::ValuesIn(list_cases()), case_name);

// Without the data the parameterised suite above has no instance (gtest then reports it as
// uninstantiated); this says why, and catches a partial install.
TEST(NodeSuite, IsInstalled) {
  ASSERT_TRUE(fs::is_directory(kNodeDir))
      << kNodeDir << " is missing: install libonnx-testdata (scripts/install_deps.sh)";
  EXPECT_EQ(list_cases().size(), kInstalledCases)
      << "cases under " << kNodeDir << " (a different libonnx-testdata? update kInstalledCases, "
      << "kExpectedSkips and kExpectedUnsupported together)";
}

// Every listed skip names an installed case (a renamed or removed case must leave the list).
TEST(NodeSuite, ExpectedSkipsAreInstalledCases) {
  std::set<std::string> installed;
  for (const Case& c : list_cases()) installed.insert(c.name);
  for (const auto& [name, op] : kExpectedSkips)
    EXPECT_TRUE(installed.count(name)) << name << " (kExpectedSkips) is not installed";
  for (const auto& [name, why] : kExpectedUnsupported)
    EXPECT_TRUE(installed.count(name)) << name << " (kExpectedUnsupported) is not installed";
}

/// Prints passing / total for the whole suite and per op after all tests ran.
class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto& r = results();
    if (r.empty()) return;
    struct Count {
      int pass = 0, unsupported = 0, fail = 0, skipped = 0;
    };
    std::map<std::string, Count> per_op;
    Count total;
    for (const auto& [name, cr] : r) {
      auto bump = [&](Count& c) {
        switch (cr.outcome) {
          case Outcome::pass:
            ++c.pass;
            break;
          case Outcome::unsupported_expected:
            ++c.unsupported;
            break;
          case Outcome::fail:
            ++c.fail;
            break;
          case Outcome::skipped_op:
            ++c.skipped;
            break;
        }
      };
      bump(total);
      for (const std::string& op : cr.ops) bump(per_op[op]);
    }
    const int n = static_cast<int>(r.size());
    fmt::print(
        "\n[conformance] ONNX node suite: {} / {} cases pass ({} expected-unsupported, {} "
        "failing, {} with an unregistered op)\n",
        total.pass, n, total.unsupported, total.fail, total.skipped);
    fmt::print(
        "[conformance] per op (cases containing the op): pass / total "
        "[unsupported, failing, skipped]\n");
    for (const auto& [op, c] : per_op) {
      const int t = c.pass + c.unsupported + c.fail + c.skipped;
      fmt::print("[conformance]   {:<28} {:>3} / {:<3} [{}, {}, {}]\n", op, c.pass, t,
                 c.unsupported, c.fail, c.skipped);
    }
  }
};

const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

}  // namespace
}  // namespace tessel
