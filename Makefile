# SPDX-License-Identifier: MIT
#
# sefer top-level Makefile: a small Kbuild-style driver.
#
#   make [O=dir] [V=1] <name>_defconfig | defconfig | olddefconfig | savedefconfig | menuconfig
#   make allnoconfig | allyesconfig | alldefconfig | randconfig | listnewconfig
#   make [O=dir]            build the libraries, sefer-pstore, man pages (default config if none)
#   make C=1 | C=2          ... and run sparse on the C files compiled / on all of them
#   make check              the full test suite (unit, sanitizers, alternate configs, ports, persist)
#   make run                build the default config, run a real program and the headline benchmark
#   make bench [QUICK=1]    benchmarks against glibc, mimalloc 2 and 3, snmalloc, jemalloc, tcmalloc
#   make install | uninstall [PREFIX=/usr/local] [DESTDIR=] [LIBDIR= INCLUDEDIR= BINDIR= MANDIR=]
#   make clean | distclean
#   make help               every target and variable
#
# Build output goes to $(O) (default build/), never into the source tree. The configuration
# lives in $(O)/.config; include/generated/autoconf.h and include/config/auto.conf are generated
# under $(O) and only rewritten when they change. Each directory lists its objects in a Kbuild
# file as obj-$(CONFIG_FOO) += foo.o; only selected objects enter the libraries.

MAKEFLAGS += -rR --no-print-directory
.SUFFIXES:
.DEFAULT_GOAL := all

srctree := $(CURDIR)
O ?= build
objtree := $(abspath $(O))
export KCONFIG_CONFIG := $(objtree)/.config
PYTHON := /usr/bin/python3
KCONFIG := $(PYTHON) $(srctree)/scripts/kconfig.py
HOST_DEFCONFIG := linux_defconfig

ifeq ($(V),1)
Q :=
quiet = @:
else
Q := @
quiet = @printf '  %-8s %s\n'
endif

# The quick-start goals install what they need first (idempotent; fast when all is present),
# so that they work on a fresh machine with only gcc and make.
ifneq ($(filter run check bench,$(MAKECMDGOALS)),)
ifndef sefer_deps_checked
$(info sefer: checking build and test dependencies (scripts/install-deps))
ifneq ($(shell bash $(srctree)/scripts/install-deps >&2; echo $$?),0)
$(error scripts/install-deps failed: see the messages above)
endif
export sefer_deps_checked := 1
endif
endif
ifeq ($(wildcard $(PYTHON)),)
$(error $(PYTHON) not found: run scripts/install-deps (as root) first)
endif

config-targets := menuconfig defconfig olddefconfig savedefconfig %_defconfig allnoconfig \
	allyesconfig alldefconfig randconfig listnewconfig
no-config-targets := clean distclean help
config-goals := $(filter $(config-targets),$(MAKECMDGOALS))
other-goals := $(filter-out $(config-targets),$(MAKECMDGOALS))

# "make foo_defconfig all": configure first, then build, each in its own make.
ifneq ($(config-goals),)
ifneq ($(other-goals),)
mixed-goals := 1
endif
endif

ifdef mixed-goals
__one_by_one:
	$(Q)set -e; for g in $(MAKECMDGOALS); do $(MAKE) -f $(srctree)/Makefile $$g; done
$(MAKECMDGOALS): __one_by_one
	@:
.PHONY: __one_by_one
else

# ---------------------------------------------------------------- configuration goals
kconfig-files := $(shell find $(srctree) -name Kconfig -not -path '$(objtree)/*' 2>/dev/null)

%_defconfig:
	$(Q)mkdir -p $(objtree)
	$(Q)test -f $(srctree)/configs/$@ || { echo "sefer: no such config: configs/$@" >&2; exit 1; }
	$(Q)$(KCONFIG) defconfig $(srctree)/configs/$@

defconfig: $(HOST_DEFCONFIG)

olddefconfig:
	$(Q)mkdir -p $(objtree)
	$(Q)$(KCONFIG) olddefconfig

savedefconfig:
	$(Q)$(KCONFIG) savedefconfig $(objtree)/defconfig
	@echo "  SAVED    $(objtree)/defconfig"

menuconfig:
	$(Q)mkdir -p $(objtree)
	$(Q)if [ ! -t 0 ] || [ ! -t 1 ]; then \
		echo "sefer: menuconfig needs an interactive terminal (stdin and stdout must be a tty);" >&2; \
		echo "       use 'make <name>_defconfig' or edit $(KCONFIG_CONFIG) and run 'make olddefconfig'" >&2; \
		exit 1; fi
	$(Q)test -f $(KCONFIG_CONFIG) || $(KCONFIG) defconfig $(srctree)/configs/$(HOST_DEFCONFIG)
	$(Q)cd $(srctree) && $(PYTHON) -m menuconfig Kconfig
	$(Q)$(KCONFIG) olddefconfig

# allnoconfig, allyesconfig, alldefconfig, randconfig (KCONFIG_SEED=N reproduces one; the seed
# used is printed) and KCONFIG_ALLCONFIG=file (settings they keep) as in the kernel:
# scripts/kconfig.py has the details.
allnoconfig allyesconfig alldefconfig randconfig:
	$(Q)mkdir -p $(objtree)
	$(Q)$(KCONFIG) $@

listnewconfig:
	$(Q)$(KCONFIG) listnewconfig

.PHONY: defconfig olddefconfig savedefconfig menuconfig allnoconfig allyesconfig alldefconfig \
	randconfig listnewconfig

ifeq ($(filter $(no-config-targets),$(MAKECMDGOALS)),)
ifeq ($(config-goals),)
# ---------------------------------------------------------------- build goals
autoconf := $(objtree)/include/generated/autoconf.h
autoconf-mk := $(objtree)/include/config/auto.conf
policies-conf := $(objtree)/include/config/policies.conf

$(KCONFIG_CONFIG):
	$(Q)mkdir -p $(objtree)
	@echo "sefer: no $(KCONFIG_CONFIG); configuring the host default (configs/$(HOST_DEFCONFIG))"
	$(Q)$(KCONFIG) defconfig $(srctree)/configs/$(HOST_DEFCONFIG)

# genconfig writes each output only when its contents change, so a .config edit that does
# not change an option rebuilds nothing. policies.conf lists the policy folders whose Kconfig
# policies/Kconfig sources (policy-dirs), in source order.
$(autoconf-mk): $(KCONFIG_CONFIG) $(kconfig-files) $(srctree)/scripts/kconfig.py
	$(Q)mkdir -p $(dir $@) $(dir $(autoconf))
	$(Q)$(KCONFIG) genconfig $(autoconf) $@ $(policies-conf)
	$(Q)touch $@

# policies.conf is written with auto.conf: if it went missing, auto.conf is made again.
ifeq ($(wildcard $(policies-conf)),)
$(autoconf-mk): FORCE
endif
FORCE:

-include $(autoconf-mk)
-include $(policies-conf)
endif
endif

unquote = $(patsubst "%",%,$(1))
CROSS_COMPILE ?= $(call unquote,$(CONFIG_CROSS_COMPILE))
ifneq ($(filter default undefined,$(origin CC)),)
CC := $(CROSS_COMPILE)gcc
endif
AR := $(CROSS_COMPILE)ar

# ---------------------------------------------------------------- objects from Kbuild files
# Every directory with a Kbuild file; each lists obj-$(CONFIG_...) += file.o. The policy
# folders come from the Kconfig tree (policy-dirs, above): adding a policy is a folder and a
# source line in policies/Kconfig. A policy's Kbuild also names it when it is enabled
# (policy-$(CONFIG_POLICY_X) += x, x being the folder's name) and declares <x>-state and
# <x>-hot for include/generated/policies.h (Documentation/policies/writing-a-policy.rst).
kbuild-dirs := core backends/posix backends/linux backends/win32 backends/darwin \
	$(policy-dirs) persist

# so-obj-y and a-obj-y list objects of libsefer.so alone and of libsefer.a alone.
define collect-kbuild
obj-y :=
so-obj-y :=
a-obj-y :=
libs-y :=
policy-y :=
-include $(srctree)/$(1)/Kbuild
lib-objs += $$(addprefix $(objtree)/$(1)/,$$(obj-y))
so-objs += $$(addprefix $(objtree)/$(1)/,$$(so-obj-y))
a-objs += $$(addprefix $(objtree)/$(1)/,$$(a-obj-y))
lib-libs += $$(libs-y)
ifneq ($$(filter-out $(notdir $(1)),$$(policy-y)),)
$$(error $(1)/Kbuild: policy-y names $$(policy-y); a policy is named after its folder)
endif
policies += $$(if $$(strip $$(policy-y)),$(1))
endef
lib-objs :=
so-objs :=
a-objs :=
lib-libs :=
policies :=
$(foreach d,$(kbuild-dirs),$(eval $(call collect-kbuild,$(d))))

# include/generated/policies.h, policies_hot.h and policy_tests.h: the enabled policies in chain
# order, their headers and state, the policies' unit suites (scripts/genpolicies.py). Like
# cflags-file below, policies-spec is rewritten only when the selection or a declaration
# changes, and the headers are remade from it.
comma := ,
empty :=
space := $(empty) $(empty)
policy-spec = $(1):$(or $(subst $(space),$(comma),$(strip $($(notdir $(1))-state))),-):$(or \
	$(strip $($(notdir $(1))-hot)),-)
# Every policy folder with a unit suite, policies/<name>/test_<name>.c, enabled or not: the
# suites build in every configuration (selftest/selftest.mk) and register through
# SEFER_POLICY_TESTS in include/generated/policies.h.
policy-tests := $(foreach d,$(policy-dirs),\
	$(if $(wildcard $(srctree)/$(d)/test_$(notdir $(d)).c),$(d)))
# The policies left out: their options' names go into policies.h (scripts/genpolicies.py), read
# from their sources, so that the header is made again when one of those changes.
policies-out := $(filter-out $(policies),$(policy-dirs))
policies-now := $(foreach p,$(policies),$(call policy-spec,$(p))) \
	tests=$(subst $(space),$(comma),$(notdir $(policy-tests))) \
	out=$(subst $(space),$(comma),$(policies-out))
policies-spec := $(objtree)/include/config/policies.spec
policies-h := $(objtree)/include/generated/policies.h
$(policies-h): $(policies-spec) $(srctree)/scripts/genpolicies.py $(srctree)/scripts/genoptions.py \
		$(foreach d,$(policies-out),$(wildcard $(srctree)/$(d)/*.c))
	$(Q)$(PYTHON) $(srctree)/scripts/genpolicies.py $(dir $@) src=$(srctree) $(policies-now)
	$(Q)touch $@

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
SEFER_CFLAGS := -std=gnu11 -O2 -g -fPIC -fvisibility=hidden -fno-plt -ftls-model=initial-exec \
	-fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc -fno-builtin-realloc \
	$(WARN) -I$(srctree)/include -I$(srctree) -I$(objtree)/include \
	-include $(objtree)/include/generated/autoconf.h -DSEFER_BUILD
ifeq ($(CONFIG_BACKEND_WIN32),y)
SEFER_CFLAGS := $(filter-out -fPIC -fno-plt -ftls-model=initial-exec,$(SEFER_CFLAGS))
endif
# The free fast path writes a block's link and its free mark side by side: gcc's SLP vectorizer
# merges the two stores through an SSE register (three more instructions). Plain stores.
SEFER_CFLAGS += $(if $(shell $(CC) --version 2>/dev/null | grep -qi clang && echo y),\
	-fno-slp-vectorize,-fno-tree-slp-vectorize)
# Each function in a section of its own (.text.NAME), so that the libsefer.so link can gather the
# ones every process runs into a text segment of their own (core/libsefer-hot.lds).
ifeq ($(CONFIG_BACKEND_LINUX),y)
SEFER_CFLAGS += -ffunction-sections
endif
SEFER_CFLAGS += $(EXTRA_CFLAGS)
LDLIBS := $(lib-libs) -lpthread
# CONFIG_SANITIZE_ADDRESS: the library, and whatever links it (the tests; 'make ldlibs'), with
# AddressSanitizer (core/annotate.h poisons free blocks for it).
ifeq ($(CONFIG_SANITIZE_ADDRESS),y)
ASAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer
SEFER_CFLAGS += $(ASAN_FLAGS)
LDLIBS += $(ASAN_FLAGS)
endif

# Objects also depend on the compiler command: a changed CC or flag rebuilds them (like Kbuild's
# .cmd files, one file for the whole build).
cflags-file := $(objtree)/include/config/cflags
cflags-now := $(CC) $(SEFER_CFLAGS) $(CFLAGS) $(foreach v,$(filter CFLAGS_%,$(.VARIABLES)),$(v)=$($(v)))
ifneq ($(config-goals)$(filter $(no-config-targets),$(MAKECMDGOALS)),)
else
$(shell mkdir -p $(objtree)/include/config; \
	[ "$$(cat $(cflags-file) 2>/dev/null)" = '$(cflags-now)' ] || echo '$(cflags-now)' > $(cflags-file); \
	[ -f $(policies-spec) ] && [ "$$(cat $(policies-spec))" = '$(policies-now)' ] || \
		echo '$(policies-now)' > $(policies-spec))
endif

# The static checker, as in the kernel: C=1 runs $(CHECK) on every C file that is (re)compiled,
# C=2 on every C file of the configuration's libraries whether or not it is rebuilt. It gets the
# compiler's flags (-I, -D, the autoconf.h -include, -std; -Wall turns on every sparse warning),
# then CHECKFLAGS, then a Kbuild file's CHECKFLAGS_<file>.o (a warning turned off for one file,
# with the reason there), later flags winning. sparse defines __CHECKER__, and the architecture
# macros of --arch (the compiler's target: x86_64, aarch64) and __linux__; -m64 states the data
# model. Warnings do not stop the build (sparse exits 0 on them); make check-sparse fails
# on any (Documentation/debugging.rst).
CHECK ?= sparse
ifneq ($(filter 1 2,$(C)),)
check-target := $(shell $(CC) -dumpmachine 2>/dev/null)
check-arch := $(firstword $(subst -, ,$(check-target)))
# A cross build (CROSS_COMPILE=aarch64-linux-gnu-): the target's compiler headers, multiarch
# directory and Debian cross headers, not the host's.
ifneq ($(CROSS_COMPILE),)
check-arch += -gcc-base-dir $(shell $(CC) -print-file-name=) -multiarch-dir $(check-target) \
	$(addprefix -isystem ,$(wildcard /usr/$(check-target)/include))
endif
endif
CHECKFLAGS ?= $(if $(check-arch),--arch=$(check-arch)) -m64 -Wbitwise -Wcontext -Waddress-space \
	-Wno-unknown-attribute
# $(call cmd-check,object,source)
cmd-check = $(CHECK) $(SEFER_CFLAGS) $(CFLAGS) $(CFLAGS_$(notdir $(1))) $(CHECKFLAGS) \
	$(CHECKFLAGS_$(notdir $(1))) $(2)

$(objtree)/%.o: $(srctree)/%.c $(autoconf-mk) $(cflags-file) $(policies-h)
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(SEFER_CFLAGS) $(CFLAGS) $(CFLAGS_$(notdir $@)) -MMD -MP -c -o $@ $<
ifeq ($(C),1)
	$(quiet) CHECK $(patsubst $(srctree)/%,%,$<)
	$(Q)$(call cmd-check,$@,$<)
endif

# C=2: one always-run check per library object (the .chk name is never a file), made before the
# libraries are linked.
ifeq ($(C),2)
check-objs = $(patsubst %.o,%.chk,$(lib-objs) $(so-objs) $(a-objs))
$(objtree)/%.chk: $(srctree)/%.c $(autoconf-mk) $(cflags-file) $(policies-h) FORCE
	$(quiet) CHECK $(patsubst $(srctree)/%,%,$<)
	$(Q)$(call cmd-check,$(@:.chk=.o),$<)
endif

-include $(lib-objs:.o=.d) $(so-objs:.o=.d) $(a-objs:.o=.d)

# The release, from include/sefer.h; the shared library's SONAME carries the major number.
sefer-version-part = $(shell sed -n 's/^\#define SEFER_VERSION_$(1) //p' $(srctree)/include/sefer.h)
SEFER_VERSION := $(call sefer-version-part,MAJOR).$(call sefer-version-part,MINOR).$(call \
	sefer-version-part,PATCH)
SEFER_SONAME := libsefer.so.$(call sefer-version-part,MAJOR)

ifeq ($(CONFIG_BACKEND_WIN32),y)
shared-lib := $(objtree)/sefer.dll
else
shared-lib := $(objtree)/libsefer.so
endif
static-lib := $(objtree)/libsefer.a
# A changed selection rebuilds the archive from scratch: deselected objects leave it.
$(static-lib): $(lib-objs) $(a-objs) $(autoconf-mk)
	$(quiet) AR $(notdir $@)
	$(Q)rm -f $@ && $(AR) rcs $@ $(lib-objs) $(a-objs)

# build/libsefer.so is the library itself (LD_PRELOAD it from there); the SONAME link beside it
# lets a program linked with -Lbuild -lsefer run from the build tree too. make install names
# the file libsefer.so.MAJOR.MINOR.PATCH (scripts/install.mk).
# ELF symbol versions of the calls whose signature changed (core/stats_compat_so.c)
ifeq ($(CONFIG_BACKEND_LINUX),y)
so-version-script := -Wl,--version-script=$(srctree)/core/libsefer.map
endif
# The code a malloc-only process runs is a text segment of its own (core/libsefer-hot.lds, with
# -ffunction-sections above): the kernel's fault-around, which maps a file's cached pages 64 KiB
# at a time, stops at a mapping's end, so the rest of the text stays unmapped (Documentation/
# decommit.rst, "The fixed cost per process"); the script makes it two, what a small program runs
# and the rest of the profile, so a small program maps only the first. The C runtime's _fini, an
# empty function in .fini after the whole text, is not called at exit: -fini names a symbol that
# does not exist, so there is no DT_FINI (destructors still run from .fini_array). make
# check-face checks that cat maps only the first, and names the functions that ran past it when
# it does not (selftest/dropin/check-hot-text.sh); make check-warnings checks its clang build.
ifeq ($(CONFIG_BACKEND_LINUX),y)
so-front := -Wl,-fini=sefer__no_dt_fini
so-hot-lds := $(srctree)/core/libsefer-hot.lds
so-front += -Wl,-T,$(so-hot-lds)
# The segment table (4 MiB of .bss, one page of it written per 128 GiB of segment addresses) and
# the empty heap (7.5 KiB of .bss that only reads) are linked last, so that the .bss variables
# every process writes at start-up follow .data in its last page, which relocation and .data's
# own writes make resident anyway: one anonymous page less per process (make check-face checks
# the .bss mapping's Rss).
so-bss-last := $(objtree)/core/heap_empty.o $(objtree)/core/segtab.o
# The relative relocations packed (DT_RELR, binutils 2.38 and glibc 2.36 on): 212 of the 304
# relocations are relative, and as RELA entries they took 5 KiB of the first read-only segment,
# which ld.so reads whole at load (16 -> 12 KiB resident in every process). Only where the
# linker and the C library both take it: older binutils ignore the option with a warning, and a
# glibc without DT_RELR has no GLIBC_ABI_DT_RELR version for the link to need. Probed when the
# library is linked (a recursive variable), not at every make.
so-relr-probe = printf '%s\n' 'void abort(void);' 'static int x;' 'int *p = &x;' \
	'void f(void) { abort(); }' | $(CC) -shared -fPIC -x c - -o $@.relr-probe \
	-Wl,-z,pack-relative-relocs >/dev/null 2>&1 && \
	$(CROSS_COMPILE)readelf -V $@.relr-probe 2>/dev/null | grep -q GLIBC_ABI_DT_RELR
so-relr = $(shell $(so-relr-probe) && echo -Wl,-z,pack-relative-relocs; rm -f $@.relr-probe)
endif
$(objtree)/libsefer.so: $(lib-objs) $(so-objs) $(autoconf-mk) $(srctree)/core/libsefer.map \
		$(so-hot-lds)
	$(quiet) LD $(notdir $@)
	$(Q)$(CC) -shared -Wl,-soname,$(SEFER_SONAME) -Wl,-z,nodelete -o $@ $(so-front) $(so-relr) \
		$(filter-out $(so-bss-last),$(lib-objs)) $(so-objs) $(filter $(so-bss-last),$(lib-objs)) \
		$(so-version-script) $(LDLIBS) $(LDFLAGS)
	$(Q)ln -sf libsefer.so $(objtree)/$(SEFER_SONAME)

$(objtree)/sefer.dll: $(lib-objs) $(autoconf-mk)
	$(quiet) LD $(notdir $@)
	$(Q)$(CC) -shared -static-libgcc -o $@ $(lib-objs) -Wl,--out-implib,$(objtree)/libsefer.dll.a \
		$(LDFLAGS) -lbcrypt

all: $(static-lib) $(shared-lib) $(extra-all) $(check-objs)
.PHONY: all

# What a program linking libsefer.a statically needs after it, for this configuration.
ldlibs:
	@echo $(LDLIBS)
.PHONY: ldlibs

# ---------------------------------------------------------------- tests, run, bench
include $(srctree)/selftest/selftest.mk
include $(srctree)/selftest/annotate/annotate.mk
-include $(srctree)/bench/bench.mk
-include $(srctree)/persist/persist.mk
-include $(srctree)/policies/policies.mk
-include $(srctree)/backends/ports.mk
-include $(srctree)/Documentation/man/man.mk
-include $(srctree)/scripts/install.mk
-include $(srctree)/selftest/dropin/dropin.mk
-include $(srctree)/scripts/amalgamation.mk
-include $(srctree)/examples/examples.mk
-include $(srctree)/bindings/rust/rust.mk

clean:
	$(Q)rm -rf $(objtree)/core $(objtree)/backends $(objtree)/policies $(objtree)/persist \
		$(objtree)/selftest $(objtree)/bench $(objtree)/libsefer.* $(objtree)/sefer.dll \
		$(objtree)/sefer-pstore $(objtree)/ptmp $(objtree)/man $(objtree)/sefer.pc \
		$(objtree)/check-install $(objtree)/dropin-hardened $(objtree)/amalgamation \
		$(objtree)/amalg-unit $(objtree)/amalg-vendor $(objtree)/examples $(objtree)/rust-vendor \
		$(objtree)/rust-target $(objtree)/rust-system
distclean:
	$(Q)rm -rf $(objtree)

# Every target, the way the kernel's 'make help' lists them. check-config fails when a .PHONY
# target is missing here.
define sefer_help
Cleaning targets:
  clean             - Remove the build output but keep the configuration ($(O)/.config)
  distclean         - Remove $(O) entirely

Configuration targets (write $(O)/.config; scripts/kconfig.py, Documentation/kconfig.rst):
  menuconfig        - Change the configuration in a terminal menu
  defconfig         - The host default, configs/$(HOST_DEFCONFIG)
  <name>_defconfig  - A configuration from configs/ (listed below)
  olddefconfig      - Refresh .config against the Kconfig tree, new options at their default
  savedefconfig     - Write the minimal config for .config to $(O)/defconfig
  allnoconfig       - Every bool option n, where its dependencies allow
  allyesconfig      - Every bool option y, where its dependencies allow
  alldefconfig      - Every option at its default
  randconfig        - Bool options and choices (not the backend) at random; prints its seed
  listnewconfig     - List the options .config does not set, with their would-be values

Build targets:
  all               - libsefer.a, libsefer.so (sefer.dll on win32), sefer-pstore and the man
                      pages [default]
  man               - The man pages, rendered from Documentation/man/
  kconfig-doc       - Rewrite Documentation/kconfig.rst's option reference from the Kconfig
                      help texts (scripts/kconfig_doc.py)
  man-options       - Rewrite sefer(7)'s option list from the option tables
                      (scripts/genoptions.py)
  test-bins         - The unit suite and stress test (and the persist programs)
  port-test-bins    - The portable unit runner and stress test (ports without Check)
  persist-bins      - The persist test program, sefer-pstore and the persist benchmark
  decommit-tools    - selftest/decommit/rss_curve, the decommit measuring program
  ldlibs            - Print the libraries a static link of libsefer.a needs
  examples          - examples/lua: sefer-lua, a Lua 5.4 host with the amalgamation compiled
                      in (a sefer heap per lua_State), and sefer-lua-libc, its libc twin
  amalgamation      - $(O)/amalgamation/sefer.c and sefer.h: the configured library in two
                      files to copy into another project (Documentation/vendoring.rst)

Install targets (scripts/install.mk; Linux builds only):
  install           - Libraries, sefer.pc, headers, sefer-pstore and man pages under PREFIX
  uninstall         - Remove exactly what install wrote
  install-check-os  - Stop unless this configuration can be installed (install runs it)

Test targets (make check runs every group this configuration enables):
  check             - Every group; ends with "N passed, N failed"
  check-unit        - The Check unit suites
  check-stress      - The multithreaded stress test
  check-asan, check-tsan, check-tsan-urcu, check-tsan-variant, check-ubsan
                    - Unit suites and stress test built by clang under each sanitizer
                      (check-asan with CONFIG_SANITIZE_ADDRESS: sefer's poisoning on;
                      check-tsan-variant in the fuzz variant's configuration)
  check-config      - Build system: defconfig round trips, strict Kconfig, menuconfig,
                      config targets, incremental builds, this help
  check-kconfig-doc - Documentation/kconfig.rst's option reference matches the Kconfig help
  check-warnings    - gcc and clang builds with -Werror; clang's library maps only its core text
  check-sparse      - make C=2 in seven Linux configurations; fails on any sparse warning
  check-config-linux_min, check-config-hardened, check-config-small_segments
                    - Unit suites and stress test in alternate configurations
  check-allconfig   - allnoconfig (gcc) and allyesconfig (clang), built and tested
  check-randconfig  - N random configurations (N=4 by default; none starts after SECS=30 s
                      unless N or SECS is given), built and tested
  check-newpolicy   - A throwaway policy added to a copy of the tree, no core/ edit
  check-policies    - Every policy on, and numa with MPOL_BIND
  check-fastpath    - malloc and free disassembled: no lock, atomic RMW or call, budgets
  check-stats       - the stats JSON parsed by python3 against sefer_stats_get, SHOW_STATS's
                      forms, a program built against 0.1's stats calls, a query's cost
  check-real        - Real programs under LD_PRELOAD
  check-secure      - A setuid-root program run by nobody ignores SEFER_ON_ERROR=warn
  check-bench-harness
                    - The benchmark runner's ratio rules (bench/test_run.py) on made-up runs
  check-malloc-fuzz - libFuzzer (ASan, UBSan) over streams of sefer_* calls, FUZZ_TIME s
  check-malloc-fuzz-hardened
                    - The same in this configuration made hardened, fastbin policy on
  check-malloc-fuzz-variant
                    - The same without free marks, small segments, guard pages, no caches
  check-malloc-fuzz-faults
                    - The same with CONFIG_FAULT_INJECTION, 10% of the OS calls failing
  check-unit-faults, check-stress-faults
                    - The fault suite and the stress test with faults injected, in the
                      fault-injection configurations (fault-builds builds them)
  check-valgrind    - CONFIG_VALGRIND: misuse reports asserted, unit suite, stress, python3
                      and sqlite3 under valgrind with 0 errors; --soname-synonyms on libsefer.so
  check-asan-poison - CONFIG_SANITIZE_ADDRESS: ASan's use-after-poison reports on sefer blocks
  annotate-bins     - Build selftest/annotate/misuse (the checkers' misuse program)
  malloc-fuzz       - Build the malloc fuzzer (build/mfuzz/malloc-fuzz) without running it
  malloc-fuzz-distill
                    - Merge build/mfuzz/corpus into selftest/fuzz/distilled.b64 (commit it)
  check-amalgamation
                    - The amalgamation compiled alone (gcc, clang -Werror), the unit suite
                      linked with it, SEFER_STATIC_ALL checked with nm (also vendor_defconfig)
  check-symbols     - nm: no global symbol but the API, the malloc face and sefer__* in
                      libsefer.a, libsefer.so, the amalgamation (4 configs); a program with
                      its own report_error, page_find... links against libsefer.a and it
  check-lua         - sefer-lua and sefer-lua-libc against lua5.4: same output, status
  check-rust        - The Rust crates (bindings/rust): cargo test (GlobalAlloc contract,
                      #[global_allocator], double dealloc), packaged crates used from /tmp
  check-install     - Install into a DESTDIR, build outside programs with pkg-config alone
  check-man         - The man pages format cleanly and name every SEFER_* variable and call
  check-face        - glibc's and C23's names, mallinfo2, mallopt, malloc_info, alignments
  check-cxx         - C++ operator new and delete from sefer, a caught std::bad_alloc
  dropin-hardened   - The HARDENED copy check-face and check-cxx also run against
  check-persist, check-persist-crash, check-persist-fuzz
                    - The persistent allocator: units and bad files, crashes, fuzzing
  check-win32, check-aarch64, check-darwin-build
                    - The ports: under wine, under qemu-aarch64, compiled against a shim
  crashtest         - The persist kill loop alone (N=2000 crashes)

Run, benchmarks and measurements:
  run               - Build, run a real program and the headline benchmark under sefer
  bench             - Every benchmark against glibc, mimalloc 2 and 3, snmalloc, jemalloc,
                      tcmalloc; QUICK=1: about 5 min, without jemalloc, tcmalloc (PEERS=, SEFER_B=)
  bench-headline    - Steady churn and larson at 1 and 2 threads (~30 s)
  bench-config-pair - This build against CONFIG_B=SYM=val,... (built in O/pair): the
                      small-object rows, tgstress and xfer, paired (PAIR_ROUNDS=9)
  bench-progs       - Build the benchmark programs only
  bench-persist     - The persist benchmark against PMDK
  bench-heaps       - First-class heaps against the thread's heap (Documentation/heaps.rst)
  bench-lua         - Lua workloads: sefer heap per state vs glibc vs mimalloc, and
                      teardown of 1M live objects (bench/results/lua-latest.md)
  bench-rust        - GlobalAlloc benchmark (criterion): sefer vs mimalloc vs System
                      (bench/results/rust-latest.md; FULL=1: criterion's defaults)
  rust-package      - cargo package of sefer-sys (with the amalgamation) and sefer
  policies-measure  - The numbers in Documentation/policies/
  decommit-measure  - RSS curves of rss_curve under glibc, mimalloc and sefer

Variables:
  O=dir             - Build output directory (default build)
  V=1               - Show the commands
  C=1, C=2          - Run sparse on the library's C files that are compiled (C=1) or on
                      all of them, compiled or not (C=2) (Documentation/debugging.rst)
  CHECK=, CHECKFLAGS=
                    - The checker C= runs (default sparse) and its extra flags
  CC=, CROSS_COMPILE=, EXTRA_CFLAGS=
                    - Compiler, toolchain prefix, extra flags for the library and tests
  KCONFIG_SEED=s    - randconfig's seed; check-randconfig's first seed
  KCONFIG_ALLCONFIG=file
                    - Settings all*config and randconfig keep
  N=k               - check-randconfig's number of configurations; crashtest's crashes
  SECS=s            - check-randconfig's time budget (default 30 without N; 0: none)
  QUICK=1, THREADS=, BENCH_ONLY=, BENCH_ALLOC=
                    - bench options (bench/bench.mk)
  FUZZ_TIME=s       - check-persist-fuzz's and check-malloc-fuzz's run time (default 20)
  PREFIX=, DESTDIR=, LIBDIR=, INCLUDEDIR=, BINDIR=, MANDIR=, PKGCONFIGDIR=
                    - Where install writes (PREFIX=/usr/local)

Configurations in configs/:
endef
# exported for help's recipe only: every other recipe's environment, the programs make bench
# measures included, stays without its 10 KiB
help: export sefer_help := $(sefer_help)
help:
	@printf '%s\n' "$$sefer_help"
	@for f in $(sort $(notdir $(wildcard $(srctree)/configs/*_defconfig))); do \
		printf '  %s\n' "$$f"; done
.PHONY: clean distclean help

endif # mixed-goals
