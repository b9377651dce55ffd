# ladder: the one entry point. `make help` lists the targets.
#
#   make              build build/lib/libladder.a, build/bin/ladder and (with Criterion) the tests
#   make run          the main job: every algorithm, every available rung, checked against the CPU rung
#   make test         every Criterion suite (installs Criterion through tools/install-deps.sh if missing)
#   make test SANITIZE=1   CPU-only build under ASan and UBSan, then the suites
#   make bench        the benchmark sweep on this machine (GPU rungs need a GPU)
#   make bench-tables splice docs/results/*.csv into the chapters
#   make docs         Doxygen HTML of the API and the chapters into build/docs/html
#   make gpu-bundle   a lean, commit-stamped build/ to run on a GPU machine with no package manager
#   make labs         list the chapters' labs; make lab LAB=name checks yours; make lab-check proves the checkers
#   make fuzz         libFuzzer on the .npy reader for FUZZ_SECONDS (default 60); any crash fails it
#
# Options: ARCH (default "80 90"), NVCC, REQUIRE_CUDA=1 (fail without nvcc), SANITIZE=1.

ARCH ?= 80 90
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

CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -fopenmp -D_POSIX_C_SOURCE=200809L -Icommon -MMD -MP
LDLIBS := -fopenmp -lm
ifeq ($(SANITIZE),1)
  CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  LDLIBS += -fsanitize=address,undefined
endif

LIB_C := $(wildcard common/*.c cpu/*.c)
ifeq ($(HAVE_NVCC),1)
  CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
  LIB_C := $(filter-out common/gpu_none.c,$(LIB_C))
  LIB_CU := $(wildcard common/*.cu gpu_naive/*.cu gpu_tiled/*.cu gpu_tensorcore/*.cu)
  CFLAGS += -DLADDER_HAVE_CUDA
  LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt
  GENCODE := $(foreach a,$(ARCH),-gencode=arch=compute_$(a),code=sm_$(a))
  NVCCFLAGS := -O3 -std=c++17 -lineinfo -Icommon -MMD -MP $(GENCODE) -DLADDER_HAVE_CUDA \
               -Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror -Xptxas=--warn-on-spills
endif

LIB_OBJ := $(LIB_C:%.c=$(OBJ)/%.o) $(LIB_CU:%.cu=$(OBJ)/%.o)
LIB := $(BUILD)/lib/libladder.a
LADDER := $(BUILD)/bin/ladder
TOOL_SRC := $(wildcard tools/*.c)
TEST_SRC := $(wildcard tests/*.c tests/oracle/*.c)
TESTS := $(BUILD)/bin/ladder-tests
HAVE_CRITERION := $(if $(wildcard /usr/include/criterion/criterion.h /usr/local/include/criterion/criterion.h),1,0)

.PHONY: all run test bench bench-tables docs gpu-bundle clean help deps-test deps-docs fuzz
all: $(LIB) $(LADDER) $(if $(filter 1,$(HAVE_CRITERION)),$(TESTS))

help:
	@sed -n '2,/^# Options/p' Makefile | sed 's/^# \{0,1\}//'

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(OBJ)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# $(OBJ)/NAME.inputs holds the list of what NAME is made from, rewritten only when the list changes, so that a
# deleted source file rebuilds the archive or program it was part of (its timestamps alone would not).
INPUTS_lib := $(LIB_OBJ)
INPUTS_ladder := $(TOOL_SRC)
INPUTS_tests := $(TEST_SRC)
$(OBJ)/%.inputs: FORCE
	@mkdir -p $(dir $@)
	@echo '$(INPUTS_$*)' | cmp -s - $@ || echo '$(INPUTS_$*)' > $@
.PHONY: FORCE

$(LIB): $(LIB_OBJ) $(OBJ)/lib.inputs
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(LIB_OBJ)

$(LADDER): $(TOOL_SRC:%.c=$(OBJ)/%.o) $(LIB) $(OBJ)/ladder.inputs
	@mkdir -p $(dir $@)
	$(CC) $(filter-out %.inputs,$^) -o $@ $(LDLIBS) -Wl,-rpath,'$$ORIGIN/../lib' -Wl,--disable-new-dtags

$(TESTS): $(TEST_SRC:%.c=$(OBJ)/%.o) $(LIB) $(OBJ)/tests.inputs
	@mkdir -p $(dir $@)
	$(CC) $(filter-out %.inputs,$^) -o $@ -lcriterion $(LDLIBS) -Wl,-rpath,'$$ORIGIN/../lib' -Wl,--disable-new-dtags

run: $(LADDER)
	$(LADDER) run all

deps-test:
	@tools/install-deps.sh test

deps-docs:
	@tools/install-deps.sh docs

test: deps-test
	@$(MAKE) --no-print-directory $(TESTS) $(LADDER)
	@tests/run.sh $(TESTS) $(LADDER)

bench: $(LADDER)
	$(LADDER) bench all --out $(BUILD)/bench

bench-tables:
	python3 tools/bench_tables.py docs/results chapters

docs: deps-docs
	@mkdir -p $(BUILD)/docs
	doxygen docs/Doxyfile

gpu-bundle:
	@$(MAKE) --no-print-directory REQUIRE_CUDA=1 all
	tools/make-gpu-bundle.sh $(BUILD)

include chapters/labs/labs.mk
include tests/fuzz/fuzz.mk

clean:
	rm -rf build build-sanitize obj obj-sanitize obj-nocuda

-include $(LIB_OBJ:.o=.d) $(TOOL_SRC:%.c=$(OBJ)/%.d) $(TEST_SRC:%.c=$(OBJ)/%.d)
