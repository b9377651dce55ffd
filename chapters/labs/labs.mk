# chapters/labs/labs.mk: the labs, each with a checker that says PASS or FAIL.
# Included by the Makefile after its variables (CC, LDLIBS, CUDA_LDLIBS, OBJ, BUILD, LIB, HAVE_NVCC, rpath).
#
#   make lab LAB=lab1_dx   build your chapters/labs/<algo>/lab1_dx.c with its checker and run it
#   make labs              list the labs
#   make lab-check         prove every lab checkable: its checker must PASS the reference
#                          solution and FAIL the untouched skeleton (run it on a clean checkout),
#                          and FAIL each of the lab's known mistakes
#
# A lab is chapters/labs/<algo>/lab<N>_<name>.c (or .cu), with check_<lab>.c beside it and a
# reference solution in solutions/<lab>.c (or .cu). A known mistake, solutions/mistakes/<lab>-<what>.c,
# is a wrong answer the lab is about (Lab 2 of chapter 2: a sum in float), which its checker must fail. The checker runs the lab's function and
# the cpu rung on the same seeded inputs and compares them with ladder_compare().
# Checker exit codes: 0 PASS, 1 FAIL, 2 cannot run here (a .cu lab without a CUDA GPU), 3 checker error.
# A .cu lab is built only where nvcc is found; its checker needs a CUDA GPU to run.
# The skeleton is built without -Werror, so that a lab in progress (an unused variable) warns instead of
# failing to build; its checker and the solution keep -Werror.

LAB_SRCS := $(wildcard chapters/labs/*/lab[0-9]*.c chapters/labs/*/lab[0-9]*.cu)
LAB_NAMES := $(sort $(basename $(notdir $(LAB_SRCS))))
LAB_CU_NAMES := $(sort $(basename $(notdir $(filter %.cu,$(LAB_SRCS)))))
# the labs this machine can build: the .cu ones only with nvcc
LAB_BUILDABLE := $(if $(filter 1,$(HAVE_NVCC)),$(LAB_NAMES),$(filter-out $(LAB_CU_NAMES),$(LAB_NAMES)))
LAB_UNBUILDABLE := $(filter-out $(LAB_BUILDABLE),$(LAB_NAMES))
LAB_NO_CUDA := $(if $(filter 1,$(SANITIZE)),SANITIZE=1 builds without CUDA,nvcc ($(NVCC)) was not found)
LABCHECK_OBJ := $(OBJ)/chapters/labs/labcheck.o

# $(1): the lab's name, $(2): its source (the skeleton the student edits). Each binary links libladder.so,
# found from build/labs/ and build/labs/solutions/ through its rpath, and a .cu lab the CUDA runtime for its kernel.
define LAB_RULES
LAB_OBJS += $(OBJ)/$(basename $(2)).o $(OBJ)/$(dir $(2))solutions/$(1).o $(OBJ)/$(dir $(2))check_$(1).o
$(OBJ)/$(basename $(2)).o: C_WERROR :=
$(OBJ)/$(basename $(2)).o: CU_WERROR :=
$(BUILD)/labs/$(1): $(OBJ)/$(basename $(2)).o $(OBJ)/$(dir $(2))check_$(1).o $(LABCHECK_OBJ) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$^ -o $$@ $$(LDLIBS) $(if $(filter %.cu,$(2)),$$(CUDA_LDLIBS)) $$(call rpath,../lib)
$(BUILD)/labs/solutions/$(1): $(OBJ)/$(dir $(2))solutions/$(1).o $(OBJ)/$(dir $(2))check_$(1).o $(LABCHECK_OBJ) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$^ -o $$@ $$(LDLIBS) $(if $(filter %.cu,$(2)),$$(CUDA_LDLIBS)) $$(call rpath,../../lib)
endef
LAB_OBJS := $(LABCHECK_OBJ)
$(foreach n,$(LAB_BUILDABLE),$(eval $(call LAB_RULES,$(n),$(filter %/$(n).c %/$(n).cu,$(LAB_SRCS)))))

# $(1): a known mistake's source, $(2): its lab, $(3): the lab's folder. Built like a solution, into build/labs/mistakes/.
LAB_MISTAKE_SRCS := $(wildcard chapters/labs/*/solutions/mistakes/*.c)
lab_of_mistake = $(firstword $(subst -, ,$(basename $(notdir $(1)))))
define MISTAKE_RULES
LAB_OBJS += $(OBJ)/$(basename $(1)).o
$(BUILD)/labs/mistakes/$(basename $(notdir $(1))): $(OBJ)/$(basename $(1)).o $(OBJ)/$(3)check_$(2).o $(LABCHECK_OBJ) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$^ -o $$@ $$(LDLIBS) $$(call rpath,../../lib)
endef
$(foreach m,$(LAB_MISTAKE_SRCS),$(eval $(call MISTAKE_RULES,$(m),$(call lab_of_mistake,$(m)),$(patsubst %solutions/mistakes/,%,$(dir $(m))))))
LAB_MISTAKES := $(foreach m,$(LAB_MISTAKE_SRCS),$(BUILD)/labs/mistakes/$(basename $(notdir $(m))))

.PHONY: lab labs lab-binaries lab-check
lab: $(if $(filter $(LAB),$(LAB_BUILDABLE)),$(BUILD)/labs/$(LAB))
	@if [ -z "$(LAB)" ] || [ -z "$(filter $(LAB),$(LAB_NAMES))" ]; then \
	    echo "usage: make lab LAB=<name>, where <name> is one of: $(LAB_NAMES)" >&2; exit 2; fi
	@if [ -z "$(filter $(LAB),$(LAB_BUILDABLE))" ]; then \
	    echo "SKIP $(LAB) needs a CUDA GPU: $(LAB_NO_CUDA), so its .cu file is not built"; exit 2; fi
	@$(BUILD)/labs/$(LAB)

labs:
	@echo "labs (make lab LAB=<name>): $(LAB_NAMES)"

# every buildable lab, skeleton and solution, built and not run (make gpu-bundle carries them to a GPU machine)
lab-binaries: $(foreach n,$(LAB_BUILDABLE),$(BUILD)/labs/$(n) $(BUILD)/labs/solutions/$(n))

lab-check: lab-binaries $(LAB_MISTAKES)
	@fail=0; \
	for n in $(LAB_BUILDABLE); do \
	    sol=$$($(BUILD)/labs/solutions/$$n); s=$$?; \
	    ske=$$($(BUILD)/labs/$$n); k=$$?; \
	    if [ $$s = 2 ] && [ $$k = 2 ]; then echo "lab-check $$n: skipped: $$sol"; continue; fi; \
	    if [ $$s = 0 ] && [ $$k = 1 ]; then echo "lab-check $$n: ok"; \
	    else echo "lab-check $$n: NOT CHECKABLE (the solution must PASS, exit 0; the skeleton must FAIL, exit 1)"; fail=1; fi; \
	    echo "    solution (exit $$s): $$sol"; \
	    echo "    skeleton (exit $$k): $$ske"; \
	done; \
	for n in $(LAB_UNBUILDABLE); do echo "lab-check $$n: skipped: $(LAB_NO_CUDA)"; done; \
	for m in $(LAB_MISTAKES); do \
	    out=$$($$m); r=$$?; \
	    if [ $$r = 1 ]; then echo "lab-check mistake $$(basename $$m): ok (the checker fails it)"; \
	    else echo "lab-check mistake $$(basename $$m): NOT CAUGHT (its checker must FAIL it, exit 1)"; fail=1; fi; \
	    echo "    (exit $$r): $$out"; \
	done; \
	exit $$fail

-include $(LAB_OBJS:.o=.d)
