# The two commands a user needs are `make test` and `make demo`; both set up a fresh machine
# (`make deps` installs missing Debian packages), configure, and build into $(BUILD)/.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.DEFAULT_GOAL := build
.PHONY: deps configure build test demo bench format clean

deps:
	@bash tools/deps.sh

# Order-only: deps runs first (also under make -j) but does not force a reconfigure. Once
# configured, ninja reruns CMake itself when a CMakeLists.txt changes.
$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# onnxruntime (PyPI) for tests/export/onnx_test.cpp, in a venv under the build folder; where it
# cannot be installed the ONNX tests skip and say why.
ONNXRT_VENV := $(abspath $(BUILD))/onnxrt-venv
ONNXRT_PACKAGES ?= onnxruntime==1.32.0 numpy==2.4.6 onnx==1.23.2
$(ONNXRT_VENV)/.installed: | deps
	@python3 -m venv $(ONNXRT_VENV) && $(ONNXRT_VENV)/bin/pip install -q $(ONNXRT_PACKAGES) && touch $@ \
	  || echo "kiln: could not install onnxruntime into $(ONNXRT_VENV); the ONNX export tests will skip"

test: build $(ONNXRT_VENV)/.installed
	cd $(BUILD) && KILN_ONNXRUNTIME_PYTHON=$(ONNXRT_VENV)/bin/python ctest --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/examples/demo $(ARGS)

bench: build
	bash bench/run.sh

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp')

clean:
	rm -rf $(BUILD)

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer, in its own build folder.
# The CUDA backend is left out (its runtime needs ASan's protect_shadow_gap=0; the host-side
# allocator logic is in kiln_tests, so it is still checked). Huge-allocation tests need
# allocator_may_return_null; verify_asan_link_order=0 is kept for any program that loads the
# sanitized library without linking the runtime first (the install test's consumer is
# instrumented itself, tests/CMakeLists.txt).
SANITIZE_BUILD ?= build-sanitize
.PHONY: test-sanitize
test-sanitize: deps $(ONNXRT_VENV)/.installed
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_SANITIZE=ON -DKILN_CUDA=OFF \
	  -DKILN_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && \
	  ASAN_OPTIONS=allocator_may_return_null=1:verify_asan_link_order=0:detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1 KILN_ONNXRUNTIME_PYTHON=$(ONNXRT_VENV)/bin/python \
	  ctest --output-on-failure -j $(JOBS)

# libFuzzer harnesses (fuzz/), built with clang and run for FUZZ_SECONDS each in $(FUZZ_BUILD)/.
FUZZ_SECONDS ?= 300
FUZZ_BUILD ?= build-fuzz
.PHONY: fuzz
fuzz:
	@bash tools/deps.sh --fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(FUZZ_BUILD) bash fuzz/run.sh
