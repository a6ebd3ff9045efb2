#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write the option reference of Documentation/kconfig.rst from the Kconfig help texts.

    kconfig_doc.py update RST     rewrite the section of RST between the markers
    kconfig_doc.py check RST      exit 1 with a diff when that section is not what the
                                  Kconfig tree gives (make check-kconfig-doc)

The markers are the comment lines ".. kconfig-doc: begin" and ".. kconfig-doc: end"; what
lies outside them is hand-written and kept. The section walks the Kconfig tree from the root
Kconfig in menu order: one subsection per top-level menu (or menuconfig), and per option its
prompt, type, range, default, dependencies, what it selects and its help text. Options without
a prompt (set only by select) are left out: a user never sets them. Help texts are plain
prose; a word in them that reStructuredText would read as markup (sefer_*, a trailing
underscore, a backquote or a bar) is set as an inline literal, so the committed file reads as
the help texts do.
"""
import difflib
import os
import re
import sys

try:
    import kconfiglib
except ImportError:
    sys.exit("sefer: kconfiglib not found; run scripts/install-deps (needs python3-kconfiglib "
             "and /usr/bin/python3)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from genfile import write_if_changed  # noqa: E402

SRCTREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = ".. kconfig-doc: begin"
END = ".. kconfig-doc: end"
# a word reStructuredText would take for markup: a star or a backquote or a bar inside it, or
# an underscore that ends it (a hyperlink reference)
MARKUP = re.compile(r"[*`|].|.[*`|]|[A-Za-z0-9]_(?![A-Za-z0-9])")


def expr(e):
    """An expression as Kconfig writes it, without kconfiglib's <choice> term."""
    s = kconfiglib.expr_str(e)
    s = re.sub(r"\s*&&\s*<choice>|<choice>\s*&&\s*", "", s)
    return "" if s in ("y", "<choice>") else s


def literal(s):
    return "``%s``" % s


def rst_text(line):
    """One line of help text with its markup-looking words set as literals."""
    out = []
    for word in line.split(" "):
        m = re.match(r"^([(\"']*)(.*?)([)\"'.,;:]*)$", word)
        lead, core, tail = m.groups()
        if core and MARKUP.search(core):
            word = lead + literal(core) + tail
        out.append(word)
    return " ".join(out)


def help_lines(node, indent):
    """The node's help text, paragraphs kept, indented."""
    if not node.help:
        return []
    lines = [""]
    for ln in node.help.rstrip().split("\n"):
        lines.append(indent + rst_text(ln.rstrip()) if ln.strip() else "")
    return lines


def value(sym, v):
    """A default's value as the reader sets it: y/n, a number, a quoted string."""
    s = kconfiglib.expr_str(v)
    if sym.orig_type == kconfiglib.STRING and not s.startswith('"'):
        s = '"%s"' % s
    return s


def defaults(sym_or_choice, show):
    """'default a if c, else b' for a symbol's or a choice's defaults."""
    parts = []
    for d, cond in sym_or_choice.orig_defaults:
        c = expr(cond)
        parts.append(literal(show(d)) + (" if " + literal(c) if c else ""))
    if not parts:
        return ""
    return "default " + ", else ".join(parts)


def facts(sym, dep, in_choice):
    """The line under an option's name: type, range, default, dependencies, selects (a
    choice's entry has no type or default of its own)."""
    out = [] if in_choice else [kconfiglib.TYPE_TO_STR[sym.orig_type]]
    for lo, hi, cond in sym.orig_ranges:
        c = expr(cond)
        out.append("range %s to %s%s" % (lo.str_value, hi.str_value,
                                          " if " + literal(c) if c else ""))
    d = defaults(sym, lambda v: value(sym, v))
    if d:
        out.append(d)
    if dep:
        out.append("depends on " + literal(dep))
    sel = [literal(s.name) for s, _ in sym.orig_selects]
    if sel:
        out.append("selects " + " and ".join(sel))
    return "; ".join(out) + "." if out else ""


def entry(node, indent, parent_dep=""):
    """A symbol or a choice as a definition-list item, its children after it."""
    item = node.item
    lines = []
    if isinstance(item, kconfiglib.Symbol):
        if not node.prompt:
            return []
        dep = expr(item.direct_dep)
        if parent_dep and dep == parent_dep:
            dep = ""  # a choice entry: its choice says it
        lines += ["", indent + "%s: %s" % (literal(item.name), rst_text(node.prompt[0]))]
        line = facts(item, dep, isinstance(node.parent.item, kconfiglib.Choice))
        if line:
            lines.append(indent + "  " + line)
        lines += help_lines(node, indent + "  ")
    elif isinstance(item, kconfiglib.Choice):
        dep = expr(item.direct_dep)
        head = [d for d in [defaults(item, lambda s: s.name),
                            "depends on " + literal(dep) if dep else ""] if d]
        lines += ["", indent + "Choice: " + rst_text(node.prompt[0]),
                  indent + "  One of the entries below; " + "; ".join(head) + "."]
        lines += help_lines(node, indent + "  ")
        child = node.list
        while child:
            lines += entry(child, indent + "  ", dep)
            child = child.next
        return lines
    child = node.list
    while child:
        lines += entry(child, indent)
        child = child.next
    return lines


def reference(kconf):
    """The generated section: one subsection per top-level menu or menuconfig."""
    lines = []
    node = kconf.top_node.list
    while node:
        if node.is_menuconfig or isinstance(node.item, kconfiglib.Symbol):
            title = node.prompt[0] if node.prompt else ""
            if node.item == kconfiglib.MENU:
                body = []
                child = node.list
                while child:
                    body += entry(child, "")
                    child = child.next
            else:
                body = entry(node, "")
            if body:
                title = re.sub(r":.*", "", title)  # "Persist face: ..." -> "Persist face"
                lines += ["", title, "-" * len(title)] + body
        node = node.next
    return "\n".join(lines[1:]) + "\n"


def load():
    os.environ.setdefault("srctree", SRCTREE)
    kconf = kconfiglib.Kconfig(os.path.join(SRCTREE, "Kconfig"), warn_to_stderr=False)
    if kconf.warnings:
        sys.exit("sefer: kconfig warnings:\n" + "\n".join(kconf.warnings))
    return kconf


def rewrite(text, section):
    """text with the lines between the markers replaced by section."""
    lines = text.split("\n")
    try:
        b = lines.index(BEGIN)
        e = lines.index(END)
    except ValueError:
        sys.exit("sefer: no '%s' ... '%s' lines in the file" % (BEGIN, END))
    if e < b:
        sys.exit("sefer: '%s' before '%s'" % (END, BEGIN))
    return "\n".join(lines[:b + 1] + ["", section.rstrip("\n"), ""] + lines[e:])


def main(argv):
    if len(argv) != 3 or argv[1] not in ("update", "check"):
        sys.exit(__doc__.split("\n\n")[1])
    path = argv[2]
    with open(path) as f:
        old = f.read()
    new = rewrite(old, reference(load()))
    if argv[1] == "update":
        write_if_changed(path, new)
        return 0
    if new == old:
        print("ok   %s: the option reference matches the Kconfig help texts" % path)
        return 0
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                               path, path + " (from Kconfig)"))
    print("FAIL %s drifted from the Kconfig help texts: edit the help texts (Kconfig), "
          "then run make kconfig-doc" % path)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
