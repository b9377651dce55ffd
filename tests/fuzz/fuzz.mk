# make fuzz: libFuzzer on the .npy reader (tests/fuzz/fuzz_npy.c) for FUZZ_SECONDS (default 60), starting from
# the seed corpus tests/fuzz/corpus/npy/ with the dictionary tests/fuzz/npy.dict. Any crash, leak, sanitizer
# report, broken property or input slower than 10 s fails it, and leaves the input that did it in build/fuzz/
# (replay: build/fuzz/fuzz_npy FILE). The target is built with clang straight from the sources it tests, apart
# from the library; tools/install-deps.sh fuzz installs clang and its libFuzzer runtime when they are missing.

FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_DIR := build/fuzz
FUZZ_BIN := $(FUZZ_DIR)/fuzz_npy
FUZZ_SRC := tests/fuzz/fuzz_npy.c common/npy.c common/tensor.c common/status.c common/half.c
FUZZ_CFLAGS := -std=c11 -O1 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -Icommon \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

.PHONY: deps-fuzz
deps-fuzz:
	@tools/install-deps.sh fuzz

$(FUZZ_BIN): $(FUZZ_SRC) $(wildcard common/*.h) tests/fuzz/fuzz.mk
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SRC) -o $@

# New inputs go to $(FUZZ_DIR)/corpus (the first directory), never into the committed seeds.
fuzz: deps-fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -max_len=4096 -print_final_stats=1 \
	    -dict=tests/fuzz/npy.dict -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus tests/fuzz/corpus/npy
