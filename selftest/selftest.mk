# SPDX-License-Identifier: MIT
# 'make check': every test group is a check-<name> target appended to check-targets (by this
# file, persist/persist.mk, ...). The driver runs each group, keeps going past failures, and
# ends with the line "N passed, N failed"; it fails if any group failed.

check-targets :=
TEST_RUNNER ?= $(call unquote,$(CONFIG_TEST_RUNNER))
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
TEST_CFLAGS := -std=gnu11 -O2 -g $(WARN) -Wno-missing-prototypes -I$(srctree)/include \
	-I$(srctree) -I$(objtree)/include -include $(objtree)/include/generated/autoconf.h \
	$(ASAN_FLAGS) $(EXTRA_CFLAGS)
TEST_LDLIBS := $(static-lib) $(LDLIBS) $(EXTRA_LDFLAGS)

# the core's suites, and each policy's beside its policy (policy-tests, Makefile)
unit-srcs := $(wildcard $(srctree)/selftest/unit/*.c) \
	$(foreach d,$(policy-tests),$(srctree)/$(d)/test_$(notdir $(d)).c)
unit-bin := $(objtree)/selftest/unit/sefer-unit
stress-bin := $(objtree)/selftest/stress/stress

$(unit-bin): $(unit-srcs) $(wildcard $(srctree)/selftest/unit/*.h) $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/unit/sefer-unit
	$(Q)$(CC) $(TEST_CFLAGS) $(CHECK_CFLAGS) -o $@ $(unit-srcs) $(TEST_LDLIBS) $(CHECK_LIBS)

$(stress-bin): $(srctree)/selftest/stress/stress.c $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/stress/stress
	$(Q)$(CC) $(TEST_CFLAGS) -pthread -o $@ $< $(TEST_LDLIBS)

test-bins: $(unit-bin) $(stress-bin)
.PHONY: test-bins

# ---- the groups
# check-unit runs the binary twice: each test in a child of its own (Check's fork mode), then
# every test in one process (CK_FORK=no; 13 s on the 2-vCPU VM, 34 s with the machine loaded):
# each test must pass after the others too, not only in a fresh process (the suites of thread
# exits and purges start from selftest/unit/fresh_state.c's fixture). In that second run a
# failing test may leave blocks behind for the next: read the first failure.
check-targets += check-unit
check-unit: $(unit-bin)
	$(Q)$(TEST_RUNNER) $(unit-bin)
	$(Q)CK_FORK=no $(TEST_RUNNER) $(unit-bin)

check-targets += check-stress
check-stress: $(stress-bin)
	$(Q)$(TEST_RUNNER) $(stress-bin) 4 100000 3


# A configuration far from the defconfig and from its hardened form, for the groups that build
# one more (check-tsan-variant, check-malloc-fuzz-variant): no free marks (DEBUG_DOUBLE_FREE=n:
# the free lists say which blocks are free), 2 MiB segments of 32 KiB pages, guard pages, no
# large-object cache, no segment cache, a two-deep fastbin, MADV_FREE purges, no calloc
# prefault, the call counters.
variant-config := DEBUG_DOUBLE_FREE=n SEGMENT_SHIFT=21 PAGE_SHIFT=15 GUARD_PAGES=y \
	POLICY_LARGE_CACHE=n SEGMENT_CACHE=0 POLICY_FASTBIN=y FASTBIN_DEPTH=2 PURGE_FREE=y \
	CALLOC_PREFAULT_KB=0 STATS_CALLS=y

# ---- sanitizers: the core built by clang with ASan, TSan or UBSan (malloc face off, since the
# sanitizer runtime owns malloc), running the unit suites and the stress test on sefer_*; TSan
# also with liburcu's registry (tsan-urcu) and in the variant configuration (tsan-variant).
# check-tsan runs with CONFIG_DEBUG_CORE: the core's assertions and the lock-order witness
# under the threads of the stress test and the unit suites.
# The process suite (fork, RLIMIT_AS, exec'd children) runs in the plain and UBSan builds only:
# ASan's shadow memory does not fit a 512 MiB address-space limit and TSan does not support
# fork from a threaded process.
san-cflags-asan := -fsanitize=address -fno-omit-frame-pointer
san-cflags-tsan := -fsanitize=thread
san-cflags-tsan-urcu := -fsanitize=thread
san-cflags-tsan-variant := -fsanitize=thread
san-cflags-ubsan := -fsanitize=undefined -fno-sanitize-recover=undefined
san-config-asan := MALLOC_FACE=n SYNC_C11=y SANITIZE_ADDRESS=y
san-config-tsan := MALLOC_FACE=n SYNC_C11=y DEBUG_CORE=y
san-config-tsan-urcu := MALLOC_FACE=n SYNC_URCU=y
san-config-tsan-variant := MALLOC_FACE=n SYNC_C11=y $(variant-config)
san-config-ubsan := MALLOC_FACE=n
# liburcu-bp places its reader records (declared 128-byte aligned) at 32-byte offsets in its
# arena; UBSan flags every inlined read lock. That is liburcu's, so the alignment check is off
# for the one file that inlines it.
san-urcu-cflags-ubsan := -fno-sanitize=alignment
san-exclude-asan := process
san-exclude-tsan := process
san-exclude-tsan-urcu := process
san-exclude-tsan-variant := process
san-exclude-ubsan :=
sanitizers := asan tsan tsan-urcu tsan-variant ubsan

ifeq ($(CONFIG_SELFTEST_SANITIZERS),y)
check-targets += $(addprefix check-,$(sanitizers))
endif
$(addprefix check-,$(sanitizers)): check-%:
	$(Q)mkdir -p $(objtree)/san-$*
	$(Q)KCONFIG_CONFIG=$(objtree)/san-$*/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		$(san-config-$*) PERSIST=n SELFTEST_SANITIZERS=n >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(objtree)/san-$* CC=clang \
		EXTRA_CFLAGS="$(san-cflags-$*) -g" EXTRA_LDFLAGS="$(san-cflags-$*)" \
		CFLAGS_sync_urcu.o="$(san-urcu-cflags-$*)" test-bins
	$(Q)cd $(objtree)/san-$* && export SEFER_TEST_SKIP="$(san-exclude-$*)" \
		TSAN_OPTIONS="halt_on_error=1 $(if $(findstring urcu,$*),suppressions=$(srctree)/selftest/tsan-urcu.supp)" \
		ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 && \
		./selftest/unit/sefer-unit && ./selftest/stress/stress 4 30000 2

# ---- malloc fuzzer: libFuzzer over streams of sefer_* calls (selftest/fuzz/malloc_fuzz.c) with
# ASan and UBSan, FUZZ_TIME seconds (default 20), counted from the start: libFuzzer replays the
# whole corpus first (17-33 s here, by configuration), so that in `make check` the group is a
# replay of the corpus and a few seconds of new inputs or none (Documentation/debugging.rst);
# the last line says how many inputs were replayed and how many new ones ran. The core is
# built again by clang in $(objtree)/mfuzz with the malloc face off (ASan owns malloc),
# sefer's ASan poisoning (CONFIG_SANITIZE_ADDRESS: a harness or sefer access to a byte no live
# block gives the program is reported) and the fuzzer's coverage instrumentation, so the fuzzer steers by sefer's own
# branches. The thread registry is the configuration's (liburcu's in the defconfig; its inlined
# read lock without UBSan's alignment check, as in check-ubsan). The seeds in
# selftest/fuzz/corpus and the distilled corpus of longer runs (selftest/fuzz/distilled.b64,
# unpacked by scripts/fuzz_corpus.py) are read first; what the fuzzer finds goes to
# $(objtree)/mfuzz/corpus. malloc-fuzz-distill merges that into distilled.b64 (libFuzzer
# -merge=1 keeps the inputs that add coverage): run it after a long run, then commit the file.
FUZZ_TIME ?= 20
mfuzz-dir := $(objtree)/mfuzz
mfuzz-bin := $(mfuzz-dir)/malloc-fuzz
mfuzz-distilled := $(srctree)/selftest/fuzz/distilled.b64
mfuzz-corpus-py := /usr/bin/python3 -B $(srctree)/scripts/fuzz_corpus.py
mfuzz-san := -fsanitize=address,undefined -fno-sanitize-recover=all
# sefer's ASan poisoning needs the free marks (core/Kconfig): a configuration without them (the
# variant below) is fuzzed without it, judged by the harness's patterns and sefer_check_heap().
mfuzz-poison := SANITIZE_ADDRESS=$(if $(CONFIG_DEBUG_DOUBLE_FREE),y,n)
ifeq ($(CONFIG_SELFTEST_SANITIZERS),y)
check-targets += check-malloc-fuzz check-malloc-fuzz-hardened check-malloc-fuzz-variant
endif
malloc-fuzz:
	$(Q)mkdir -p $(mfuzz-dir)/corpus
	$(Q)KCONFIG_CONFIG=$(mfuzz-dir)/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		MALLOC_FACE=n $(mfuzz-poison) PERSIST=n SELFTEST_SANITIZERS=n >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(mfuzz-dir) CC=clang \
		EXTRA_CFLAGS="-fsanitize=fuzzer-no-link $(mfuzz-san) -g" \
		EXTRA_LDFLAGS="$(mfuzz-san)" CFLAGS_sync_urcu.o="$(san-urcu-cflags-ubsan)" \
		$(mfuzz-dir)/libsefer.a
	$(quiet) CLANG mfuzz/malloc-fuzz
	$(Q)clang -std=gnu11 -O1 -g -fsanitize=fuzzer $(mfuzz-san) $(WARN) -I$(srctree)/include \
		$(if $(filter y,$(CONFIG_FAULT_INJECTION)),-DMALLOC_FUZZ_FAULTS -I$(srctree)) \
		-o $(mfuzz-bin) $(srctree)/selftest/fuzz/malloc_fuzz.c $(mfuzz-dir)/libsefer.a \
		$$($(MAKE) -s --no-print-directory -f $(srctree)/Makefile O=$(mfuzz-dir) ldlibs)
check-malloc-fuzz: malloc-fuzz
	$(Q)$(mfuzz-corpus-py) unpack $(mfuzz-distilled) $(mfuzz-dir)/distilled
	$(Q)cd $(mfuzz-dir) && if UBSAN_OPTIONS=print_stacktrace=1 $(MFUZZ_ENV) $(mfuzz-bin) \
		-max_total_time=$(FUZZ_TIME) -max_len=1024 -print_final_stats=1 \
		corpus $(srctree)/selftest/fuzz/corpus distilled > fuzz.log 2>&1; then \
		grep -E '^Done|INITED|stat::number_of_executed_units|stat::peak_rss|faults injected' \
			fuzz.log; \
		awk '/INITED/ && init == "" { init = substr($$1, 2) } /^Done/ { runs = $$2; secs = $$5 } \
		     END { printf "malloc-fuzz: no failure: %s corpus inputs replayed, then %d new" \
			   " inputs fuzzed, in %s s (FUZZ_TIME=$(FUZZ_TIME); the replay counts in it)\n", \
			   init, runs - init, secs }' fuzz.log; \
	else tail -40 fuzz.log; exit 1; fi
# The same, FUZZ_TIME seconds, in two more configurations built from this one in
# $(objtree)/fuzz-<name>, from the same seeds: hardened (shuffled free lists, encoded links,
# the sized frees' contract) with the fastbin policy on, paths the defconfig's run never
# takes; and the variant (variant-config, above, with the C11 registry and CONFIG_DEBUG_CORE:
# every input also runs the core's assertions), without free marks and so without ASan
# poisoning, whose first 12-minute run found the poisoning's false report that made
# SANITIZE_ADDRESS depend on the marks.
# And faults (CONFIG_FAULT_INJECTION, Documentation/debugging.rst): every OS op the core calls
# fails at random, SEFER_FAIL_PROBABILITY percent of the calls (map: segments, large blocks, heap
# structs; remap: large realloc and the large cache's re-place; purge; populate), and the
# harness takes NULL with ENOMEM from a call that met a fault, and nothing else; its last line
# counts the faults and the outcomes. Budget: 60 s (build about 35 s, FUZZ_TIME 20 s).
mfuzz-config-hardened := HARDENED=y POLICY_FASTBIN=y
mfuzz-config-variant := $(variant-config) SYNC_C11=y DEBUG_CORE=y
mfuzz-config-faults := FAULT_INJECTION=y
mfuzz-env-faults := SEFER_FAIL_OPS=all SEFER_FAIL_PROBABILITY=10 SEFER_FAIL_SEED=45
ifeq ($(CONFIG_SELFTEST_SANITIZERS),y)
check-targets += check-malloc-fuzz-faults
endif
check-malloc-fuzz-hardened check-malloc-fuzz-variant check-malloc-fuzz-faults: check-malloc-fuzz-%:
	$(Q)mkdir -p $(objtree)/fuzz-$*
	$(Q)KCONFIG_CONFIG=$(objtree)/fuzz-$*/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		$(mfuzz-config-$*) >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(objtree)/fuzz-$* MFUZZ_ENV="$(mfuzz-env-$*)" \
		check-malloc-fuzz
malloc-fuzz-distill: malloc-fuzz
	$(Q)$(mfuzz-corpus-py) unpack $(mfuzz-distilled) $(mfuzz-dir)/distilled
	$(Q)rm -rf $(mfuzz-dir)/merged && mkdir -p $(mfuzz-dir)/merged
	$(Q)cd $(mfuzz-dir) && $(mfuzz-bin) -merge=1 -max_len=1024 merged distilled corpus \
		$(srctree)/selftest/fuzz/corpus > merge.log 2>&1 || { tail -20 merge.log; exit 1; }
	$(Q)grep MERGE-OUTER: $(mfuzz-dir)/merge.log | tail -1
	$(Q)$(mfuzz-corpus-py) pack $(mfuzz-dir)/merged $(mfuzz-distilled)
.PHONY: malloc-fuzz malloc-fuzz-distill check-malloc-fuzz-hardened check-malloc-fuzz-variant \
	check-malloc-fuzz-faults

# ---- build system: defconfig round trips, strict Kconfig errors, menuconfig, incremental builds
# The groups whose scripts run make themselves are '+' recipes: under 'make -jN check' they get
# the jobserver, so their makes build in parallel and print no jobserver warning (which
# check-config's "an unchanged configuration rebuilds nothing" would count as output).
check-targets += check-config
check-config:
	+$(Q)bash $(srctree)/selftest/config/check-config.sh $(srctree) $(objtree)/check-config

# ---- one source of truth for the options: Documentation/kconfig.rst's option reference is
# written from the Kconfig help texts (scripts/kconfig_doc.py). make kconfig-doc rewrites it in
# place; check-kconfig-doc (under a second) regenerates it and fails with the diff when the
# committed file drifted from the Kconfig files.
kconfig-doc := /usr/bin/python3 -B $(srctree)/scripts/kconfig_doc.py
kconfig-doc:
	$(Q)$(kconfig-doc) update $(srctree)/Documentation/kconfig.rst
check-targets += check-kconfig-doc
check-kconfig-doc:
	$(Q)$(kconfig-doc) check $(srctree)/Documentation/kconfig.rst
.PHONY: kconfig-doc check-kconfig-doc

# ---- warning-free under gcc and clang (-Wall -Wextra plus the project's warnings, as errors);
# then what text the clang library maps under a small program, as check-face asserts for the
# configured one (hot-text-clang, selftest/dropin/dropin.mk)
check-targets += check-warnings
check-warnings:
	$(Q)for cc in gcc clang; do \
		mkdir -p $(objtree)/warn-$$cc && cp $(KCONFIG_CONFIG) $(objtree)/warn-$$cc/.config && \
		$(MAKE) -f $(srctree)/Makefile O=$(objtree)/warn-$$cc CC=$$cc EXTRA_CFLAGS=-Werror \
			all test-bins decommit-tools >/dev/null || exit 1; echo "ok   $$cc: no warnings"; done
	$(if $(hot-text-clang),$(Q)$(hot-text-clang))

# ---- sparse (make C=2, Documentation/debugging.rst): the library sources of this configuration
# and of the other Linux ones (the alternate defconfigs, allyesconfig, the C11 registry, and
# aarch64 through its cross compiler), each built from scratch with C=2 in
# $(objtree)/sparse-<name>. sparse exits 0 on warnings, so the
# group reads its output: any "warning:" or "error:" line fails it. Without sparse it says so
# and fails (scripts/install-deps installs it).
sparse-configs := current linux_min hardened small_segments allyesconfig sync_c11 aarch64
ifeq ($(CONFIG_BACKEND_LINUX),y)
check-targets += check-sparse
endif
check-sparse:
	$(Q)command -v $(CHECK) >/dev/null || \
		{ echo "check-sparse: no $(CHECK) (scripts/install-deps installs it)"; exit 1; }
	$(Q)bad=0; for c in $(sparse-configs); do \
		d=$(objtree)/sparse-$$c; rm -rf $$d; mkdir -p $$d; \
		case $$c in \
		current) cp $(KCONFIG_CONFIG) $$d/.config ;; \
		allyesconfig) KCONFIG_CONFIG=$$d/.config $(KCONFIG) allyesconfig >/dev/null ;; \
		sync_c11) KCONFIG_CONFIG=$$d/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
			SYNC_C11=y >/dev/null ;; \
		*) KCONFIG_CONFIG=$$d/.config $(KCONFIG) defconfig \
			$(srctree)/configs/$${c}_defconfig >/dev/null ;; \
		esac || exit 1; \
		$(MAKE) -f $(srctree)/Makefile O=$$d C=2 CHECK=$(CHECK) all > $$d/sparse.log 2>&1; \
		st=$$?; n=$$(grep -c 'CHECK ' $$d/sparse.log); \
		if [ $$st -ne 0 ] || grep -qE ': (warning|error):' $$d/sparse.log; then \
			grep -vE '^  (CC|CHECK|AR|LD|MAN) ' $$d/sparse.log; \
			echo "FAIL $$c: sparse warnings in $$n files checked"; bad=1; \
		else echo "ok   $$c: $$n files, no sparse warning"; fi; \
	done; exit $$bad
.PHONY: check-sparse

# ---- the naming rule (Documentation/architecture.rst, "Names"; selftest/symbols/
# check-symbols.sh): nm over libsefer.a, libsefer.so's dynamic table and the compiled
# amalgamation of linux_defconfig, linux_min, hardened and all policies on (check-policies'
# all-on set) finds no global symbol but the API, the malloc face and sefer__*; a program with
# its own report_error, parse_size, page_find and options_init links against libsefer.a and the
# amalgamation and calls its own. Budget: 60 s on the 2-core machine.
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-symbols
endif
check-symbols:
	+$(Q)bash $(srctree)/selftest/symbols/check-symbols.sh $(srctree) $(objtree)/symbols \
		"$(pol-set-all-on)"

# ---- alternate configurations run the whole unit suite and the stress test
alt-configs := linux_min hardened small_segments
ifeq ($(CONFIG_BACKEND_LINUX),y)
check-targets += $(addprefix check-config-,$(alt-configs))
endif
$(addprefix check-config-,$(alt-configs)): check-config-%:
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(objtree)/cfg-$* $*_defconfig >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(objtree)/cfg-$* all test-bins >/dev/null
	$(Q)$(objtree)/cfg-$*/selftest/unit/sefer-unit && $(objtree)/cfg-$*/selftest/stress/stress 4 50000 2

# ---- fault injection (CONFIG_FAULT_INJECTION, core/fault.c, Documentation/debugging.rst):
# this configuration built again in $(objtree)/cfg-faults with the option, and in
# cfg-faults-guard with guard pages as well (their protect calls; without guard pages the
# large blocks' remap runs instead). check-unit-faults: the fault suite (one test per OS op,
# selftest/unit/test_fault.c) in both. check-stress-faults: the stress test in both with
# fault-env (every op the core calls fails at random, 10% of the calls), where an allocation may
# only fail with NULL and ENOMEM under an injected fault, a failed realloc keeps its block, and
# sefer_check_heap() is clean at the end; it prints the faults and outcomes. Budgets: 60 s each
# (the builds about 40 s of it, shared by the two groups).
fault-configs := faults faults-guard
fault-config-faults := FAULT_INJECTION=y
fault-config-faults-guard := FAULT_INJECTION=y GUARD_PAGES=y
fault-env := SEFER_FAIL_OPS=all SEFER_FAIL_PROBABILITY=10 SEFER_FAIL_SEED=45
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-unit-faults check-stress-faults
endif
fault-builds:
	+$(Q)for c in $(fault-configs); do \
		d=$(objtree)/cfg-$$c; mkdir -p $$d; \
		case $$c in faults) set="$(fault-config-faults)";; \
			*) set="$(fault-config-faults-guard)";; esac; \
		KCONFIG_CONFIG=$$d/.config.new $(KCONFIG) set $(KCONFIG_CONFIG) $$set >/dev/null && \
		{ cmp -s $$d/.config.new $$d/.config || mv $$d/.config.new $$d/.config; } && \
		rm -f $$d/.config.new && \
		$(MAKE) -f $(srctree)/Makefile O=$$d $$d/selftest/unit/sefer-unit \
			$$d/selftest/stress/stress >/dev/null || exit 1; \
	done
check-unit-faults: fault-builds
	$(Q)for c in $(fault-configs); do echo "cfg-$$c:"; \
		CK_RUN_SUITE=fault $(objtree)/cfg-$$c/selftest/unit/sefer-unit || exit 1; done
check-stress-faults: fault-builds
	$(Q)for c in $(fault-configs); do echo "cfg-$$c:"; \
		$(fault-env) $(objtree)/cfg-$$c/selftest/stress/stress 4 50000 3 || exit 1; done
.PHONY: fault-builds

# ---- options compose (selftest/randconfig/check-randconfig.sh): configurations of the host's
# backend, -Werror, the unit suite and a short stress test on each. check-randconfig: N random
# ones (default 4; N=k on the command line), gcc and clang alternating, KCONFIG_SEED=s starts
# the seeds at s; without N or SECS on the command line no configuration starts after 30 s
# (make check's time budget: 1 on the 2-core CI machine, a fresh seed each run; SECS=0 lifts
# it). check-allconfig: allnoconfig (gcc) and allyesconfig (clang).
rc-n := $(if $(filter command line,$(origin N)),$(N),4)
rc-secs := $(if $(filter command line,$(origin SECS)),$(SECS),$(if $(filter command line,$(origin N)),0,30))
rc-backend := $(firstword $(foreach b,LINUX DARWIN WIN32,$(if $(CONFIG_BACKEND_$(b)),BACKEND_$(b))))
ifeq ($(CONFIG_BACKEND_LINUX),y)
check-targets += check-allconfig check-randconfig
endif
check-randconfig:
	+$(Q)bash $(srctree)/selftest/randconfig/check-randconfig.sh $(srctree) \
		$(objtree)/randconfig $(rc-backend) rand $(rc-n) $(rc-secs)
check-allconfig:
	+$(Q)bash $(srctree)/selftest/randconfig/check-randconfig.sh $(srctree) \
		$(objtree)/allconfig $(rc-backend) all

# ---- a policy plugs in without an edit under core/: a throwaway one, in a copy of the tree
ifeq ($(CONFIG_BACKEND_LINUX),y)
check-targets += check-newpolicy
endif
check-newpolicy:
	+$(Q)bash $(srctree)/selftest/newpolicy/check-newpolicy.sh $(srctree)

# ---- decommit, a core mechanism (core/purge.c, core/span.c, core/unowned.c): its workload and
# its measuring program live here, next to its unit test (Documentation/decommit.rst).
#   make decommit-measure     RSS curves of selftest/decommit/rss_curve.c under glibc,
#                             mimalloc and sefer (LD_PRELOAD), one run each
rss-curve-bin := $(objtree)/selftest/decommit/rss_curve
$(rss-curve-bin): $(srctree)/selftest/decommit/rss_curve.c $(srctree)/selftest/decommit/workload.h \
		$(srctree)/selftest/proc_rss.h
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/decommit/rss_curve
	$(Q)$(CC) -std=gnu11 -O2 -pthread $(WARN) -Wno-missing-prototypes -I$(srctree) \
		$(EXTRA_CFLAGS) -o $@ $<
decommit-tools: $(rss-curve-bin)
decommit-measure: all $(rss-curve-bin)
	@echo "== decommit (RSS in MiB)"
	$(Q)for a in glibc mimalloc sefer; do \
		case $$a in glibc) p=;; mimalloc) p=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2;; \
		sefer) p=$(shared-lib);; esac; \
		echo "-- $$a"; LD_PRELOAD=$$p $(rss-curve-bin); done
.PHONY: decommit-tools decommit-measure

# ---- real programs under LD_PRELOAD
ifeq ($(CONFIG_SELFTEST_REAL_PROGRAMS),y)
check-targets += check-real
endif
check-real: $(shared-lib)
	$(Q)bash $(srctree)/selftest/real/check-real.sh $(shared-lib) $(objtree)/check-real

# ---- secure execution: a setuid-root program run by nobody ignores SEFER_ON_ERROR=warn and the
# other options that weaken a check, print or raise a limit (core/options.c). Linked with
# libsefer.a: ld.so ignores LD_PRELOAD in a setuid program. Needs root; skips without it.
secure-bin := $(objtree)/selftest/secure/double_free
$(secure-bin): $(srctree)/selftest/secure/double_free.c $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/secure/double_free
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_LDLIBS)
ifeq ($(CONFIG_MALLOC_FACE)$(CONFIG_BACKEND_LINUX),yy)
check-targets += check-secure
test-bins: $(secure-bin)
endif
check-secure: $(secure-bin)
	$(Q)bash $(srctree)/selftest/secure/check-secure.sh $(secure-bin) $(objtree)/secure

# ---- the fast paths in the disassembly: no lock, no atomic RMW, no indirect call (x86-64)
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-fastpath
endif
# The instruction budgets hold for the defconfig built by gcc (the script's comment); any other
# configuration or compiler gets the rules and the 80-line bound only.
check-fastpath: $(shared-lib)
	$(Q)KCONFIG_CONFIG=$(KCONFIG_CONFIG) $(KCONFIG) savedefconfig $(objtree)/fastpath-defconfig
	$(Q)sed '/^#/d' $(srctree)/configs/$(HOST_DEFCONFIG) >$(objtree)/fastpath-host-defconfig
	$(Q)budget=0; \
	if cmp -s $(objtree)/fastpath-defconfig $(objtree)/fastpath-host-defconfig && \
	   $(CC) --version | grep -q '^gcc'; then budget=1; fi; \
	FASTPATH_BUDGET=$$budget FASTPATH_EXTRA="$(if $(filter y,$(CONFIG_HEAPS)),sefer_heap_malloc)" \
		bash $(srctree)/selftest/fastpath/check-fastpath.sh $(shared-lib)

# ---- stats a program and a tool read: JSON against the struct, SEFER_SHOW_STATS, 0.1's ABI,
# the cost of a query with 64 threads (selftest/stats/check-stats.sh; about 5 s)
stats-dir := $(objtree)/selftest/stats
stats-bins := $(stats-dir)/stats-json $(stats-dir)/oldabi $(stats-dir)/query-cost \
	$(stats-dir)/peak-threads $(if $(filter y,$(CONFIG_PERSIST)),$(stats-dir)/pstats-size)
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-stats
test-bins: $(stats-bins)
endif
$(stats-dir)/stats-json: $(srctree)/selftest/stats/stats_json.c $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/stats/stats-json
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(objtree) -l:$(SEFER_SONAME)
$(stats-dir)/query-cost: $(srctree)/selftest/stats/query_cost.c $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/stats/query-cost
	$(Q)$(CC) $(TEST_CFLAGS) -pthread -o $@ $< -L$(objtree) -l:$(SEFER_SONAME)
$(stats-dir)/peak-threads: $(srctree)/selftest/stats/peak_threads.c $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/stats/peak-threads
	$(Q)$(CC) $(TEST_CFLAGS) -pthread -o $@ $< -L$(objtree) -l:$(SEFER_SONAME)
$(stats-dir)/pstats-size: $(srctree)/selftest/stats/pstats_size.c $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/stats/pstats-size
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(objtree) -l:$(SEFER_SONAME)
# linked against a stand-in for 0.1's unversioned libsefer.so.0, run against this one
$(stats-dir)/oldabi: $(srctree)/selftest/stats/oldabi.c $(srctree)/selftest/stats/oldabi_stub.c
	$(Q)mkdir -p $(dir $@)/stub
	$(quiet) CC selftest/stats/oldabi
	$(Q)$(CC) -shared -fPIC -Wl,-soname,$(SEFER_SONAME) -o $(dir $@)/stub/$(SEFER_SONAME) \
		$(srctree)/selftest/stats/oldabi_stub.c
	$(Q)$(CC) -O2 -o $@ $< -L$(dir $@)/stub -l:$(SEFER_SONAME)
check-stats: $(stats-bins) $(shared-lib)
	$(Q)bash $(srctree)/selftest/stats/check-stats.sh $(objtree) $(stats-dir)

# ---- the benchmark runner's ratio rules (bench/test_run.py, under a second), and the second
# build make bench measures (bench/bench.mk, bench-second: sefer-nodf unless SEFER_B or
# BENCH_ALLOC says otherwise; about a second, four parses of the Makefile)
check-targets += check-bench-harness
bench-second-of = $(MAKE) -s --no-print-directory -f $(srctree)/Makefile O=$(O) $(1) \
	--eval 'bench-second-print: ; @echo "$$(bench-second)"' bench-second-print
bench-second-want = $(if $(filter y,$(CONFIG_DEBUG_DOUBLE_FREE)),sefer-nodf=$(bench-nodf-lib))
check-bench-harness:
	$(Q)/usr/bin/python3 -B $(srctree)/bench/test_run.py
	$(Q)for t in 'SEFER_B= BENCH_ALLOC=|$(bench-second-want)' 'SEFER_B=none BENCH_ALLOC=|' \
		'SEFER_B=b=/x/lib.so BENCH_ALLOC=|b=/x/lib.so' 'SEFER_B= BENCH_ALLOC=sefer,glibc|'; do \
		got=$$($(call bench-second-of,$${t%|*})); \
		if [ "$$got" != "$${t#*|}" ]; then \
			echo "bench-second: make bench $${t%|*}: '$$got', want '$${t#*|}'"; exit 1; fi; \
	done; echo "bench-second: sefer-nodf by default, SEFER_B=none, SEFER_B, BENCH_ALLOC: ok"

# ---- make run: the main job of the quick start
run: all
	@echo "== sefer: python3 (allocation-heavy script, every object through malloc) under sefer"
	$(Q)PYTHONMALLOC=malloc LD_PRELOAD=$(shared-lib) SEFER_SHOW_STATS=1 \
		/usr/bin/python3 $(srctree)/selftest/real/alloc_heavy.py 20
	@echo "== sefer: headline benchmark (steady churn and larson; glibc, mimalloc, sefer)"
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(O) bench-headline
.PHONY: run

# Each group's wall time is printed after its verdict, and the whole run's at the end, so that a
# CI log shows where the 30-minute budget goes (README, "Tests and benchmarks").
check: all
	$(Q)pass=0; fail=0; failed=""; start=$$(date +%s); \
	for t in $(check-targets); do \
		echo "=== $$t"; t0=$$(date +%s); \
		if $(MAKE) -f $(srctree)/Makefile O=$(O) $$t; then pass=$$((pass+1)); v=PASS; \
		else fail=$$((fail+1)); failed="$$failed $$t"; v=FAIL; fi; \
		echo "--- $$v $$t ($$(($$(date +%s) - t0)) s)"; \
	done; \
	echo; [ -z "$$failed" ] || echo "failed groups:$$failed"; \
	echo "$$pass passed, $$fail failed in $$(($$(date +%s) - start)) s"; [ $$fail -eq 0 ]
.PHONY: check $(check-targets)
