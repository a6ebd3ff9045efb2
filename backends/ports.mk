# SPDX-License-Identifier: MIT
# Ports: the win32 and aarch64 suites and the darwin build check, as 'make check' groups.
# Each builds in its own O dir under $(objtree) from its configs/<port>_defconfig and runs its
# tests through that config's runner (wine, qemu-aarch64). Documentation/backends/*.rst.
#
#   check-win32         mingw-w64 build (sefer.dll, libsefer.dll.a, libsefer.a), unit + win32
#                       suites (portable runner, static link) and the stress test (on the DLL)
#                       under wine
#   check-aarch64       aarch64-linux-gnu build, unit suites (portable runner) and the stress
#                       test under qemu-aarch64
#   check-darwin-build  the darwin backend and the shared POSIX part compiled by the host gcc
#                       against a shim of the Darwin-only constants (syntax and type check only)

# ---- the portable unit runner (selftest/portable/): selftest/unit/ suites without Check, for
# configurations whose toolchain has no Check library. Built by 'make port-test-bins'.
ifeq ($(CONFIG_BACKEND_WIN32),y)
EXE := .exe
port-test-srcs := $(srctree)/selftest/portable/test_win32.c
port-test-cflags := -DSEFER_STATIC -D__USE_MINGW_ANSI_STDIO=1 \
	-include $(srctree)/selftest/portable/win32-compat.h
port-test-libs := -lpsapi
else
EXE :=
port-test-srcs := $(srctree)/selftest/unit/test_process.c $(srctree)/selftest/unit/child.c \
	$(srctree)/selftest/unit/test_hardening.c $(srctree)/selftest/unit/test_heaps.c \
	$(srctree)/selftest/unit/test_heaps_threads.c $(srctree)/selftest/unit/test_heaps_move.c
port-test-cflags :=
port-test-libs :=
endif
port-test-srcs += $(srctree)/selftest/portable/main.c $(srctree)/selftest/portable/check.c \
	$(addprefix $(srctree)/selftest/unit/,bad_frees.c test_bins.c test_segment.c test_api.c \
		test_options.c test_threads.c)
port-unit-bin := $(objtree)/selftest/portable/sefer-unit$(EXE)
port-stress-bin := $(objtree)/selftest/portable/stress$(EXE)

$(port-unit-bin): $(port-test-srcs) $(wildcard $(srctree)/selftest/portable/*.h) \
		$(srctree)/selftest/unit/unit.h $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/portable/$(notdir $@)
	$(Q)$(CC) $(TEST_CFLAGS) -I$(srctree)/selftest/portable -I$(srctree)/selftest/unit \
		$(port-test-cflags) -pthread -static -o $@ $(port-test-srcs) $(TEST_LDLIBS) $(port-test-libs)

ifeq ($(CONFIG_BACKEND_WIN32),y)
# The stress test links the DLL through its import library (sefer.dll next to the .exe).
$(port-stress-bin): $(srctree)/selftest/stress/stress.c $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/portable/$(notdir $@)
	$(Q)$(CC) $(TEST_CFLAGS) -D__USE_MINGW_ANSI_STDIO=1 -pthread -static -o $@ $< \
		$(objtree)/libsefer.dll.a -lpthread
	$(Q)cp $(shared-lib) $(dir $@)
else
$(port-stress-bin): $(srctree)/selftest/stress/stress.c $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/portable/$(notdir $@)
	$(Q)$(CC) $(TEST_CFLAGS) -pthread -o $@ $< $(TEST_LDLIBS)
endif

port-test-bins: $(port-unit-bin) $(port-stress-bin)
.PHONY: port-test-bins

# ---- the groups
port-make = $(MAKE) -f $(srctree)/Makefile O=$(objtree)/port-$(1)

check-targets += check-win32
check-win32:
	$(Q)$(call port-make,win32) win32_defconfig >/dev/null
	$(Q)$(call port-make,win32) EXTRA_CFLAGS=-Werror all port-test-bins
	$(Q)cd $(objtree)/port-win32 && ls sefer.dll libsefer.dll.a libsefer.a >/dev/null
	$(Q)export WINEPREFIX=$(objtree)/port-win32/wineprefix; \
	run="timeout 300 sh $(srctree)/backends/win32/wine-run"; \
	status=0; \
	$$run $(objtree)/port-win32/selftest/portable/sefer-unit.exe || status=1; \
	echo "RUN  stress.exe 4 50000 2 (sefer.dll)"; \
	$$run $(objtree)/port-win32/selftest/portable/stress.exe 4 50000 2 || status=1; \
	wineserver -k 2>/dev/null || true; \
	exit $$status

AARCH64_RUNNER := qemu-aarch64 -L /usr/aarch64-linux-gnu
# qemu-user limits, not sefer's: it ignores setrlimit(RLIMIT_AS) (out_of_memory would exhaust
# the host; rlimit_as_in_force sees 1 GiB served past the limit) and aborts in its TCG plugin hook when a child forked from a threaded process
# creates a thread (fork_from_threads). Both run natively in check-unit.
AARCH64_SKIP := out_of_memory rlimit_as_in_force fork_from_threads
check-targets += check-aarch64
check-aarch64:
	$(Q)$(call port-make,aarch64) aarch64_defconfig >/dev/null
	$(Q)$(call port-make,aarch64) EXTRA_CFLAGS=-Werror all port-test-bins
	$(Q)cd $(objtree)/port-aarch64 && status=0; \
	SEFER_TEST_EXEC="$(AARCH64_RUNNER)" SEFER_TEST_SKIP="$(AARCH64_SKIP)" \
		timeout 600 $(AARCH64_RUNNER) ./selftest/portable/sefer-unit || status=1; \
	echo "RUN  stress 4 50000 2"; \
	timeout 300 $(AARCH64_RUNNER) ./selftest/portable/stress 4 50000 2 || status=1; \
	exit $$status

check-targets += check-darwin-build
check-darwin-build:
	$(Q)bash $(srctree)/backends/darwin/build-check.sh $(srctree) $(objtree)/port-darwin
.PHONY: check-win32 check-aarch64 check-darwin-build
