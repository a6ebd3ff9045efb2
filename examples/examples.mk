# SPDX-License-Identifier: MIT
# examples/: programs that use sefer the way another project would.
#
#   make examples        $(O)/examples/lua/sefer-lua: a Lua 5.4 host with the amalgamation
#                        (configs/vendor_defconfig) compiled in, a sefer heap per lua_State;
#                        and sefer-lua-libc, the same host on the C library's allocator
#   make check-lua       both hosts against lua5.4 on examples/lua/tests and small workloads
#   make bench-lua       examples/lua/bench workloads: sefer-lua vs sefer-lua-libc vs
#                        sefer-lua-libc with mimalloc preloaded, time and peak RSS, and the
#                        teardown of a state with 1M live objects; writes
#                        bench/results/lua-latest.{md,csv}  (LUA_RUNS=n, default 5)

lua-dir := $(objtree)/examples/lua
lua-vendor := $(lua-dir)/vendor
lua-amalg := $(lua-vendor)/amalgamation/sefer.c
lua-host := $(lua-dir)/sefer-lua
lua-host-libc := $(lua-dir)/sefer-lua-libc
LUA_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
LUA_LIBS := $(shell pkg-config --libs lua5.4 2>/dev/null || echo -llua5.4)
LUA_RUNS ?= 5

# The host's own copy of sefer: configured from configs/vendor_defconfig in its own O=.
$(lua-vendor)/.config: $(srctree)/configs/vendor_defconfig
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(lua-vendor) vendor_defconfig >/dev/null
$(lua-amalg): $(lua-vendor)/.config FORCE
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(lua-vendor) amalgamation

# What to link comes from the amalgamation's own header ("Link with:").
$(lua-host): $(srctree)/examples/lua/sefer-lua.c $(lua-amalg)
	$(quiet) CC examples/lua/sefer-lua
	$(Q)$(CC) -std=gnu11 -O2 -g $(WARN) $(EXTRA_CFLAGS) -I$(dir $(lua-amalg)) $(LUA_CFLAGS) \
		-o $@ $< $(LUA_LIBS) $$(sed -n 's/^ \* Link with: *//p' $(lua-amalg)) -lm
$(lua-host-libc): $(srctree)/examples/lua/sefer-lua.c
	$(Q)mkdir -p $(dir $@)
	$(quiet) CC examples/lua/sefer-lua-libc
	$(Q)$(CC) -std=gnu11 -O2 -g $(WARN) $(EXTRA_CFLAGS) -DSEFER_LUA_LIBC_ALLOC $(LUA_CFLAGS) \
		-o $@ $< $(LUA_LIBS) -lm

examples: $(lua-host) $(lua-host-libc)

ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-lua
endif
check-lua: examples
	$(Q)for cc in gcc clang; do for d in "" -DSEFER_LUA_LIBC_ALLOC; do \
		$$cc -std=gnu11 -O2 $(WARN) -Werror -fsyntax-only $$d -I$(dir $(lua-amalg)) \
			$(LUA_CFLAGS) $(srctree)/examples/lua/sefer-lua.c || exit 1; done; done
	@echo "ok   sefer-lua.c: no warnings from gcc and clang (-Werror), in both builds"
	$(Q)bash $(srctree)/examples/lua/check-lua.sh $(srctree) $(lua-dir)

bench-lua: examples
	$(Q)$(PYTHON) $(srctree)/examples/lua/bench/run.py --hosts $(lua-dir) --runs $(LUA_RUNS) \
		--out $(srctree)/bench/results
.PHONY: examples check-lua bench-lua
