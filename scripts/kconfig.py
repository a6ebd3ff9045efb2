#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Strict front end to Debian's kconfiglib for sefer's Makefile.

    kconfig.py defconfig FILE          load FILE (a minimal config) and write $KCONFIG_CONFIG
    kconfig.py olddefconfig            refresh $KCONFIG_CONFIG against the Kconfig tree
    kconfig.py savedefconfig OUT       write the minimal config for $KCONFIG_CONFIG to OUT
    kconfig.py genconfig HEADER MK     write autoconf.h and auto.conf (only when they change)
    kconfig.py set FILE SYM=VAL...     copy config FILE to $KCONFIG_CONFIG with SYM set (tests)

Unlike the stock tools, an unknown symbol or an invalid value in a config file is an error
that names the symbol and the file, not a warning that is easy to miss.
"""
import os
import sys

try:
    import kconfiglib
except ImportError:
    sys.exit("sefer: kconfiglib not found; run scripts/install-deps (needs python3-kconfiglib "
             "and /usr/bin/python3)")

SRCTREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FATAL = ("undefined symbol", "is not a valid value", "malformed", "unknown", "invalid")


def load(path):
    os.environ.setdefault("srctree", SRCTREE)
    kconf = kconfiglib.Kconfig(os.path.join(SRCTREE, "Kconfig"), warn_to_stderr=False)
    kconf.warn_assign_undef = True
    if path is not None:
        if not os.path.exists(path):
            sys.exit("sefer: config file %s does not exist" % path)
        kconf.load_config(path)
    bad = [w for w in kconf.warnings if any(f in w for f in FATAL)]
    for w in kconf.warnings:
        if w not in bad:
            print("sefer: kconfig warning: " + w.strip(), file=sys.stderr)
    if bad:
        for w in bad:
            print("sefer: kconfig error: " + w.strip(), file=sys.stderr)
        sys.exit("sefer: %s has %d invalid setting(s); nothing was written" % (path, len(bad)))
    return kconf


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
