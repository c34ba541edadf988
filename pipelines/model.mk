# pipelines/model.mk: a model to a runnable bundle, one rule per step:
# import, pack, split, verify, lower (one job per kernel, so make -jN
# lowers in parallel) and link.  A rebuild redoes only what changed:
# llm-import and llm-split leave unchanged files alone, llm-pack-weights
# reuses an up-to-date weights.bin, and llm-lower's content-addressed
# cache makes an identical kernel free, across builds too.
#
#   make -f pipelines/model.mk MODEL=checkpoint OUT=build-dir [STRATEGY=layer] [-jN]
#   make -f pipelines/model.mk MODEL=model.gguf OUT=build-dir ...
#   make -f pipelines/model.mk OUT=build-dir clean
#
# Variables:
#   MODEL         the Hugging Face checkpoint directory, or a GGUF file
#                 (a name ending in .gguf)
#   OUT           the build directory: model.json, weights.bin, parts/
#                 (llm-split), obj/ (llm-lower), libmodel.so, model.llm;
#                 once model.llm holds the weights, weights.bin goes (the
#                 tools read them from model.llm): a build holds them once
#   STRATEGY      llm-split's cut: none, layer (default) or stage
#   LLM           prefix of the llm-* programs, e.g. bin/ in the source
#                 tree (default: the bin/ beside this file's directory when
#                 it holds them, else from PATH)
#   IMPORT_FLAGS  options for llm-import (--dtype, --max-context, ...)
#   TARGET        the triple to compile for (llm-lower --target), e.g.
#                 riscv64-linux-gnu; empty: this host
#   CPU           the CPU to compile for (llm-lower --cpu, and llm-import
#                 --cpu: bf16 weights take bf16 activations by default
#                 where it has AVX512-BF16): x86-64-v3 (any
#                 AVX2 machine), x86-64-v4 (AVX-512), znver4, ...; empty:
#                 this host's ("native").  The bundle records the target
#                 and its ISA extensions; llm-run refuses it on a machine
#                 that lacks one.
#   FEATURES      ISA extensions added to or taken from CPU's, e.g.
#                 -avx512bf16 (llm-lower --features, and llm-import
#                 --features: the same default activations follow)
#   LOWER_FLAGS   other options for llm-lower (--tuning, ...)
#   RUN_FLAGS     options for llm-run in `make run`
#   V             V=1: print each step's command before it runs
#
# Each step prints one line when it is done: the program, what it made
# (under OUT) and the time it took, e.g. "llm-lower obj/decode/glue.o:
# 1.52 s"; make -s prints none.  A step that fails prints its own
# message, then make's line.
# GNU make: the parts list is read from the parts.mk that llm-split writes.

# This file, for the second make (below); the tools beside it by default.
THIS := $(lastword $(MAKEFILE_LIST))
LLM = $(if $(wildcard $(dir $(THIS))../bin/llm-import),$(abspath $(dir $(THIS))../bin)/)
STRATEGY = layer
IMPORT_FLAGS =
TARGET =
CPU =
FEATURES =
LOWER_FLAGS =
# the target: llm-lower's, and the one llm-import's default activations
# follow (bf16 weights)
IMPORT_TARGET = $(if $(TARGET),--target $(TARGET)) $(if $(CPU),--cpu $(CPU)) $(if $(FEATURES),--features $(FEATURES))
TARGET_FLAGS = $(IMPORT_TARGET) $(LOWER_FLAGS)
RUN_FLAGS = -p 'Once upon a time' -n 32
# What llm-import reads: the GGUF file itself, or the checkpoint's files.
ifneq ($(filter %.gguf,$(MODEL)),)
MODEL_INPUTS = $(MODEL)
else
MODEL_INPUTS = $(MODEL)/config.json $(wildcard $(MODEL)/*.safetensors $(MODEL)/*.json)
endif
P = $(OUT)/parts
V =

# $(call step,target,command): run a step and say how long it took
# (not under make -s).
quote = '$(subst ','\'',$(1))'
silent = $(findstring s,$(firstword -$(MAKEFLAGS)))
step = @$(if $(V),echo $(call quote,$(2)) && )t0=$$(date +%s%N) && $(2)$(if $(silent),, && \
	ms=$$((($$(date +%s%N) - t0) / 1000000)) && \
	printf '%s %s: %d.%02d s\n' $(notdir $(firstword $(2))) $(call quote,$(1:$(OUT)/%=%)) \
	    $$((ms / 1000)) $$((ms % 1000 / 10)))

# Two makes: this one imports (so that a failing llm-import is the last
# thing said), then a second one, which reads the parts list llm-split
# makes from model.json, builds the rest.
all: $(OUT)/model.json
	@$(MAKE) --no-print-directory -f $(THIS) bundle

bundle: $(OUT)/model.llm

ifeq ($(strip $(OUT)),)
$(error model.mk: set MODEL (checkpoint) and OUT (build directory))
endif
# (make clean needs OUT only)
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(strip $(MODEL)),)
$(error model.mk: set MODEL (checkpoint) and OUT (build directory))
endif
ifeq ($(wildcard $(MODEL)),)
$(error model.mk: MODEL=$(MODEL): no such file or directory)
endif
ifeq ($(filter %.gguf,$(MODEL))$(wildcard $(MODEL)/config.json),)
$(error model.mk: MODEL=$(MODEL): no config.json: give a Hugging Face checkpoint directory or a .gguf file)
endif
ifeq ($(shell command -v $(LLM)llm-import 2>/dev/null),)
$(error model.mk: $(LLM)llm-import: not found: build the tools (make) or set LLM to the prefix of the llm-* programs)
endif
endif

# llm-import writes model.json last, after the phases: it stands for all.
$(OUT)/model.json: $(MODEL_INPUTS)
	$(call step,$@,$(strip $(LLM)llm-import $(IMPORT_TARGET) $(IMPORT_FLAGS)) -o $(OUT) $(MODEL))

# llm-pack-weights leaves up-to-date weights alone: weights.bin, or after
# a link model.llm's, which llm-link copies into the next bundle; the
# stamp records that they were checked, and weights.json, rewritten with
# the weights only, says when the bundle must be linked again.  With
# neither weights.bin nor model.llm (both deleted) they are packed again.
$(OUT)/weights.stamp: $(OUT)/model.json $(if $(wildcard $(OUT)/weights.bin $(OUT)/model.llm),,FORCE)
	$(call step,$(OUT)/weights.bin,$(LLM)llm-pack-weights $(OUT)/model.json)
	@touch $@

$(OUT)/weights.json: $(OUT)/weights.stamp

# The split depends on the strategy too: a stamp file per strategy.
$(P)/strategy.$(STRATEGY):
	@mkdir -p $(P)
	@rm -f $(P)/strategy.*
	@touch $@

$(P)/parts.mk: $(OUT)/model.json $(P)/strategy.$(STRATEGY)
	$(call step,$(P)/,$(LLM)llm-split -s $(STRATEGY) -o $(P) $(OUT)/model.json$(if $(silent), >/dev/null))
	@touch $@

$(P)/verify.json: $(P)/parts.mk
	$(call step,$@,$(LLM)llm-verify-partition -q --report $@ $(P)/partition.json)

ifneq ($(wildcard $(OUT)/model.json),)
-include $(P)/parts.mk
endif

OBJS = $(LLM_PARTS:%=$(OUT)/obj/%.o)

# The objects depend on what they are lowered for: a stamp rewritten (as
# the makefile is read, so that an unchanged build stays "Nothing to be
# done") only when TARGET, CPU or LOWER_FLAGS change.
TARGET_STAMP = $(OUT)/obj/target.flags
ifeq ($(wildcard $(TARGET_STAMP)),)
WRITE_STAMP = 1
else ifneq ($(file <$(TARGET_STAMP)),$(strip $(TARGET_FLAGS)))
WRITE_STAMP = 1
endif
ifdef WRITE_STAMP
$(shell mkdir -p $(OUT)/obj)
$(file >$(TARGET_STAMP),$(strip $(TARGET_FLAGS)))
endif

$(OUT)/obj/%.o: $(P)/%.mlir $(TARGET_STAMP) | $(P)/verify.json
	@mkdir -p $(@D)
	$(call step,$@,$(LLM)llm-lower $(TARGET_FLAGS) -o $@ $<)

# The bundle holds the weights: weights.bin goes once it is written.
$(OUT)/model.llm: $(OBJS) $(OUT)/weights.json
	$(call step,$@,$(LLM)llm-link $(OUT) $(OBJS))
	@rm -f $(OUT)/weights.bin

# What the steps wrote in OUT (llm-import: model.json, its phases and the
# tokenizer files; the rest by name), and OUT itself when that leaves it
# empty; nothing else of OUT.
clean:
	rm -rf $(P) $(OUT)/obj
	rm -f $(addprefix $(OUT)/,model.json decode.mlir prefill.mlir prefill_kv.mlir embed.mlir target.json \
	    tokenizer.json tokenizer_config.json chat_template.jinja special_tokens_map.json \
	    weights.bin weights.json weights.stamp libmodel.so model.llm)
	-@rmdir $(OUT) 2>/dev/null || true

run: all
	$(LLM)llm-run -m $(OUT)/model.llm $(RUN_FLAGS)

FORCE:

.PHONY: all bundle run clean FORCE
.DELETE_ON_ERROR:
