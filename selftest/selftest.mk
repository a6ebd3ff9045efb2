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
	$(EXTRA_CFLAGS)
TEST_LDLIBS := $(static-lib) $(LDLIBS) $(EXTRA_LDFLAGS)

unit-srcs := $(wildcard $(srctree)/selftest/unit/*.c)
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
check-targets += check-unit
check-unit: $(unit-bin)
	$(Q)$(TEST_RUNNER) $(unit-bin)

check-targets += check-stress
check-stress: $(stress-bin)
	$(Q)$(TEST_RUNNER) $(stress-bin) 4 100000 3

check: all
	$(Q)pass=0; fail=0; failed=""; \
	for t in $(check-targets); do \
		echo "=== $$t"; \
		if $(MAKE) -f $(srctree)/Makefile O=$(O) $$t; then pass=$$((pass+1)); echo "--- PASS $$t"; \
		else fail=$$((fail+1)); failed="$$failed $$t"; echo "--- FAIL $$t"; fi; \
	done; \
	echo; [ -z "$$failed" ] || echo "failed groups:$$failed"; \
	echo "$$pass passed, $$fail failed"; [ $$fail -eq 0 ]
.PHONY: check $(check-targets)
