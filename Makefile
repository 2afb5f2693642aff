# Quick start: `make demo` (the main job) and `make test` (the whole suite).
# Each installs missing Debian packages, configures (Release, Ninja) and builds.
# PyTorch 2.x: `make venv` (.venv/ with pip's torch and the package) and
# `make test-torch2` (the suites that depend on the torch, against that one, in
# build-torch2/).
# `make test-library`: the library alone (-DPLN_BUILD_APPS=OFF, in
# build-library/), built and tested without the experiments.
# `make test-sanitize`: everything again under AddressSanitizer and
# UndefinedBehaviorSanitizer (in build-sanitize/): the library's and the
# experiments' tests, the CUDA kernels on the CPU, the command-line tests and
# a smoke grid of every family through the sanitized `pln`.
# `make test-fuzz`: the readers of files from anyone (checkpoints, JSON and
# CSV records, --set values, the docs' table markers) fuzzed with libFuzzer
# (clang, in build-fuzz/) for a bounded time each.
# `make test-one-wheel`: the Python package built once against the oldest torch
# it serves (2.10, over LibTorch's stable ABI), then tested, without
# rebuilding, under the newest torch on the index with the newest releases of
# transformers, timm and the other packages the suites use (scripts/one-wheel).
# `make test-aarch64`: the library, its tests and `pln` cross-built for aarch64
# Linux (in build-aarch64/) against pip's torch aarch64 wheel, and run under
# qemu-aarch64 (scripts/aarch64-setup installs and downloads what it needs).

BUILD_DIR ?= build
CMAKE_ARGS ?=
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
VENV ?= .venv
TORCH2_BUILD_DIR ?= build-torch2
LIBRARY_BUILD_DIR ?= build-library
# ccache keys paths relative to the checkout, so that a second build directory
# (build-library/ beside build/) finds the objects the first one compiled, and
# caches the compilations that use the precompiled LibTorch header. Build
# directories sit one level under the checkout (ccache's paths are relative to
# the directory a compiler runs in), and every build names the compiler alike
# (ccache keys its name too): CMake takes CXX from the environment, and so does
# scikit-build-core for `make venv`, which would otherwise name the one of the
# interpreter's sysconfig.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime
export CXX
# Several sources a compilation (CMake's unity builds): build/ compiles in half
# the time (the experiments in 0.3x; 2 cores, ccache empty). UNITY=OFF for one
# source a compilation, say while editing one file of a large target.
UNITY ?= ON

.PHONY: all bootstrap configure build demo test test-library test-sanitize test-fuzz bench clean venv test-torch2 test-one-wheel \
        aarch64-setup test-aarch64

all: build

bootstrap:
	@scripts/bootstrap

$(BUILD_DIR)/build.ninja: | bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) $(CMAKE_ARGS)

configure: bootstrap $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo builds only the command line it runs.
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target pln_cli
	$(BUILD_DIR)/apps/pln demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# The library, its tests, benchmarks and examples without the experiments and
# the command line: the build must not need them. The Python suites and the
# installed copy take the same library in `make test`.
LIBRARY_CTEST_EXCLUDE ?= ^(python|install)$$
$(LIBRARY_BUILD_DIR)/build.ninja: | bootstrap
	cmake -S . -B $(LIBRARY_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) \
	  -DPLN_BUILD_APPS=OFF $(CMAKE_ARGS)

test-library: bootstrap $(LIBRARY_BUILD_DIR)/build.ninja
	cmake --build $(LIBRARY_BUILD_DIR) -j $(JOBS)
	cd $(LIBRARY_BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE '$(LIBRARY_CTEST_EXCLUDE)' $(CTEST_ARGS)

# -O1: the sanitizers' checks cost enough without -O3's compile time; unity
# builds (several sources a compilation) halve the experiments' compile time.
# Left out: the Python suites and the installed copy (LibTorch and Python are
# not instrumented), the benchmarks, cli_validate (its unit-test binary runs
# as sanitize_experiment_tests), slurm_cluster (Slurm's daemons, not our code) and
# results_rerun_matches_records (an -O1 build need not give -O3's last bits).
SANITIZE_BUILD_DIR ?= build-sanitize
SANITIZE_CTEST_EXCLUDE ?= ^(python|install|bench|slurm|results|unit_binaries)$$
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
  LSAN_OPTIONS=suppressions=$(abspath tests/sanitize/lsan.supp):print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
$(SANITIZE_BUILD_DIR)/build.ninja: | bootstrap
	cmake -S . -B $(SANITIZE_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
	  -DCMAKE_UNITY_BUILD=ON -DPLN_SANITIZE=ON -DPLN_BUILD_BENCH=OFF $(CMAKE_ARGS)

test-sanitize: bootstrap $(SANITIZE_BUILD_DIR)/build.ninja
	cmake --build $(SANITIZE_BUILD_DIR) -j $(JOBS)
	cd $(SANITIZE_BUILD_DIR) && $(SANITIZE_ENV) \
	  ctest --output-on-failure -j $(JOBS) -LE '$(SANITIZE_CTEST_EXCLUDE)' $(CTEST_ARGS)

# libFuzzer needs clang; the readers know no torch type, so tests/fuzz is a
# project of its own (no LibTorch). Each target runs FUZZ_SECONDS on seeds from
# the shipped records, the docs, the tests' --set values and a smoke run's
# checkpoints (made by the Release `pln`, built here if needed). Six targets at
# 40 s, one a core at a time: two minutes in all on two cores.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 40
$(FUZZ_BUILD_DIR)/build.ninja: | bootstrap
	cmake -S tests/fuzz -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++

test-fuzz: configure $(FUZZ_BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target pln_cli
	cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS)
	tests/fuzz/run.sh $(abspath $(FUZZ_BUILD_DIR)) $(abspath $(BUILD_DIR))/apps/pln $(abspath $(FUZZ_BUILD_DIR))/work $(FUZZ_SECONDS)

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target pln_bench
	$(BUILD_DIR)/bench/pln_bench

# .venv/ with torch 2.11.0 from pip, pytest, numpy and scikit-build-core; then
# the pln package built against that torch (pip install --no-build-isolation .).
venv: bootstrap
	VENV=$(VENV) scripts/venv

test-one-wheel: bootstrap
	scripts/one-wheel

# The pytest suites, the library's and the experiments' tests and the command
# line against pip's torch; the tests of the installed package run (and fail
# rather than skip without it). Left out, as they do not depend on the torch
# they link and run in `make test`: the C++ benchmarks and examples, the CUDA
# kernels on the CPU, the library binary at each lesser capability, the attacks
# on records and malformed files, Slurm, the shipped cells' rerun and the
# checks of the sources and docs. Each leg picks tests by their CTest labels
# (tests/CMakeLists.txt says what each label means).
TORCH2_CTEST_EXCLUDE ?= ^(capability|attacks|slurm|sources|results)$$
$(TORCH2_BUILD_DIR)/build.ninja: | venv
	cmake -S . -B $(TORCH2_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) \
	  -DPLN_TORCH_PYTHON=$(abspath $(VENV))/bin/python -DPLN_BUILD_BENCH=OFF -DPLN_BUILD_EXAMPLES=OFF \
	  -DPLN_CUDA_ON_CPU_TESTS=OFF $(CMAKE_ARGS)

test-torch2: venv $(TORCH2_BUILD_DIR)/build.ninja
	cmake --build $(TORCH2_BUILD_DIR) -j $(JOBS)
	cd $(TORCH2_BUILD_DIR) && PLN_REQUIRE_INSTALLED=1 \
	  ctest --output-on-failure -j $(JOBS) -LE '$(TORCH2_CTEST_EXCLUDE)' $(CTEST_ARGS)

# aarch64 on this x86-64 machine: Debian's cross compiler, the arm64 GoogleTest
# and zlib through multiarch, and LibTorch from pip's torch 2.11.0 aarch64
# wheel (its headers and CPU libraries, unpacked into third_party/aarch64/site/;
# see cmake/TorchFromWheel.cmake). Built: the library, its test binary and
# `pln` (not the experiments' tests, benchmarks, examples or the CUDA kernels on
# the CPU), several sources a compilation (unity) as its compile time is CI's
# largest. Run under qemu-aarch64: the library's tests whole on the portable
# and the NEON kernels (every layout, group-size path and dtype, the accuracy
# and offset cases), the capability errors, and a short `pln demo`
# (library_tests, the default capability's run, is the NEON run again).
AARCH64_BUILD_DIR ?= build-aarch64
AARCH64_SITE = $(abspath third_party/aarch64/site)
AARCH64_CTEST_INCLUDE ?= ^cross$$
aarch64-setup:
	@scripts/aarch64-setup

$(AARCH64_BUILD_DIR)/build.ninja: | bootstrap aarch64-setup
	cmake -S . -B $(AARCH64_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=$(abspath cmake/aarch64-linux-gnu.cmake) -DPLN_TORCH_SITE=$(AARCH64_SITE) \
	  -DCMAKE_UNITY_BUILD=ON -DPLN_BUILD_BENCH=OFF -DPLN_BUILD_EXAMPLES=OFF -DPLN_CUDA_ON_CPU_TESTS=OFF $(CMAKE_ARGS)

test-aarch64: bootstrap aarch64-setup $(AARCH64_BUILD_DIR)/build.ninja
	cmake --build $(AARCH64_BUILD_DIR) -j $(JOBS) --target pln_library_tests pln_cli
	cd $(AARCH64_BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L '$(AARCH64_CTEST_INCLUDE)' $(CTEST_ARGS)

clean:
	rm -rf $(BUILD_DIR) $(TORCH2_BUILD_DIR) $(LIBRARY_BUILD_DIR) $(SANITIZE_BUILD_DIR) $(AARCH64_BUILD_DIR) $(FUZZ_BUILD_DIR) build-pip build-pip-isolated build-pip-oldest dist-oldest
