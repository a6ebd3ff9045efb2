# SPDX-License-Identifier: MIT
# The amalgamation (scripts/amalgamate.py, Documentation/vendoring.rst): $(O)/amalgamation/sefer.c
# and sefer.h for the configuration in $(O)/.config, made from the objects libsefer.a would
# hold (lib-objs, in Kbuild order), so what is vendored is what .config says.
#
#   make [O=dir] amalgamation     write $(O)/amalgamation/sefer.c and sefer.h
#   make check-amalgamation       compile the amalgamation alone (gcc, clang -Werror), run
#                                 the unit suite linked with it instead of libsefer.a, check the
#                                 SEFER_STATIC_ALL mode with nm (also for configs/vendor_defconfig)

amalg-dir := $(objtree)/amalgamation
amalg-c := $(amalg-dir)/sefer.c
amalg-srcs := $(patsubst $(objtree)/%.o,%.c,$(lib-objs))

# Always run; the script rewrites sefer.c and sefer.h only when more than their date changed,
# so what is compiled from them is rebuilt only then.
$(amalg-c): $(autoconf-mk) $(policies-h) FORCE
	$(Q)mkdir -p $(amalg-dir)
	$(Q)$(KCONFIG) savedefconfig $(amalg-dir)/defconfig
	$(Q)$(PYTHON) $(srctree)/scripts/amalgamate.py --srctree $(srctree) --objtree $(objtree) \
		--out $(amalg-dir) --libs "$(LDLIBS)" --defconfig $(amalg-dir)/defconfig $(amalg-srcs)
amalgamation: $(amalg-c)
.PHONY: amalgamation

# The unit suite against the amalgamation: the tests compile against the repository's headers
# with the same autoconf.h (they reach into core/), and link one object compiled from the
# amalgamated sefer.c alone, with no include path: the code under test is the amalgamated code.
amalg-unit-dir := $(objtree)/amalg-unit
amalg-obj := $(amalg-unit-dir)/sefer.o
amalg-unit := $(amalg-unit-dir)/sefer-unit
$(amalg-obj): $(amalg-c)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC amalg-unit/sefer.o
	$(Q)$(CC) -std=gnu11 -O2 -g -c -o $@ $<
$(amalg-unit): $(unit-srcs) $(wildcard $(srctree)/selftest/unit/*.h) $(amalg-obj)
	$(quiet) CC amalg-unit/sefer-unit
	$(Q)$(CC) $(TEST_CFLAGS) $(CHECK_CFLAGS) -o $@ $(unit-srcs) $(amalg-obj) $(LDLIBS) \
		$(EXTRA_LDFLAGS) $(CHECK_LIBS)

amalg-vendor := $(objtree)/amalg-vendor
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-amalgamation
endif
# What is amalgamated is what libsefer.a holds, but C++'s new.o (vendoring.rst says why).
check-amalgamation: $(amalg-unit) $(static-lib)
	@echo "== amalgamation of $(KCONFIG_CONFIG)"
	$(Q)$(AR) t $(static-lib) | grep -vx new.o | sort >$(amalg-dir)/objs.lib
	$(Q)sed -n 's#^/\* ---- begin \(.*/\)*\(.*\)\.c ---- \*/$$#\2.o#p' $(amalg-c) | sort \
		>$(amalg-dir)/objs.amalg
	$(Q)if diff $(amalg-dir)/objs.lib $(amalg-dir)/objs.amalg; then \
		echo "ok   the same $$(wc -l <$(amalg-dir)/objs.lib) objects as libsefer.a (but new.o)"; \
	else echo "FAIL the amalgamation's sources are not libsefer.a's objects (< lib, > amalg)"; \
		exit 1; fi
	$(Q)bash $(srctree)/selftest/amalgamation/check-amalgamation.sh $(srctree) $(amalg-dir) \
		"$(LDLIBS)"
	$(Q)$(TEST_RUNNER) $(amalg-unit)
	@echo "== amalgamation of configs/vendor_defconfig"
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(amalg-vendor) vendor_defconfig >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(amalg-vendor) amalgamation
	$(Q)bash $(srctree)/selftest/amalgamation/check-amalgamation.sh $(srctree) \
		$(amalg-vendor)/amalgamation "$$($(MAKE) -s -f $(srctree)/Makefile O=$(amalg-vendor) ldlibs)"
.PHONY: check-amalgamation
