# Quick start: `make demo` (the main job) and `make test` (the whole suite).
# Each installs missing Debian packages, configures (Release, Ninja) and builds.

BUILD_DIR ?= build
CMAKE_ARGS ?=
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all bootstrap configure build demo test bench clean

all: build

bootstrap:
	@scripts/bootstrap

$(BUILD_DIR)/build.ninja: | bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

configure: bootstrap $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo builds only the command line it runs.
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target pln_cli
	$(BUILD_DIR)/apps/pln demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target pln_bench
	$(BUILD_DIR)/bench/pln_bench

clean:
	rm -rf $(BUILD_DIR)
