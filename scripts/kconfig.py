#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Strict front end to Debian's kconfiglib for sefer's Makefile.

    kconfig.py defconfig FILE          load FILE (a minimal config) and write $KCONFIG_CONFIG
    kconfig.py olddefconfig            refresh $KCONFIG_CONFIG against the Kconfig tree
    kconfig.py savedefconfig OUT       write the minimal config for $KCONFIG_CONFIG to OUT
    kconfig.py genconfig HEADER MK [DIRS]
                                       write autoconf.h and auto.conf (only when they change);
                                       DIRS gets policy-dirs, the policies/<name>/ folders whose
                                       Kconfig is sourced, in source order (the Makefile reads
                                       each one's Kbuild)
    kconfig.py set FILE SYM=VAL...     copy config FILE to $KCONFIG_CONFIG with SYM set (tests)
    kconfig.py allnoconfig             every bool option n, where its dependencies allow
    kconfig.py allyesconfig            every bool option y, where its dependencies allow
    kconfig.py alldefconfig            every option at its default
    kconfig.py randconfig              every bool option and choice but the backend at random;
                                       the seed is $KCONFIG_SEED (decimal or 0x hex) or a fresh
                                       one, and is printed as KCONFIG_SEED=0x...
    kconfig.py listnewconfig           print the visible options $KCONFIG_CONFIG does not set,
                                       with the value they would get

The all*config and randconfig commands write $KCONFIG_CONFIG. If $KCONFIG_ALLCONFIG names a
config file, its settings are applied first and kept: only the other options are set to
n, y, their default or a random value (as in the kernel). In all of them, a choice
(sync layer, purge mode...) keeps its default except in randconfig, which picks a random
visible entry; int, hex and string options keep their defaults. The backend choice is to
sefer what ARCH is to the kernel: all of them keep its default, the host's, unless
$KCONFIG_ALLCONFIG sets it (a random backend would not build without its toolchain).

Unlike the stock tools, an unknown symbol or an invalid value in a config file is an error
that names the symbol and the file, not a warning that is easy to miss.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from genfile import write_if_changed  # noqa: E402

try:
    import kconfiglib
except ImportError:
    sys.exit("sefer: kconfiglib not found; run scripts/install-deps (needs python3-kconfiglib "
             "and /usr/bin/python3)")

SRCTREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FATAL = ("undefined symbol", "is not a valid value", "malformed", "unknown", "invalid")


def load_strict(kconf, path, replace=True):
    """Load config file path into kconf; an unknown symbol or a bad value exits."""
    if not os.path.exists(path):
        sys.exit("sefer: config file %s does not exist" % path)
    seen = len(kconf.warnings)
    kconf.load_config(path, replace=replace)
    new = kconf.warnings[seen:]
    bad = [w for w in new if any(f in w for f in FATAL)]
    for w in new:
        if w not in bad:
            print("sefer: kconfig warning: " + w.strip(), file=sys.stderr)
    if bad:
        for w in bad:
            print("sefer: kconfig error: " + w.strip(), file=sys.stderr)
        sys.exit("sefer: %s has %d invalid setting(s); nothing was written" % (path, len(bad)))


def load(path):
    os.environ.setdefault("srctree", SRCTREE)
    kconf = kconfiglib.Kconfig(os.path.join(SRCTREE, "Kconfig"), warn_to_stderr=False)
    kconf.warn_assign_undef = True
    for w in kconf.warnings:
        print("sefer: kconfig warning: " + w.strip(), file=sys.stderr)
    if path is not None:
        load_strict(kconf, path)
    return kconf


def load_fixed():
    """A tree at its defaults with $KCONFIG_ALLCONFIG applied; returns it and what that fixed."""
    kconf = load(None)
    fixed = set()
    allconfig = os.environ.get("KCONFIG_ALLCONFIG")
    if allconfig:
        load_strict(kconf, allconfig, replace=False)
        fixed = {s for s in kconf.unique_defined_syms if s.user_value is not None}
        fixed |= {c for c in kconf.unique_choices if c.user_selection is not None}
    return kconf, fixed


def is_bool(sym):
    return sym.orig_type in (kconfiglib.BOOL, kconfiglib.TRISTATE)


def set_all(kconf, fixed, high):
    """Every free bool option at its highest (high) or lowest assignable value."""
    for _ in range(100):  # until nothing changes: a value can make other options visible
        changed = False
        for sym in kconf.unique_defined_syms:
            if sym in fixed or sym.choice or not is_bool(sym) or not sym.assignable:
                continue
            want = sym.assignable[-1] if high else sym.assignable[0]
            if sym.user_value != want:
                sym.set_value(want)
                changed = True
        if not changed:
            return
    sys.exit("sefer: kconfig.py: the all*config assignment does not settle")


# Choices held at their default like the kernel's ARCH, named by one of their entries.
HOST_CHOICES = ("BACKEND_LINUX",)


def randomize(kconf, fixed, rng):
    """Walk the menu tree once, in order; each free bool option gets n or y (or m where
    assignable) and each free choice one of its visible entries, both drawn from rng. A
    given seed always draws the same values in the same order, hence the same .config."""
    done = {kconf.syms[s].choice for s in HOST_CHOICES if s in kconf.syms}
    for node in kconf.node_iter():
        item = node.item
        if item in done or item in fixed:
            continue
        done.add(item)
        if isinstance(item, kconfiglib.Symbol):
            if item.choice or not is_bool(item):
                continue
            draw = rng.randrange(2)
            if item.assignable:
                item.set_value(item.assignable[-1] if draw else item.assignable[0])
        elif isinstance(item, kconfiglib.Choice):
            entries = [s for s in item.syms if s.visibility]
            pick = rng.randrange(max(len(entries), 1))
            if entries:
                entries[pick].set_value(2)


def new_options(kconf):
    """Visible options with a prompt that the loaded .config does not set."""
    out = []
    for sym in kconf.unique_defined_syms:
        if not sym.visibility or not any(n.prompt for n in sym.nodes):
            continue
        if sym.choice:
            if sym.choice.user_selection is not None or sym.user_value is not None:
                continue
        elif sym.user_value is not None:
            continue
        out.append(sym)
    return out


def policy_dirs(kconf):
    """policies/<name> for each policies/<name>/Kconfig the tree sources, first source first."""
    dirs = []
    for name in kconf.kconfig_filenames:
        parts = os.path.normpath(name).split(os.sep)
        if len(parts) == 3 and parts[0] == "policies" and parts[2] == "Kconfig":
            d = "/".join(parts[:2])
            if d not in dirs:
                dirs.append(d)
    return dirs


def out_config():
    path = os.environ.get("KCONFIG_CONFIG", ".config")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return path


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "defconfig":
        kconf = load(args[0])
        kconf.write_config(out_config())
        print("  CONFIG   %s from %s" % (out_config(), os.path.relpath(args[0], SRCTREE)))
    elif cmd == "olddefconfig":
        cfg = out_config()
        kconf = load(cfg if os.path.exists(cfg) else None)
        kconf.write_config(cfg)
    elif cmd == "savedefconfig":
        kconf = load(out_config())
        kconf.write_min_config(args[0])
    elif cmd == "genconfig":
        kconf = load(out_config())
        kconf.write_autoconf(args[0])
        kconf.write_config(args[1], save_old=False)
        if len(args) > 2:
            write_if_changed(args[2], "# Generated by scripts/kconfig.py from the Kconfig tree\n"
                             "policy-dirs := %s\n" % " ".join(policy_dirs(kconf)))
    elif cmd in ("allnoconfig", "allyesconfig", "alldefconfig", "randconfig"):
        kconf, fixed = load_fixed()
        how = ""
        if cmd == "randconfig":
            seed = os.environ.get("KCONFIG_SEED")
            try:
                seed = int(seed, 0) if seed else int.from_bytes(os.urandom(4), "little")
            except ValueError:
                sys.exit("sefer: KCONFIG_SEED=%s is not a number" % seed)
            print("KCONFIG_SEED=0x%x" % seed)
            randomize(kconf, fixed, random.Random(seed))
            how = ", seed 0x%x" % seed
        elif cmd != "alldefconfig":
            set_all(kconf, fixed, cmd == "allyesconfig")
        kconf.write_config(out_config())
        if fixed:
            how += ", %d option(s) kept from %s" % (len(fixed), os.environ["KCONFIG_ALLCONFIG"])
        print("  CONFIG   %s (%s%s)" % (out_config(), cmd, how))
    elif cmd == "listnewconfig":
        cfg = out_config()
        kconf = load(cfg if os.path.exists(cfg) else None)
        for sym in new_options(kconf):
            if is_bool(sym):
                print("CONFIG_%s=%s" % (sym.name, sym.str_value))
            else:
                print(sym.config_string.strip())
    elif cmd == "set":
        kconf = load(args[0])
        for assign in args[1:]:
            name, _, val = assign.partition("=")
            name = name[7:] if name.startswith("CONFIG_") else name
            sym = kconf.syms.get(name)
            if sym is None or not sym.nodes:
                sys.exit("sefer: unknown Kconfig symbol CONFIG_%s" % name)
            if not sym.set_value(val) or sym.str_value != val:
                sys.exit("sefer: CONFIG_%s=%s is not a valid value here (got %s)"
                         % (name, val, sym.str_value))
        kconf.write_config(out_config())
    else:
        sys.exit("sefer: kconfig.py: unknown command %s" % cmd)


if __name__ == "__main__":
    main(sys.argv)
