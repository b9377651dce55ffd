# ladder: the one entry point. `make help` lists the targets.
#
#   make              build build/lib/libladder.so, build/bin/ladder and (with Criterion) the tests
#   make run          the main job: every algorithm, every available rung, checked against the CPU rung
#   make test         every Criterion suite, then the Python module's tests (pytest; tools/install-deps.sh installs
#                     Criterion, NumPy and pytest if missing)
#   make test SANITIZE=1   CPU-only build under ASan and UBSan, then the suites
#   make bench        the benchmark sweep on this machine (GPU rungs need a GPU)
#   make bench-tables splice docs/results/*.csv into the chapters
#   make check-numbers prove every measured number in the chapters and README spliced or in docs/results/
#   make check-excerpts prove every code excerpt in the chapters the lines of the file it names (make docs runs it)
#   make docs         Doxygen HTML of the API and the chapters into build/docs/html
#   make gpu-bundle   a lean, commit-stamped build/ (the labs' binaries too) to run on a GPU machine with no package manager
#   make labs         list the chapters' labs; make lab LAB=name checks yours; make lab-check proves the checkers
#   make fuzz         libFuzzer on the .npy reader for FUZZ_SECONDS (default 60); any crash fails it
#
# Options: ARCH (default "80 90"), BUNDLE_ARCH (what gpu-bundle builds for, default "90": the lent H100 and H200
# machines), NVCC, REQUIRE_CUDA=1 (fail without nvcc), SANITIZE=1.
#
# The library is one shared object, build/lib/libladder.so, holding every kernel (and the static CUDA runtime)
# once; the program, the tests and the labs load it through their $ORIGIN-relative rpath, so that build/ can be
# copied to another machine as it is. A .cu file is compiled for every architecture in ARCH, unless its name
# asks for one chip: NAME.sm90a.cu is compiled for sm_90a alone (Hopper's wgmma and setmaxnreg exist only
# there), and its launcher must refuse other GPUs.

ARCH ?= 80 90
BUNDLE_ARCH ?= 90
NVCC ?= nvcc
ifeq ($(origin CC),default)
  CC := gcc
endif
REQUIRE_CUDA ?= 0
SANITIZE ?= 0

BUILD := build
OBJ := obj
HAVE_NVCC := $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)
ifeq ($(SANITIZE),1)
  # the sanitizer build is CPU-only: ASan and CUDA's runtime do not mix
  HAVE_NVCC := 0
  BUILD := build-sanitize
  OBJ := obj-sanitize
endif
ifeq ($(HAVE_NVCC)$(SANITIZE),00)
  # without nvcc the objects differ (no LADDER_HAVE_CUDA): keep them apart from the CUDA build's
  OBJ := obj-nocuda
endif
ifeq ($(REQUIRE_CUDA),1)
  ifneq ($(HAVE_NVCC),1)
    $(error REQUIRE_CUDA=1 but '$(NVCC)' was not found (or SANITIZE=1 turned CUDA off))
  endif
endif

# -fPIC: the library's objects go into a shared object. -Werror stands apart (C_WERROR, CU_WERROR) so that a lab
# skeleton can be built without it (chapters/labs/labs.mk).
CFLAGS := -std=c11 -O2 -g -Wall -Wextra -fPIC -fopenmp -D_POSIX_C_SOURCE=200809L -Icommon -MMD -MP
C_WERROR := -Werror
LDLIBS := -fopenmp -lm
# The cpu rung's vector width: x86-64-v3 (AVX2 and FMA: 8 floats an instruction, a * b + c in one) where this
# machine and the compiler have it, as every x86-64 server of the last decade does; `make CPU_ARCH=` builds it for any
# x86-64 (SSE2: 4 floats). A library built with it runs its cpu rung only on CPUs that have AVX2 and FMA. flash's
# block products (matmul_acc) are many independent sums, bound by throughput, and there a * b + c as one fused
# instruction is faster (-ffp-contract=fast; C11 mode keeps them apart); memeff's dot products and recurrent's sums
# are each one chain of dependent additions, which the fused instruction's longer latency made slower
# (docs/results/local-2026-11-28-notes-cpu.md), so the other files keep them apart.
CPU_ARCH ?= $(if $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && \
                        $(CC) -march=x86-64-v3 -x c -E /dev/null >/dev/null 2>&1 && echo y),-march=x86-64-v3)
CPU_FLASH_CFLAGS := -ffp-contract=fast
# -fno-trapping-math: the cpu rung never reads the floating-point exception flags, so the compiler may compute both
# sides of a select (an exponential and the mask that discards it, common/vec_math.h) and run the loop in vector
# instructions; the results are the same
CPU_VEC_CFLAGS := -fno-trapping-math
ifeq ($(SANITIZE),1)
  CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  LDLIBS += -fsanitize=address,undefined
endif

LIB_C := $(wildcard common/*.c cpu/*.c)
ifeq ($(HAVE_NVCC),1)
  CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
  LIB_C := $(filter-out common/gpu_none.c,$(LIB_C))
  # the slowest to compile first (the tensor-core rung), so that make -j2 ends with both cores busy
  LIB_CU := $(wildcard gpu_tensorcore/*.cu gpu_tiled/*.cu gpu_naive/*.cu common/*.cu)
  CFLAGS += -DLADDER_HAVE_CUDA
  # the CUDA runtime, linked into whatever holds kernels: libladder.so, and a lab binary built from a .cu file
  CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt
  NVCCFLAGS := -O3 -std=c++17 -lineinfo -Icommon -MMD -MP -DLADDER_HAVE_CUDA -Xcompiler=-fPIC,-Wall,-Wextra \
               -Xptxas=--warn-on-spills
  CU_WERROR := -Werror=all-warnings -Xcompiler=-Werror
endif
# The architectures of one .cu file: the one its name asks for (NAME.sm90a.cu: 90a), else every one in ARCH.
cu_arch = $(or $(patsubst .sm%,%,$(filter .sm%,$(suffix $(basename $(1))))),$(ARCH))
gencode = $(foreach a,$(call cu_arch,$(1)),-gencode=arch=compute_$(a),code=sm_$(a))
# $(call rpath,DIR): a program finds libladder.so in DIR, relative to its own folder. A DT_RPATH, not a DT_RUNPATH,
# because only a DT_RPATH also serves the libraries that libladder.so loads (libgomp, beside it in the bundle).
rpath = -Wl,-rpath,'$$ORIGIN/$(1)' -Wl,--disable-new-dtags

LIB_OBJ := $(LIB_CU:%.cu=$(OBJ)/%.o) $(LIB_C:%.c=$(OBJ)/%.o)
LIB := $(BUILD)/lib/libladder.so
LADDER := $(BUILD)/bin/ladder
TOOL_SRC := $(wildcard tools/*.c)
TEST_SRC := $(wildcard tests/*.c tests/oracle/*.c)
TESTS := $(BUILD)/bin/ladder-tests
HAVE_CRITERION := $(if $(wildcard /usr/include/criterion/criterion.h /usr/local/include/criterion/criterion.h),1,0)

.PHONY: all run test bench bench-tables check-numbers check-excerpts docs gpu-bundle clean help deps-test deps-docs fuzz
# a target whose recipe fails is deleted, so that the next make builds it again (an object whose ptxas serialized
# wgmma products is whole, and nvcc-checked.sh fails it after the fact)
.DELETE_ON_ERROR:
all: $(LIB) $(LADDER) $(if $(filter 1,$(HAVE_CRITERION)),$(TESTS))

help:
	@sed -n '2,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

$(OBJ)/%.o: %.c $(OBJ)/flags.inputs
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(C_WERROR) -c $< -o $@
$(OBJ)/cpu/%.o: CFLAGS += $(CPU_ARCH) $(CPU_VEC_CFLAGS)
$(OBJ)/cpu/flash.o: CFLAGS += $(CPU_FLASH_CFLAGS)

# tools/nvcc-checked.sh fails an object whose ptxas serialized wgmma products (C7513, which -Werror lets pass)
$(OBJ)/%.o: %.cu $(OBJ)/flags.inputs
	@mkdir -p $(dir $@)
	tools/nvcc-checked.sh $(NVCC) $(NVCCFLAGS) $(CU_WERROR) $(call gencode,$<) -c $< -o $@
# the tensor-core rung's attention kernels keep every array in registers: an array ptxas puts in local memory (a loop
# it did not unroll, indexed at run time) costs what a spill costs, and CU_WERROR makes its warning fail the object
TC_ATTN_NVCCFLAGS := -Xptxas=--warn-on-local-memory-usage
$(OBJ)/gpu_tensorcore/attention%.o: NVCCFLAGS += $(TC_ATTN_NVCCFLAGS)

# NAME.inputs holds what NAME is made from, rewritten only when that changes. $(OBJ)/flags.inputs: the compilers
# and flags, on which every object depends, so that new flags (ARCH, -fPIC) recompile rather than link objects
# built the old way. $(BUILD)/.inputs/{lib,ladder,tests}.inputs: the objects of the library and of each program,
# so that a deleted source file, or a build from the other object folder (with and without nvcc share build/),
# relinks what it was part of. Timestamps alone would do neither.
INPUTS_flags := $(CC) $(CFLAGS) cpu/:$(CPU_ARCH) $(CPU_VEC_CFLAGS) cpu/flash.c:$(CPU_FLASH_CFLAGS) $(C_WERROR) $(NVCC) $(NVCCFLAGS) $(CU_WERROR) $(ARCH) \
                gpu_tensorcore/attention:$(TC_ATTN_NVCCFLAGS)
INPUTS_lib := $(LIB_OBJ)
INPUTS_ladder := $(TOOL_SRC:%.c=$(OBJ)/%.o)
# tools/report.c too, so that tests/test_report.c can hand it GPU rows, which a machine without a GPU never times
INPUTS_tests := $(TEST_SRC:%.c=$(OBJ)/%.o) $(OBJ)/tools/report.o
%.inputs: FORCE
	@mkdir -p $(dir $@)
	@echo '$(INPUTS_$(notdir $*))' | cmp -s - $@ || echo '$(INPUTS_$(notdir $*))' > $@
.PHONY: FORCE
# named as a target, so that make keeps it (a file reached only through pattern rules is deleted as intermediate)
$(OBJ)/flags.inputs: FORCE

# The kernels are stored once, here, with the CUDA runtime; --exclude-libs keeps that runtime private, so that a
# program with one of its own (a lab's kernel, a Python process) never binds to this one.
$(LIB): $(LIB_OBJ) $(BUILD)/.inputs/lib.inputs
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libladder.so $(LIB_OBJ) -o $@ $(LDLIBS) $(CUDA_LDLIBS) -Wl,--exclude-libs,ALL

$(LADDER): $(INPUTS_ladder) $(LIB) $(BUILD)/.inputs/ladder.inputs
	@mkdir -p $(dir $@)
	$(CC) $(filter-out %.inputs,$^) -o $@ $(LDLIBS) $(call rpath,../lib)

$(TESTS): $(INPUTS_tests) $(LIB) $(BUILD)/.inputs/tests.inputs
	@mkdir -p $(dir $@)
	$(CC) $(filter-out %.inputs,$^) -o $@ -lcriterion $(LDLIBS) $(call rpath,../lib)

run: $(LADDER)
	$(LADDER) run all

deps-test:
	@tools/install-deps.sh test

deps-docs:
	@tools/install-deps.sh docs

# The Python module's tests load the library into python3: under SANITIZE=1 that library needs the ASan runtime
# loaded first, and the interpreter's own allocations (never freed at exit) are not the library's leaks.
ifeq ($(SANITIZE),1)
  PYTEST_ENV := LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
endif
test: deps-test
	@$(MAKE) --no-print-directory $(TESTS) $(LADDER)
	@tests/test_run_gpu_tests.sh $(LADDER)
	@tests/test_make.sh
	@python3 -m unittest discover -q -s tools -p 'test_bench_tables.py'
	@python3 -m unittest discover -q -s tools -p 'test_check_numbers.py'
	@python3 -m unittest discover -q -s tools -p 'test_check_excerpts.py'
	@tests/run.sh $(TESTS) $(LADDER)
	@$(PYTEST_ENV) LADDER_LIB=$(LIB) LADDER_BIN=$(LADDER) PYTHONPATH=python python3 -m pytest -q -rs -p no:cacheprovider \
	    python/tests

# the report names the commit it measured (a caller's LADDER_COMMIT wins: the GPU bundle's script sets it)
bench: $(LADDER)
	LADDER_COMMIT=$${LADDER_COMMIT:-$$(tools/commit.sh)} $(LADDER) bench all --out $(BUILD)/bench

bench-tables:
	python3 tools/bench_tables.py docs/results chapters

# Every figure with a unit (ms, us, GB/s, TFLOP/s, %, ...) in these files is in a spliced bench table or written in
# a committed file under docs/results/ (tools/check_numbers.py says how). A file in NUMBERS_PENDING is being
# rewritten: its untraced figures are listed but do not fail the check; take it out of the list once it passes.
NUMBERS_FILES := $(sort $(wildcard chapters/*.md)) README.md docs/mainpage.md
NUMBERS_PENDING :=
check-numbers:
	python3 tools/check_numbers.py $(foreach f,$(NUMBERS_PENDING),--pending $(f)) docs/results $(NUMBERS_FILES)

# A chapter quotes code as "`FILE`, lines A-B:" and a fenced block; tools/check_excerpts.py fails when the block is
# no longer those lines, so that a change to quoted code shows up here. `python3 tools/check_excerpts.py --fix
# chapters/*.md` renumbers the excerpts whose lines only moved; a changed line needs its excerpt refreshed by hand.
check-excerpts:
	python3 tools/check_excerpts.py $(sort $(wildcard chapters/*.md))

docs: deps-docs check-excerpts
	@mkdir -p $(BUILD)/docs
	doxygen docs/Doxyfile

gpu-bundle:
	@$(MAKE) --no-print-directory REQUIRE_CUDA=1 ARCH="$(BUNDLE_ARCH)" all lab-binaries
	tools/make-gpu-bundle.sh $(BUILD)

include chapters/labs/labs.mk
include tests/fuzz/fuzz.mk

clean:
	rm -rf build build-sanitize obj obj-sanitize obj-nocuda

-include $(LIB_OBJ:.o=.d) $(TOOL_SRC:%.c=$(OBJ)/%.d) $(TEST_SRC:%.c=$(OBJ)/%.d)
