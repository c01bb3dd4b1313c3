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

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/examples/demo

bench: build
	bash bench/run.sh

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp')

clean:
	rm -rf $(BUILD)
