# SPDX-License-Identifier: MIT
# 'make check': every test group is a check-<name> target appended to check-targets (by this
# file, persist/persist.mk, ...). The driver runs each group, keeps going past failures, and
# ends with the line "N passed, N failed"; it fails if any group failed.

check-targets :=

check: all
	$(Q)pass=0; fail=0; failed=""; \
	for t in $(check-targets); do \
		echo "=== $$t"; \
		if $(MAKE) -f $(srctree)/Makefile O=$(O) $$t; then pass=$$((pass+1)); echo "--- PASS $$t"; \
		else fail=$$((fail+1)); failed="$$failed $$t"; echo "--- FAIL $$t"; fi; \
	done; \
	echo; [ -z "$$failed" ] || echo "failed groups:$$failed"; \
	echo "$$pass passed, $$fail failed"; [ $$fail -eq 0 ]
.PHONY: check
