# heterodyne: the two commands of the README, and their helpers.
#   make demo   builds everything, makes a model and its Q4_0, diffs them on llama.cpp's own
#               README (a text every installation has), shows the result
#   make test   installs what is missing (Debian packages), builds, runs every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
LLAMA_SOURCE ?=
ifneq ($(LLAMA_SOURCE),)
CMAKE_FLAGS += -DHETERODYNE_LLAMA_SOURCE=$(LLAMA_SOURCE)
endif
HD = $(BUILD)/heterodyne
DEMO = out/demo

.PHONY: all deps configure build test demo bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 1

demo: build
	@mkdir -p $(DEMO)
	@test -f $(DEMO)/tiny-llama-f16.gguf || $(HD) make-model --preset tiny-llama --seed 1 --type f16 -o $(DEMO)/tiny-llama-f16.gguf
	$(HD) diff --a $(DEMO)/tiny-llama-f16.gguf --b-quant Q4_0 --text-file "$$(cat $(BUILD)/llama-source-dir.txt)/README.md" \
	  --chunk 128 --max-chunks 4 --components -o $(DEMO)/tiny-llama-f16-vs-q4_0.hdy --force
	$(HD) show $(DEMO)/tiny-llama-f16-vs-q4_0.hdy --worst 5 --transplants --components

bench: build
	cmake --build $(BUILD) -j $(JOBS) --target heterodyne_bench
	$(BUILD)/bench/heterodyne_bench

clean:
	rm -rf $(BUILD)
