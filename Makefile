# tessel - the two commands a new user needs:
#   make run    install what is missing, build (Release), run the default experiment on a real model
#   make test   same set-up, then every test (ctest)
# and the checks CI adds (docs/testing.md):
#   make test-sanitize   every test again in an ASan + UBSan build (build-sanitize/); with
#                        SANITIZE_TESTS="test_isa test_simulator ..." only those executables (CI)
#   make test-fuzz       each libFuzzer target for a fixed number of executions (build-fuzz/)
#   make fuzz            only build the libFuzzer targets (build-fuzz/bin/fuzz_*)
BUILD_DIR ?= build
SANITIZE_DIR ?= build-sanitize
FUZZ_DIR ?= build-fuzz
JOBS ?= 2
TESSEL := $(BUILD_DIR)/bin/tessel

.PHONY: all deps models configure build run test bench format clean test-sanitize fuzz test-fuzz

all: build

deps:
	@scripts/install_deps.sh

models:
	@scripts/fetch_models.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build models
	$(TESSEL) run experiments/quickstart.yaml

test: build models
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# -O1 with line tables only (-g1): half the compile time of -O2 -g (docs/testing.md, measured),
# tests fast enough for CI, reports with file:line. SystemC is built from Debian's source with ASan
# fiber annotations (scripts/systemc/build_asan.sh): Debian's libsystemc hides its coroutine stack
# switches from ASan (docs/testing.md).
SANITIZE_FLAGS := -O1 -g1 -DNDEBUG
SANITIZE_TESTS ?=
test-sanitize: deps models
	@JOBS=$(JOBS) scripts/systemc/build_asan.sh $(SANITIZE_DIR)/systemc
	@cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)" \
	  -DTESSEL_SYSTEMC_PREFIX=$(abspath $(SANITIZE_DIR))/systemc > /dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS) $(if $(SANITIZE_TESTS),--target $(SANITIZE_TESTS))
ifeq ($(SANITIZE_TESTS),)
	UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $(JOBS)
else
	@for t in $(SANITIZE_TESTS); do echo "== $$t (ASan + UBSan)"; \
	  UBSAN_OPTIONS=print_stacktrace=1 TESSEL_CACHE_DIR= $(SANITIZE_DIR)/bin/$$t --gtest_brief=1 || exit 1; done
endif

fuzz: deps
	@cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 > /dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS)

test-fuzz: fuzz models
	UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(FUZZ_DIR) --output-on-failure -j $(JOBS)

bench: build models
	@for b in $(BUILD_DIR)/bin/bench_*; do echo "== $$b"; $$b; done

format:
	@find compiler npu_model isa simulator passes tests benchmarks -name '*.cpp' -o -name '*.h' \
	  | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
