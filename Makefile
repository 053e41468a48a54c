# heterodyne: the two commands of the README, and their helpers.
#   make demo   builds everything, trains (or reuses) the demo model on source code every
#               installation has, diffs it against its Q8_0, Q4_K_M and Q2_K on held-out text,
#               shows the ladder, the worst tokens and where the divergence forms
#   make test   installs what is missing (Debian packages), builds, runs every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
LLAMA_SOURCE ?=
ifneq ($(LLAMA_SOURCE),)
CMAKE_FLAGS += -DHETERODYNE_LLAMA_SOURCE=$(LLAMA_SOURCE)
endif
# GPU backends, off by default: make BUILD=build-cuda CUDA_ARCHS="89-real" (nvcc), or
# make BUILD=build-vulkan VULKAN=1 (libvulkan-dev, glslc). Keep them in their own build dirs.
CUDA_ARCHS ?=
ifneq ($(CUDA_ARCHS),)
CMAKE_FLAGS += -DHETERODYNE_CUDA=ON -DHETERODYNE_CUDA_ARCHS="$(CUDA_ARCHS)"
endif
ifneq ($(VULKAN),)
CMAKE_FLAGS += -DHETERODYNE_VULKAN=ON
endif
HD = $(BUILD)/heterodyne
DEMO = out/demo
DEMO_CHUNKS ?= 8

FUZZ_SECONDS ?= 600
ASAN_TESTS ?= .
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz

.PHONY: all deps deps-build configure build bin test test-asan fuzz demo demo-ladder bench bench-3b bench-pages rpc-server fixtures worker records-ts screenshots clean

all: build

# Every package (the tests start a browser and a Slurm cluster); the build alone needs fewer.
deps:
	@scripts/install-deps.sh

deps-build:
	@scripts/install-deps.sh build

$(BUILD)/build.ninja:
	@$(MAKE) --no-print-directory deps-build
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Every test on every core; then the ten slowest, whatever the outcome, and ctest's closing
# lines again so that they stay the last (the exit code is ctest's).
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build
	@bash -c 'set -o pipefail; cd $(BUILD) && ctest --output-on-failure -j $(JOBS) | tee ctest-output.txt; \
	  status=$$?; cd $(CURDIR) && scripts/slowest-tests $(BUILD) && \
	  grep -E "tests passed|Total Test time" $(BUILD)/ctest-output.txt | tail -2; exit $$status'

# web/src/records.ts again from the C++ field tables (after changing a typed record).
records-ts: build
	$(BUILD)/heterodyne-records-ts > web/src/records.ts

# docs/screenshots/ again from the browser tests' shots (run `make test` first): every view at
# 1280 and 390 px, the first screen of each, as docs/serve.md shows them.
SHOT_VIEWS := report summary-sweep summary-floor summary-generate summary-reference \
  summary-recommend compare serve-home serve-result
screenshots:
	@for v in $(SHOT_VIEWS); do for w in 1280 390; do \
	  f=$$(find $(BUILD)/test-artifacts/ui -name "$$v-$$w.jpg" | head -1); \
	  [ -n "$$f" ] || { echo "no $$v-$$w.jpg under $(BUILD)/test-artifacts/ui: make test first" >&2; exit 1; }; \
	  cp "$$f" docs/screenshots/; done; done
	@echo "docs/screenshots/: $(words $(SHOT_VIEWS)) views at 1280 and 390 px"

# The whole suite with AddressSanitizer + UndefinedBehaviorSanitizer on every target of ours
# (docs/reliability.md). Leak reports are off: llama.cpp's backends keep process-lifetime
# allocations by design. Warnings are not errors here: GCC 12 warns falsely inside <regex> when
# the sanitizers instrument it. Built file by file (no unity batches), so that a source whose
# includes a batch-mate supplies fails here.
test-asan:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DHETERODYNE_SANITIZE=address,undefined -DHETERODYNE_WERROR=OFF -DHETERODYNE_UNITY=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j 1 -R '$(ASAN_TESTS)'

# libFuzzer targets (fuzz/), built with clang, each run for FUZZ_SECONDS from the seed corpora
# in fuzz/corpus; findings land in $(FUZZ_BUILD)/artifacts.
fuzz:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DHETERODYNE_FUZZ=ON -DHETERODYNE_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The heterodyne binary alone (not the tests, not the peer tool): the demo and the GitHub
# Action need nothing else.
bin: configure
	cmake --build $(BUILD) -j $(JOBS) --target heterodyne

# Each phase timed (scripts/timed.sh), the times again at the end: what a first run spends where.
demo:
	@mkdir -p $(DEMO) && rm -f $(DEMO)/phases.tsv
	@test -f $(BUILD)/build.ninja || scripts/timed.sh $(DEMO)/phases.tsv "Debian packages (the build's)" $(MAKE) --no-print-directory deps-build
	@scripts/timed.sh $(DEMO)/phases.tsv "configure, llama.cpp built or reused" $(MAKE) --no-print-directory configure
	@scripts/timed.sh $(DEMO)/phases.tsv "the heterodyne binary" $(MAKE) --no-print-directory bin
	@scripts/timed.sh $(DEMO)/phases.tsv "the demo model, trained or reused" \
	  $(HD) demo-model -o $(DEMO)/demo-f32.gguf --held-out-text $(DEMO)/held-out.txt --force
	@scripts/timed.sh $(DEMO)/phases.tsv "the ladder: Q4_K_M with transplants and components, Q8_0, Q2_K" \
	  $(MAKE) --no-print-directory demo-ladder
	@echo; echo "== the quantization ladder: the demo model (F32) against each type, on text it never saw"
	@$(HD) show $(DEMO)/demo-vs-Q8_0.hdy $(DEMO)/demo-vs-Q4_K_M.hdy $(DEMO)/demo-vs-Q2_K.hdy
	@echo; echo "== F32 vs Q4_K_M: where it diverges, in the text and across the layers"
	@$(HD) show $(DEMO)/demo-vs-Q4_K_M.hdy --worst 5 --transplants --components
	@$(HD) report $(DEMO)/demo-vs-Q4_K_M.hdy -o $(DEMO)/demo-vs-Q4_K_M.html --force
	@echo; echo "== where the time went:"; awk -F'\t' '{ printf "  %6d s  %s\n", $$1, $$2; t += $$1 } END { printf "  %6d s  in all\n", t }' $(DEMO)/phases.tsv
	@echo; echo "experiment files: $(DEMO)/demo-vs-{Q8_0,Q4_K_M,Q2_K}.hdy; report: $(DEMO)/demo-vs-Q4_K_M.html"
	@echo "open the UI on these results: $(HD) serve --models $(DEMO) --experiments $(DEMO)   (then open the address it prints: it carries the session token)"

# The demo's three diffs (make demo runs them after training).
demo-ladder:
	$(HD) diff --a $(DEMO)/demo-f32.gguf --b-quant Q4_K_M --text-file $(DEMO)/held-out.txt \
	  --chunk 256 --max-chunks $(DEMO_CHUNKS) --transplants --components -o $(DEMO)/demo-vs-Q4_K_M.hdy --force
	@for t in Q8_0 Q2_K; do \
	  $(HD) diff --a $(DEMO)/demo-f32.gguf --b-quant $$t --text-file $(DEMO)/held-out.txt \
	    --chunk 256 --max-chunks $(DEMO_CHUNKS) -o $(DEMO)/demo-vs-$$t.hdy --force || exit 1; \
	done

# llama.cpp's own RPC server from the same pinned tree, for --a-rpc / --b-rpc (docs/arms.md).
# Run it on each machine that should hold layers: build/ggml-rpc-server -H 0.0.0.0 -p 50052
rpc-server: configure
	cmake --build $(BUILD) -j $(JOBS) --target rpc_server
	@echo "llama.cpp's RPC server: $(BUILD)/ggml-rpc-server -H <address> -p 50052 [-t threads]"

# llama.cpp's fixture generator (tests/test-llama-archs.cpp from the same pinned tree), which
# `heterodyne make-model --arch ARCH` and --list-archs run (docs/architectures.md). The tests
# build it too; the demo never does.
fixtures: configure
	cmake --build $(BUILD) -j $(JOBS) --target heterodyne-llama-archs
	@echo "fixtures: $(HD) make-model --list-archs; $(HD) make-model --arch qwen3 -o qwen3.gguf"

# A worker for another llama.cpp build (--a-llama-build / --b-llama-build build it on first use
# too): make worker SPEC=pinned,GGML_NATIVE=OFF | SPEC=npm:node-llama-cpp@3.20.0 | SPEC=/path/to/llama.cpp
worker:
	@test -n "$(SPEC)" || { echo "make worker SPEC=<llama.cpp build spec> (docs/arms.md)"; exit 2; }
	scripts/worker.sh '$(SPEC)'

bench: build
	cmake --build $(BUILD) -j $(JOBS) --target heterodyne_bench
	$(BUILD)/bench/heterodyne_bench

# The llama3.2-3b pair at chunks of 512: time against the peer and peak RSS (issue 45; about an
# hour on two cores, not in CI). docs/diff.md ("At scale") holds its figures.
bench-3b: build
	cmake --build $(BUILD) -j $(JOBS) --target heterodyne_bench_3b
	$(BUILD)/bench/heterodyne_bench_3b

# serve's pages over the demo's results (make demo first): each ready in Chromium within 1 s,
# and the largest result as curl --compressed fetches it against plain (issue 45).
bench-pages: deps bin
	scripts/bench-pages.sh $(HD) $(DEMO)

clean:
	rm -rf $(BUILD)
