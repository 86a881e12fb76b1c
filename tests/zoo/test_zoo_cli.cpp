// `tessel zoo`: the command as main() wires it (add_zoo_command), its output files and errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "compiler/driver/cli.h"
#include "tests/zoo/zoo_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Result {
  int code = -1;
  std::string out, err;
};

/// Parses `tessel zoo ARGS...` with the registered subcommand and runs it as main() does
/// (a CLI11 parse error exits 2). Output of the command goes to std::cout/cerr; captured here.
Result run_zoo(std::vector<std::string> args) {
  CLI::App app{"tessel"};
  app.require_subcommand(1);
  const driver::Command cmd = driver::add_zoo_command(app);
  args.insert(args.begin(), "zoo");
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  Result r;
  std::stringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  try {
    app.parse(reversed);
    r.code = cmd.run();
  } catch (const CLI::ParseError& e) {
    r.code = app.exit(e, err, err) == 0 ? 0 : 2;
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

#define EXPECT_CONTAINS(haystack, needle)                                                         \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n" \
                                                        << (haystack)

TEST(ZooCli, WritesTheModelWithBatchAndSeed) {
  const fs::path d = fresh_dir("zoo_write");
  const fs::path file = d / "mbv2.onnx";
  Result r = run_zoo({"mobilenetv2", "-o", file.string(), "--batch", "2", "--seed", "5"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // The file holds exactly the builder's bytes for these options.
  const std::string bytes = slurp(file);
  EXPECT_TRUE(bytes == zoo::serialize_model(zoo::build_zoo_model("mobilenetv2", [] {
                zoo::ZooOptions o;
                o.batch = 2;
                o.seed = 5;
                return o;
              }())));
  auto g = frontend::import_onnx_bytes(bytes, file.string());
  EXPECT_EQ(g->inputs[0]->shape, (Shape{2, 3, 224, 224}));
  EXPECT_EQ(g->outputs[0]->shape, (Shape{2, 1000}));
  EXPECT_CONTAINS(r.out, "input 2x3x224x224 -> logits 2x1000");
  EXPECT_CONTAINS(r.out, "3,504,872 parameters");
  EXPECT_CONTAINS(r.out, "601,548,544 MACs");  // 2 x 300,774,272
  EXPECT_CONTAINS(r.out, "seed 5");
  // Only the model is left in the directory (the temporary file was renamed).
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator{}), 1);
}

TEST(ZooCli, MissingDirectoryFailsCleanly) {
  const fs::path d = fresh_dir("zoo_missing");
  const fs::path file = d / "no_such_dir" / "r18.onnx";
  Result r = run_zoo({"resnet18", "-o", file.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "error: ");
  EXPECT_CONTAINS(r.err, "does not exist");
  EXPECT_CONTAINS(r.err, (d / "no_such_dir").string());
  EXPECT_TRUE(fs::is_empty(d)) << "something was written";
}

TEST(ZooCli, UnknownNameListsTheValidOnes) {
  const fs::path d = fresh_dir("zoo_unknown");
  Result r = run_zoo({"vgg16", "-o", (d / "x.onnx").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "unknown model 'vgg16'");
  EXPECT_CONTAINS(r.err, "resnet18, resnet50, mobilenetv2, bert_layer");
  EXPECT_TRUE(fs::is_empty(d));
}

TEST(ZooCli, MissingOutputOrNameIsAnError) {
  Result r = run_zoo({"resnet18"});
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "-o FILE.onnx");
  r = run_zoo({});
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--list");
  r = run_zoo({"--list", "resnet18"});
  EXPECT_EQ(r.code, 2);
}

TEST(ZooCli, BadBatchIsAParseError) {
  const fs::path d = fresh_dir("zoo_batch");
  for (const char* b : {"0", "-1", "4097", "two"}) {
    Result r = run_zoo({"resnet18", "-o", (d / "x.onnx").string(), "--batch", b});
    EXPECT_EQ(r.code, 2) << b;
    EXPECT_CONTAINS(r.err, "--batch") << b;
  }
  EXPECT_TRUE(fs::is_empty(d));
}

TEST(ZooCli, ListPrintsNamesParametersAndMacs) {
  Result r = run_zoo({"--list"});
  ASSERT_EQ(r.code, 0) << r.err;
  // The counts tests/zoo/test_zoo_models.cpp derives.
  for (const char* s : {"resnet18", "11,689,512", "1,814,073,344", "resnet50", "25,557,032",
                        "4,089,184,256", "mobilenetv2", "3,504,872", "300,774,272", "bert_layer",
                        "7,087,872", "931,135,488", "hidden_states 1x128x768"})
    EXPECT_CONTAINS(r.out, s);
}

}  // namespace
}  // namespace tessel::testing
