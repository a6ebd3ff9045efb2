# SPDX-License-Identifier: MIT
# make install / make uninstall: sefer installed system-wide, the way jemalloc and tcmalloc are.
#
#   make install   [PREFIX=/usr/local] [DESTDIR=] [LIBDIR=$(PREFIX)/lib]
#                  [INCLUDEDIR=$(PREFIX)/include] [BINDIR=$(PREFIX)/bin]
#                  [MANDIR=$(PREFIX)/share/man] [PKGCONFIGDIR=$(LIBDIR)/pkgconfig]
#   make uninstall (the same variables): removes exactly what install wrote
#   make check-install   install into a DESTDIR, build and run outside programs with pkg-config
#
# What install writes (under DESTDIR):
#   LIBDIR/libsefer.so.MAJOR.MINOR.PATCH, its SONAME link libsefer.so.MAJOR, the link
#   libsefer.so, libsefer.a; PKGCONFIGDIR/sefer.pc (Libs.private: what a static link needs, as
#   configured: -lurcu-bp, -lnuma, -lpthread); INCLUDEDIR/sefer.h and, with CONFIG_PERSIST,
#   INCLUDEDIR/sefer/persist.h and BINDIR/sefer-pstore; MANDIR/man3/sefer.3, man7/sefer.7
#   and, with CONFIG_PERSIST, man1/sefer-pstore.1.
# Only Linux builds install (an ELF shared library with a SONAME); others say so and stop.

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL ?= install

pc-file := $(objtree)/sefer.pc
# A directory under PREFIX is written relative to ${prefix}, so pkg-config --define-prefix and
# PKG_CONFIG_SYSROOT_DIR work on the file as on any other.
pc-dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(patsubst $(PREFIX),$${prefix},$(1)))

inst-lib := libsefer.so.$(SEFER_VERSION)
inst-files := $(LIBDIR)/$(inst-lib) $(LIBDIR)/$(SEFER_SONAME) $(LIBDIR)/libsefer.so \
	$(LIBDIR)/libsefer.a $(PKGCONFIGDIR)/sefer.pc $(INCLUDEDIR)/sefer.h \
	$(addprefix $(MANDIR)/,$(man-inst))
ifeq ($(CONFIG_PERSIST),y)
inst-files += $(INCLUDEDIR)/sefer/persist.h $(BINDIR)/sefer-pstore
endif

install-check-os:
	$(Q)if [ "$(CONFIG_BACKEND_LINUX)" != y ]; then \
		echo "sefer: make install is for Linux builds; this configuration builds" \
			"$(notdir $(shared-lib)) (copy the libraries by hand)" >&2; exit 1; fi

# Written at each install: PREFIX and LIBDIR are make variables, not part of the config.
$(pc-file): install-check-os $(autoconf-mk) $(srctree)/include/sefer.h
	$(Q){ echo 'prefix=$(PREFIX)'; \
	echo 'libdir=$(call pc-dir,$(LIBDIR))'; \
	echo 'includedir=$(call pc-dir,$(INCLUDEDIR))'; \
	echo; \
	echo 'Name: sefer'; \
	echo 'Description: memory allocator: malloc and C++ new replacement, sefer_* API, persist face'; \
	echo 'Version: $(SEFER_VERSION)'; \
	echo 'Cflags: -I$${includedir}'; \
	echo 'Libs: -L$${libdir} -lsefer'; \
	echo 'Libs.private: $(strip $(lib-libs) -lpthread)'; } > $@

install: install-check-os all $(pc-file)
	$(quiet) INSTALL "$(DESTDIR)$(PREFIX)"
	$(Q)$(INSTALL) -d "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(PKGCONFIGDIR)" "$(DESTDIR)$(INCLUDEDIR)" \
		$(addprefix "$(DESTDIR)$(MANDIR)/,$(addsuffix ",$(sort $(dir $(man-inst)))))
	$(Q)$(INSTALL) -m 644 $(shared-lib) "$(DESTDIR)$(LIBDIR)/$(inst-lib)"
	$(Q)ln -sf $(inst-lib) "$(DESTDIR)$(LIBDIR)/$(SEFER_SONAME)"
	$(Q)ln -sf $(SEFER_SONAME) "$(DESTDIR)$(LIBDIR)/libsefer.so"
	$(Q)$(INSTALL) -m 644 $(static-lib) "$(DESTDIR)$(LIBDIR)/libsefer.a"
	$(Q)$(INSTALL) -m 644 $(pc-file) "$(DESTDIR)$(PKGCONFIGDIR)/sefer.pc"
	$(Q)$(INSTALL) -m 644 $(srctree)/include/sefer.h "$(DESTDIR)$(INCLUDEDIR)/sefer.h"
	$(Q)$(foreach m,$(man-inst),$(INSTALL) -m 644 $(objtree)/man/$(notdir $(m)) \
		"$(DESTDIR)$(MANDIR)/$(m)" &&) true
ifeq ($(CONFIG_PERSIST),y)
	$(Q)$(INSTALL) -d "$(DESTDIR)$(INCLUDEDIR)/sefer" "$(DESTDIR)$(BINDIR)"
	$(Q)$(INSTALL) -m 644 $(srctree)/include/sefer/persist.h "$(DESTDIR)$(INCLUDEDIR)/sefer/persist.h"
	$(Q)$(INSTALL) -m 755 $(pstore-cli) "$(DESTDIR)$(BINDIR)/sefer-pstore"
endif

uninstall:
	$(quiet) UNINST "$(DESTDIR)$(PREFIX)"
	$(Q)rm -f $(addprefix "$(DESTDIR),$(addsuffix ",$(inst-files)))
	$(Q)rmdir "$(DESTDIR)$(INCLUDEDIR)/sefer" 2>/dev/null || true

.PHONY: install uninstall install-check-os $(pc-file)

# ---- check-install: a DESTDIR install, then outside programs built with pkg-config alone
ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-install
endif
check-install: all
	$(Q)bash $(srctree)/selftest/dropin/check-install.sh $(srctree) $(objtree) \
		$(objtree)/check-install "$(CONFIG_PERSIST)"
.PHONY: check-install
