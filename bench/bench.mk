# SPDX-License-Identifier: MIT
# bench/bench.mk - benchmark programs and the runner, included by the top Makefile.
#
#   make bench [QUICK=1] [THREADS=1,2,4,8] [BENCH_ONLY=regex] [BENCH_ALLOC=sefer,mimalloc]
#              [BENCH_CPU=auto|none|N] [PEERS=mi3=PATH,sn=PATH] [SEFER_B=sefer-nodf=PATH|none]
#       every workload and real program under sefer (the configured build), glibc, mimalloc,
#       mimalloc v3 and snmalloc (../shared/peers, or PEERS), and in the full mode jemalloc and
#       tcmalloc; SEFER_B adds a second sefer build as a column of its own. Without SEFER_B
#       (and without BENCH_ALLOC) that column is sefer-nodf, this configuration with
#       CONFIG_DEBUG_DOUBLE_FREE=n, built in $(objtree)/bench-nodf, so that the run judges
#       the double-free target too; SEFER_B=none leaves it out. Writes
#       bench/results/latest.{csv,md,png}
#   make bench-headline
#       steady churn + larson at 1 and 2 threads under glibc, mimalloc and sefer (~30 s)
#   make bench-progs
#       just build the programs into $(objtree)/bench/
#
# The programs are ordinary programs that call malloc: they are built with plain gcc, not
# with SEFER_CFLAGS, and the allocator under test is swapped in with LD_PRELOAD.

bench-names := bulk steady vecgrow larson mstress prodcons large larson-rounds randpos threadgen \
	bignum largewin bursts falseshare tgstress xfer coldfree peakrss
bench-progs := $(addprefix $(objtree)/bench/,$(bench-names))
BENCH_CC ?= gcc
BENCH_CFLAGS := -std=gnu11 -O2 -pthread -Wall -Wextra
BENCH_RUN := /usr/bin/python3 $(srctree)/bench/run.py --bindir $(objtree)/bench \
	--sefer $(shared-lib)
# make exports a variable given on its command line to every recipe's environment, and SEFER_B
# is in sefer's own option namespace: each benchmarked run under sefer warned "unknown option
# SEFER_B" and mapped ~100 KiB of cold text and data doing so (the peak-RSS rows of every run
# with SEFER_B before 2026-12-07). The runner gets it as --sefer-b, never in the environment.
unexport SEFER_B

$(objtree)/bench/%: $(srctree)/bench/%.c $(srctree)/bench/common.h
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC $(patsubst $(objtree)/%,%,$@)
	$(Q)$(BENCH_CC) $(BENCH_CFLAGS) -I$(srctree)/include -o $@ $< -ldl

# larson-rounds is built from larson_rounds.c
$(objtree)/bench/larson-rounds: $(srctree)/bench/larson_rounds.c $(srctree)/bench/common.h
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC $(patsubst $(objtree)/%,%,$@)
	$(Q)$(BENCH_CC) $(BENCH_CFLAGS) -I$(srctree)/include -o $@ $< -ldl

bench-progs: $(bench-progs)

# 'make bench' also runs bench-persist when a makefile defines it: persist/persist.mk hooks it
# in itself ("bench: bench-persist", so it runs first); if a definition appears without that
# hook (e.g. under bench/persist/), this recipe runs it afterwards.
persist-mks = $(wildcard $(srctree)/persist/persist.mk $(srctree)/bench/persist/*.mk)
bench-persist-defined = $(shell grep -qs '^bench-persist *:' $(persist-mks) && \
	! grep -qs '^bench *:.*bench-persist' $(persist-mks) && echo y)

# The second build make bench measures by default (above): the double-free target's reference
# (Documentation/benchmarks.rst, "Targets"). Only the shared library is built (7 s on two CPUs
# the first time, nothing after), from this .config with the one option changed.
bench-nodf-objtree := $(objtree)/bench-nodf
bench-nodf-lib := $(bench-nodf-objtree)/$(notdir $(shared-lib))
bench-second := $(if $(SEFER_B),$(filter-out none,$(SEFER_B)),$(if \
	$(BENCH_ALLOC)$(filter-out y,$(CONFIG_DEBUG_DOUBLE_FREE)),,sefer-nodf=$(bench-nodf-lib)))

$(bench-nodf-lib): $(KCONFIG_CONFIG) FORCE
	$(Q)mkdir -p $(bench-nodf-objtree)
	$(Q)KCONFIG_CONFIG=$(bench-nodf-objtree)/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		DEBUG_DOUBLE_FREE=n >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(bench-nodf-objtree) $@

bench: all $(bench-progs) $(if $(filter sefer-nodf=$(bench-nodf-lib),$(bench-second)),$(bench-nodf-lib))
	$(Q)$(BENCH_RUN) $(if $(QUICK),--quick) $(if $(THREADS),--threads $(THREADS)) \
		$(if $(BENCH_ONLY),--only '$(value BENCH_ONLY)') \
		$(if $(BENCH_ALLOC),--alloc $(BENCH_ALLOC)) $(if $(BENCH_CPU),--cpu $(BENCH_CPU)) \
		$(if $(PEERS),--peer '$(PEERS)') $(if $(bench-second),--sefer-b '$(bench-second)') \
		--out $(srctree)/bench/results
	$(Q)$(if $(bench-persist-defined),$(MAKE) -f $(srctree)/Makefile O=$(O) \
		$(if $(QUICK),QUICK=$(QUICK)) bench-persist)

bench-headline: all $(addprefix $(objtree)/bench/,steady larson)
	$(Q)$(BENCH_RUN) --headline

.PHONY: bench bench-headline bench-progs

# What a configuration change costs (Documentation/benchmarks.rst): this build (A) against B,
# this configuration with CONFIG_B's changes, built in $(objtree)/pair, on the small-object
# rows at 1 and 2 threads plus tgstress and xfer, PAIR_ROUNDS interleaved rounds (default 9,
# about 6 minutes on 2 CPUs). Prints each row's median time ratio A/B and its interval.
#   make bench-config-pair CONFIG_B=DEBUG_DOUBLE_FREE=n[,SYM=val...] [PAIR_ROUNDS=n]
#        [THREADS=1,2] [BENCH_ONLY=regex]
pair-objtree := $(objtree)/pair
bench-config-pair: all $(bench-progs)
	$(Q)test -n "$(CONFIG_B)" || { echo "sefer: bench-config-pair needs CONFIG_B=SYM=val" >&2; exit 1; }
	$(Q)mkdir -p $(pair-objtree)
	$(Q)KCONFIG_CONFIG=$(pair-objtree)/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		$(subst $(comma), ,$(CONFIG_B)) >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(pair-objtree) all
	$(Q)$(PYTHON) $(srctree)/bench/config_pair.py --bindir $(objtree)/bench \
		--a $(shared-lib) --b $(pair-objtree)/$(notdir $(shared-lib)) \
		--name-a this --name-b '$(CONFIG_B)' $(if $(PAIR_ROUNDS),--rounds $(PAIR_ROUNDS)) \
		$(if $(THREADS),--threads $(THREADS)) $(if $(BENCH_ONLY),--only '$(value BENCH_ONLY)') \
		--csv $(objtree)/bench/config-pair.csv
.PHONY: bench-config-pair

# First-class heaps against the thread's own heap (Documentation/heaps.rst): churn, allocation
# alone, and giving a million live blocks back by free against sefer_heap_destroy. Calls the
# sefer_* API, so it links libsefer.a instead of being preloaded.
heaps-cost-bin := $(objtree)/bench/heaps-cost
$(heaps-cost-bin): $(srctree)/bench/heaps_cost.c $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC $(patsubst $(objtree)/%,%,$@)
	$(Q)$(BENCH_CC) $(BENCH_CFLAGS) -I$(srctree)/include -o $@ $< $(static-lib) $(LDLIBS)
bench-heaps: $(heaps-cost-bin)
	$(Q)$(heaps-cost-bin)
.PHONY: bench-heaps
