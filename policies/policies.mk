# SPDX-License-Identifier: MIT
# policies/policies.mk - policy test groups and measurement tools, included by the top Makefile.
#
#   make check-policies       unit suites of every policy built three ways: all policies on
#                             (fastbin, numa, large_cache), numa with MPOL_BIND, all off
#   make policies-measure     the numbers in Documentation/policies/: fastbin bulk/steady churn
#                             with and without the magazine and large_cache 4/16/64 MiB, each
#                             under glibc, mimalloc and sefer in one run (decommit, a core
#                             mechanism, has its own: make decommit-measure, selftest/selftest.mk)

pol-configs := all-on numa-bind
pol-set-all-on := DECOMMIT=y POLICY_FASTBIN=y POLICY_NUMA=y POLICY_LARGE_CACHE=y
pol-set-numa-bind := POLICY_NUMA=y NUMA_BIND=y POLICY_FASTBIN=n

ifeq ($(CONFIG_BACKEND_LINUX),y)
check-targets += check-policies
endif
check-policies:
	$(Q)for c in $(pol-configs); do \
		d=$(objtree)/pol-$$c; mkdir -p $$d; \
		case $$c in all-on) set="$(pol-set-all-on)";; numa-bind) set="$(pol-set-numa-bind)";; esac; \
		KCONFIG_CONFIG=$$d/.config $(KCONFIG) set $(KCONFIG_CONFIG) $$set >/dev/null || exit 1; \
		$(MAKE) -f $(srctree)/Makefile O=$$d all test-bins >/dev/null || exit 1; \
		echo "== policies: $$c ($$set)"; \
		$$d/selftest/unit/sefer-unit && $$d/selftest/stress/stress 4 30000 2 || exit 1; \
	done

pol-mi := /usr/lib/x86_64-linux-gnu/libmimalloc.so.2
policies-measure: all $(addprefix $(objtree)/bench/,bulk steady large)
	$(Q)mkdir -p $(objtree)/pol-fastbin
	$(Q)KCONFIG_CONFIG=$(objtree)/pol-fastbin/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		POLICY_FASTBIN=y >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(objtree)/pol-fastbin all >/dev/null
	@echo "== fastbin (Mops/s, median of 5 interleaved runs)"
	$(Q)bash $(srctree)/policies/fastbin/measure.sh $(objtree)/bench $(shared-lib) \
		$(objtree)/pol-fastbin/libsefer.so 5
	@echo "== large_cache (alloc+free pairs of one size; Mops/s)"
	$(Q)for s in 4M 16M 64M; do for a in glibc mimalloc sefer; do \
		case $$a in glibc) p=;; mimalloc) p=$(pol-mi);; sefer) p=$(shared-lib);; esac; \
		LD_PRELOAD=$$p $(objtree)/bench/large --size $$s --ops 200000 --max-secs 2 | \
		sed "s/^/$$a /"; done; done

.PHONY: check-policies policies-measure
