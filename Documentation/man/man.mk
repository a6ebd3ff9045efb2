# SPDX-License-Identifier: MIT
# The man pages: roff sources here, rendered into $(O)/man at build time (the release number
# filled in), installed by 'make install', checked by 'make check-man'.
#
#   sefer(3)         the API: the malloc face, C++ new/delete, glibc's and C23's names, sefer_*
#   sefer(7)         SEFER_* options, error reports, the Kconfig options users meet
#   sefer-pstore(1)  the persist store tool (CONFIG_PERSIST)

man-inst := man3/sefer.3 man7/sefer.7
ifeq ($(CONFIG_PERSIST),y)
man-inst += man1/sefer-pstore.1
endif
man-out := $(addprefix $(objtree)/man/,$(notdir $(man-inst)))

$(objtree)/man/%: $(srctree)/Documentation/man/% $(srctree)/include/sefer.h
	$(Q)mkdir -p $(dir $@)
	$(quiet) MAN $(patsubst $(objtree)/%,%,$@)
	$(Q)sed -e 's/@VERSION@/$(SEFER_VERSION)/g' $< > $@

man: $(man-out)
all: man
.PHONY: man

# Each page renders with man -l without a groff warning, and the pages keep up with the code:
# sefer(7)'s option list is generated from the option tables (make man-options rewrites it,
# scripts/genoptions.py), every sefer_* call of sefer.h is in sefer(3).
check-targets += check-man
check-man: man
	$(Q)bash $(srctree)/selftest/dropin/check-man.sh $(srctree) $(man-out)
.PHONY: check-man

man-options:
	$(Q)$(PYTHON) $(srctree)/scripts/genoptions.py $(srctree) --write \
		$(srctree)/Documentation/man/sefer.7
.PHONY: man-options
