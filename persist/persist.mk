# SPDX-License-Identifier: MIT
# persist/: tests, fuzzing, the crash loop, the benchmark and the sefer-pstore CLI.
#
#   make check-persist          unit tests, bad files, the CLI (part of 'make check')
#   make check-persist-crash    simulated power cuts, injected faults, >= 200 SIGKILLs
#   make check-persist-fuzz     libFuzzer over operation streams (clang), FUZZ_TIME=20 s
#   make crashtest N=5000       the kill loop alone, N crashes
#   make bench-persist [QUICK=1] segregated vs first-fit vs best-fit vs PMDK libpmemobj
#
# Test programs link the persist and backend objects directly (not libsefer.a), so they
# build and run whatever state the core is in. PERSIST_TMP (default $(objtree)/ptmp) holds
# the store files: a real file system, real fdatasync.

ifeq ($(CONFIG_PERSIST),y)

persist-objs := $(filter $(objtree)/persist/%,$(lib-objs))
persist-os-objs := $(filter $(objtree)/backends/%,$(lib-objs))
persist-dep-objs := $(persist-objs) $(persist-os-objs)
PERSIST_TMP ?= $(objtree)/ptmp
PERSIST_CFLAGS := -std=gnu11 -O2 -g $(WARN) -Wno-missing-prototypes -pthread \
	-I$(srctree)/include -I$(srctree) -I$(objtree)/include \
	-include $(objtree)/include/generated/autoconf.h $(ASAN_FLAGS) $(EXTRA_CFLAGS)
# CONFIG_FAULT_INJECTION: core/fault.c's sefer__os is not linked here; use the backend's own
PERSIST_CFLAGS += $(if $(filter y,$(CONFIG_FAULT_INJECTION)),-Wl$(comma)--defsym=sefer__os=sefer__os_backend)
PERSIST_CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
PERSIST_CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

ptest-srcs := $(wildcard $(srctree)/selftest/persist/test_*.c) $(srctree)/selftest/persist/model.c
ptest-bin := $(objtree)/selftest/persist/persist-test
pstore-cli := $(objtree)/sefer-pstore
pfuzz-bin := $(objtree)/selftest/persist/persist-fuzz
pbench-bin := $(objtree)/bench/persist/pbench

$(ptest-bin): $(ptest-srcs) $(wildcard $(srctree)/selftest/persist/*.h) $(persist-dep-objs)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/persist/persist-test
	$(Q)$(CC) $(PERSIST_CFLAGS) $(PERSIST_CHECK_CFLAGS) -I$(srctree)/selftest/persist -o $@ \
		$(ptest-srcs) $(persist-dep-objs) $(PERSIST_CHECK_LIBS) -lpthread

$(pstore-cli): $(srctree)/persist/tool.c $(persist-dep-objs)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC sefer-pstore
	$(Q)$(CC) $(PERSIST_CFLAGS) -o $@ $< $(persist-dep-objs) -lpthread

# The fuzzer compiles the persist sources again with clang and the sanitizers.
pfuzz-srcs := $(patsubst $(objtree)/%.o,$(srctree)/%.c,$(persist-dep-objs)) \
	$(srctree)/selftest/persist/fuzz.c $(srctree)/selftest/persist/model.c
$(pfuzz-bin): $(pfuzz-srcs)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CLANG selftest/persist/persist-fuzz
	$(Q)clang -std=gnu11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(srctree)/include -I$(srctree) -I$(objtree)/include -I$(srctree)/selftest/persist \
		-include $(objtree)/include/generated/autoconf.h -o $@ $(pfuzz-srcs) -lpthread

$(pbench-bin): $(srctree)/bench/persist/pbench.c $(persist-dep-objs)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC bench/persist/pbench
	$(Q)$(CC) $(PERSIST_CFLAGS) -o $@ $< $(persist-dep-objs) -lpmemobj -lpthread -lm

# 'make' builds the CLI with the libraries; 'make install' installs it.
all: $(pstore-cli)

persist-bins: $(ptest-bin) $(pstore-cli) $(pbench-bin)
.PHONY: persist-bins
# check-warnings builds test-bins with -Werror under gcc and clang: include these.
test-bins: persist-bins

check-targets += check-persist check-persist-crash check-persist-fuzz

check-persist: $(ptest-bin) $(pstore-cli)
	$(Q)mkdir -p $(PERSIST_TMP)
	$(Q)PERSIST_TMP=$(PERSIST_TMP) PERSIST_SUITE=units $(ptest-bin)
	$(Q)PERSIST_TMP=$(PERSIST_TMP) PERSIST_SUITE=badfile $(ptest-bin)
	$(Q)sh $(srctree)/selftest/persist/cli-test.sh $(pstore-cli) $(PERSIST_TMP) $(ptest-bin)

check-persist-crash: $(ptest-bin)
	$(Q)mkdir -p $(PERSIST_TMP)
	$(Q)PERSIST_TMP=$(PERSIST_TMP) PERSIST_SUITE=crash $(ptest-bin)

FUZZ_TIME ?= 20
check-persist-fuzz: $(pfuzz-bin)
	$(Q)mkdir -p $(PERSIST_TMP)/fuzz-corpus
	$(Q)cd $(PERSIST_TMP) && if PERSIST_TMP=$(PERSIST_TMP) $(pfuzz-bin) \
		-max_total_time=$(FUZZ_TIME) -max_len=512 -print_final_stats=1 \
		$(PERSIST_TMP)/fuzz-corpus > fuzz.log 2>&1; then \
		grep -E '^Done|stat::number_of_executed_units|stat::peak_rss' fuzz.log; \
		echo "persist-fuzz: no failure in $(FUZZ_TIME) s"; \
	else tail -40 fuzz.log; exit 1; fi

N ?= 2000
crashtest: $(ptest-bin)
	$(Q)mkdir -p $(PERSIST_TMP)
	$(Q)PERSIST_TMP=$(PERSIST_TMP) PERSIST_SUITE=crash PERSIST_KILLS=$(N) PERSIST_SIMS=$(N) \
		$(ptest-bin)

bench-persist: $(pbench-bin)
	$(Q)mkdir -p $(PERSIST_TMP) $(srctree)/bench/results
	$(Q)$(pbench-bin) $(if $(QUICK),--quick) --dir $(PERSIST_TMP) \
		--out $(srctree)/bench/results/persist-latest
	$(Q)$(PYTHON) $(srctree)/bench/persist/plot.py $(srctree)/bench/results/persist-latest.csv \
		$(srctree)/bench/results/persist-latest.png || echo "plot skipped"

# 'make bench' runs the persist benchmark as well; 'make bench QUICK=1' leaves it to
# 'make bench-persist QUICK=1': its 48 cells of fdatasync-bound runs take about 2 minutes
# (2:12 on the 2-vCPU VM on 2026-12-06), a third of the QUICK allocator run's 6-minute budget.
bench: $(if $(QUICK),,bench-persist)

.PHONY: check-persist check-persist-crash check-persist-fuzz crashtest bench-persist

endif
