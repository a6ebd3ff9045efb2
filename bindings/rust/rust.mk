# SPDX-License-Identifier: MIT
# The Rust crates (bindings/rust/README.md): sefer-sys, sefer, and the GlobalAlloc benchmark.
#
#   make check-rust     cargo test of sefer-sys and sefer (the GlobalAlloc contract, a
#                       #[global_allocator] program, a double dealloc aborting in a child);
#                       the #[global_allocator] program with the feature system on an
#                       installed libsefer.so (vendor_defconfig); then rust-package, and a
#                       program outside the tree built on the packaged crates alone
#                       (selftest/rust/check-outside.sh). Budget: 3 minutes on 2 CPUs from a
#                       fresh clone (42 s and 104 s measured, at load averages 7 and 13)
#   make bench-rust     the GlobalAlloc benchmark under criterion: sefer, mimalloc, System;
#                       writes bench/results/rust-latest.md (FULL=1: criterion's defaults)
#   make rust-package   the amalgamation of configs/vendor_defconfig into
#                       bindings/rust/sefer-sys/csrc/, then cargo package of both crates into
#                       $(O)/rust-target/package/
#
# Cargo is rustup's when there is one (~/.cargo/bin), else the one on PATH (Debian's); CARGO=
# overrides. Crates come from Debian's librust-*-dev packages (bindings/rust/.cargo/config.toml).

CARGO ?= $(firstword $(wildcard $(HOME)/.cargo/bin/cargo) \
	$(shell command -v cargo 2>/dev/null) cargo)
rust-dir := $(srctree)/bindings/rust
rust-target := $(objtree)/rust-target
rust-vendor := $(objtree)/rust-vendor
rust-system := $(objtree)/rust-system
# Warnings are errors for the crates of this tree (cargo caps the registry crates' lints).
rust-env = PATH="$(dir $(CARGO)):$$PATH" CARGO_TARGET_DIR=$(rust-target) RUSTFLAGS=-Dwarnings
# --exclude-lockfile: sefer's lock file would name sefer-sys from a registry that does not have
# it yet (cargo before 1.84 packs no lock file for a library, and lacks the flag).
rust-pkg-flags = $(shell $(CARGO) package --help 2>/dev/null | grep -q -- --exclude-lockfile && \
	echo --exclude-lockfile)

rust-package:
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(rust-vendor) vendor_defconfig >/dev/null
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(rust-vendor) amalgamation
	$(Q)mkdir -p $(rust-dir)/sefer-sys/csrc
	$(Q)cp $(rust-vendor)/amalgamation/sefer.c $(rust-vendor)/amalgamation/sefer.h \
		$(rust-dir)/sefer-sys/csrc/
	@echo "  CARGO   package sefer-sys sefer"
	$(Q)cd $(rust-dir) && $(rust-env) $(CARGO) package --offline --no-verify --allow-dirty \
		--registry crates-io $(rust-pkg-flags) -q -p sefer-sys -p sefer
	@ls $(rust-target)/package/*.crate

ifeq ($(CONFIG_BACKEND_LINUX)$(CONFIG_CROSS_COMPILE),y"")
check-targets += check-rust
endif
check-rust:
	$(Q)cd $(rust-dir) && $(rust-env) $(CARGO) test --offline -p sefer-sys -p sefer
	@echo "== feature system: libsefer.so of configs/vendor_defconfig installed in $(rust-system)"
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(rust-system) vendor_defconfig >/dev/null
	$(Q)$(MAKE) -s -f $(srctree)/Makefile O=$(rust-system) install PREFIX=$(rust-system)/usr \
		>/dev/null
	$(Q)cd $(rust-dir) && exe=$$($(rust-env) PKG_CONFIG_PATH=$(rust-system)/usr/lib/pkgconfig \
		$(CARGO) test --offline -p sefer --features system --test global_allocator --no-run 2>&1 | \
		sed -n 's/.*Executable .* (\(.*\))$$/\1/p') && \
	if LD_LIBRARY_PATH=$(rust-system)/usr/lib ldd $$exe | \
		grep -q "libsefer.so.0 => $(rust-system)/usr/lib/"; then \
		echo "ok   the test program links $(rust-system)/usr/lib/libsefer.so.0"; \
	else echo "FAIL $$exe does not link the installed libsefer.so.0"; exit 1; fi && \
	LD_LIBRARY_PATH=$(rust-system)/usr/lib $$exe
	$(Q)$(MAKE) -f $(srctree)/Makefile O=$(O) rust-package
	$(Q)$(rust-env) bash $(srctree)/selftest/rust/check-outside.sh $(rust-target)/package \
		$(rust-target) $(CARGO)

bench-rust:
	$(Q)rm -rf $(rust-target)/criterion # each run alone: no comparison with the last one
	$(Q)cd $(rust-dir) && t0=$$(date +%s) && load=$$(cut -d" " -f1 /proc/loadavg) && $(rust-env) \
		SEFER_BENCH_META=$(rust-target)/bench-meta $(if $(filter 1,$(FULL)),SEFER_BENCH_FULL=1) \
		$(CARGO) bench --offline -p sefer-bench && \
		$(PYTHON) $(srctree)/bench/rust_report.py --criterion $(rust-target)/criterion \
			--meta $(rust-target)/bench-meta --out $(srctree)/bench/results/rust-latest.md \
			--profile "$(if $(filter 1,$(FULL)),criterion defaults (FULL=1),quick: sample size \
10, 150 ms warm-up, 600 ms measurement)" --seconds $$(($$(date +%s) - t0)) --load-start $$load
.PHONY: rust-package check-rust bench-rust
