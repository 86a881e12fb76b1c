# tessel - the two commands a new user needs:
#   make run    install what is missing, build (Release), run the default experiment on a real model
#   make test   same set-up, then every test (ctest)
BUILD_DIR ?= build
JOBS ?= 2
TESSEL := $(BUILD_DIR)/bin/tessel

.PHONY: all deps models configure build run test bench format clean

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

bench: build models
	@for b in $(BUILD_DIR)/bin/bench_*; do echo "== $$b"; $$b; done

format:
	@find compiler npu_model isa simulator passes tests benchmarks -name '*.cpp' -o -name '*.h' \
	  | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
