# SPDX-License-Identifier: MIT
# Drop-in completeness: what a program that replaces glibc's allocator by sefer expects.
#
#   make check-face   glibc's __libc_* names, C23 free_sized/free_aligned_sized (and their
#                     contract under CONFIG_HARDENED), mallinfo2/mallinfo, mallopt,
#                     malloc_info's XML, every power-of-two alignment: selftest/dropin/face.c
#                     under LD_PRELOAD; and what a small program maps: the core text alone,
#                     one page of .bss, no read-only data, no liburcu-bp reader registered;
#                     and libsefer.so loaded by dlopen (its static TLS) used from four threads
#   make check-cxx    C++ operator new/delete from libsefer.so (preloaded and linked) and
#                     libsefer.a, std::new_handler and a catchable std::bad_alloc, sized
#                     deletes checked under CONFIG_HARDENED: selftest/dropin/cxx.cc
#
# check-install (scripts/install.mk) and check-man (Documentation/man/man.mk) complete the set.
# Both groups also run against a CONFIG_HARDENED=y copy of this configuration, built once in
# $(objtree)/dropin-hardened.

CXX := $(CROSS_COMPILE)g++
dropin-dir := $(objtree)/selftest/dropin
dropin-hard := $(objtree)/dropin-hardened

$(dropin-dir)/face: $(srctree)/selftest/dropin/face.c
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/dropin/face
	$(Q)$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -ldl -pthread

# check-hot-text.sh's tracer (preloaded when a small program maps text past the core); a test
# binary, so that check-warnings builds it with -Werror under gcc and clang
$(dropin-dir)/hottrace.so: $(srctree)/selftest/dropin/hottrace.c
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC selftest/dropin/hottrace.so
	$(Q)$(CC) -std=gnu11 -O2 -g -shared -fPIC $(WARN) $(EXTRA_CFLAGS) -o $@ $<

# the same C++ source three ways: preloaded, linked to libsefer.so, linked to libsefer.a
$(dropin-dir)/cxx-preload: $(srctree)/selftest/dropin/cxx.cc
	$(Q)mkdir -p $(dir $@)
	$(quiet) CXX selftest/dropin/cxx-preload
	$(Q)$(CXX) -O2 -g -Wall -Wextra -o $@ $< -ldl
$(dropin-dir)/cxx-linked: $(srctree)/selftest/dropin/cxx.cc $(shared-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CXX selftest/dropin/cxx-linked
	$(Q)$(CXX) -O2 -g -Wall -Wextra -DSEFER_LINKED -o $@ $< -L$(objtree) -lsefer \
		-Wl,-rpath,$(objtree) -ldl
$(dropin-dir)/cxx-static: $(srctree)/selftest/dropin/cxx.cc $(static-lib)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CXX selftest/dropin/cxx-static
	$(Q)$(CXX) -O2 -g -Wall -Wextra -DSEFER_LINKED -o $@ $< $(static-lib) $(LDLIBS) -ldl

dropin-hardened:
	$(Q)mkdir -p $(dropin-hard)
	$(Q)KCONFIG_CONFIG=$(dropin-hard)/.config $(KCONFIG) set $(KCONFIG_CONFIG) HARDENED=y \
		PERSIST=n SELFTEST_SANITIZERS=n >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(dropin-hard) $(dropin-hard)/libsefer.so >/dev/null
.PHONY: dropin-hardened

ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE)$(CONFIG_MALLOC_FACE),y""y)
check-targets += check-face check-cxx
test-bins: $(dropin-dir)/hottrace.so
# check-warnings runs check-hot-text.sh against its clang build of this configuration too
hot-text-clang = bash $(srctree)/selftest/dropin/check-hot-text.sh \
	$(objtree)/warn-clang/libsefer.so $(objtree)/warn-clang/selftest/dropin/hottrace.so \
	$(objtree)/warn-clang check-warnings clang
endif
check-face: $(shared-lib) $(dropin-dir)/face $(dropin-dir)/hottrace.so dropin-hardened
	$(Q)bash $(srctree)/selftest/dropin/check-face.sh $(dropin-dir)/face $(shared-lib) \
		$(dropin-hard)/libsefer.so $(dropin-dir) $(dropin-dir)/hottrace.so

check-cxx: $(shared-lib) dropin-hardened $(addprefix $(dropin-dir)/cxx-,preload linked static)
	$(Q)bash $(srctree)/selftest/dropin/check-cxx.sh $(dropin-dir) $(shared-lib) \
		$(dropin-hard)/libsefer.so
.PHONY: check-face check-cxx
