# SPDX-License-Identifier: MIT
# Memory checkers see sefer's blocks (core/annotate.h, Documentation/debugging.rst):
#
#   check-valgrind     the library with CONFIG_VALGRIND in $(O)/valgrind: misuse programs under
#                      valgrind and their reports asserted, the unit suite (most of it), the
#                      stress test and real programs under valgrind with no error; then this
#                      build's libsefer.so under valgrind --soname-synonyms=somalloc=libsefer.so*
#   check-asan-poison  the library with CONFIG_SANITIZE_ADDRESS in $(O)/san-asan (check-asan's
#                      build, which runs the unit suite with the poisoning): misuse programs
#                      and ASan's reports asserted
misuse-bin := $(objtree)/selftest/annotate/misuse
$(misuse-bin): $(srctree)/selftest/annotate/misuse.c $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/annotate/misuse
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_LDLIBS)

# A program of the malloc face linked to this build's libsefer.so (the soname-synonyms check).
vg-face-bin := $(objtree)/selftest/annotate/face_uaf
$(vg-face-bin): $(srctree)/selftest/annotate/face_uaf.c $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/annotate/face_uaf
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -I$(srctree)/include -o $@ $< -L$(objtree) -lsefer

# The same linked with libsefer.a (--soname-synonyms=somalloc=NONE).
vg-face-static-bin := $(objtree)/selftest/annotate/face_uaf_static
$(vg-face-static-bin): $(srctree)/selftest/annotate/face_uaf.c $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/annotate/face_uaf_static
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -I$(srctree)/include -o $@ $< $(static-lib) $(LDLIBS)

annotate-bins: $(misuse-bin)
.PHONY: annotate-bins

vg-dir := $(objtree)/valgrind
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE)$(CONFIG_SANITIZE_ADDRESS),y"")
check-targets += check-valgrind
endif
check-valgrind: $(if $(CONFIG_MALLOC_FACE),$(vg-face-bin) $(vg-face-static-bin))
	$(Q)mkdir -p $(vg-dir)
	$(Q)KCONFIG_CONFIG=$(vg-dir)/.config $(KCONFIG) set $(KCONFIG_CONFIG) VALGRIND=y PERSIST=n \
		SELFTEST_SANITIZERS=n >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(vg-dir) all test-bins annotate-bins >/dev/null
	$(Q)bash $(srctree)/selftest/annotate/check-valgrind.sh $(vg-dir) \
		$(if $(CONFIG_MALLOC_FACE),$(vg-face-bin) $(vg-face-static-bin))

ifeq ($(CONFIG_SELFTEST_SANITIZERS),y)
check-targets += check-asan-poison
endif
check-asan-poison:
	$(Q)mkdir -p $(objtree)/san-asan
	$(Q)KCONFIG_CONFIG=$(objtree)/san-asan/.config $(KCONFIG) set $(KCONFIG_CONFIG) \
		$(san-config-asan) PERSIST=n SELFTEST_SANITIZERS=n >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(objtree)/san-asan CC=clang \
		EXTRA_CFLAGS="$(san-cflags-asan) -g" EXTRA_LDFLAGS="$(san-cflags-asan)" \
		CFLAGS_sync_urcu.o="$(san-urcu-cflags-asan)" annotate-bins >/dev/null
	$(Q)bash $(srctree)/selftest/annotate/check-asan-poison.sh $(objtree)/san-asan
.PHONY: check-valgrind check-asan-poison
