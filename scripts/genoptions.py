#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sefer(7)'s option list, from the option tables in the source (core/options.h).

    genoptions.py SRCTREE                print the generated roff parts
    genoptions.py SRCTREE --check PAGE   exit 1 (with a diff) when PAGE's parts differ
    genoptions.py SRCTREE --write PAGE   rewrite PAGE's parts in place

The tables are `struct sefer_option NAME[...] = { {...}, ..., { .name = NULL } };` in
core/options.c and in every policies/*/*.c, each entry a designated initializer whose fields
are string literals or plain numbers (UINT64_MAX, a `(uint64_t)CONFIG_X << 10` expression with
doc_default beside it). A table is read whether its policy is enabled or not, so the page lists
every option of every policy. PAGE holds two generated parts, each between a line
`.\\" BEGIN GENERATED <PART>` and `.\\" END GENERATED <PART>`: OPTIONS (one .TP entry per
option) and SECURE (which options secure execution ignores or only lets tighten).
"""
import difflib
import glob
import os
import re
import sys

TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|[A-Za-z_][A-Za-z0-9_]*|'
                   r'\d+[A-Za-z]*|<<|.', re.S)


def tokens(text):
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.isspace() or t.startswith("//") or t.startswith("/*"):
            continue
        yield t


def c_string(t):
    return bytes(t[1:-1], "utf-8").decode("unicode_escape")


def split_top(toks, sep):
    """Split a token list at `sep` tokens not nested in (), {} or []."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t in "({[":
            depth += 1
        elif t in ")}]":
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def value(toks):
    """A field's value: a str for string literals (concatenated, or the strings of a compound
    literal's list), else the expression's text."""
    strs = [c_string(t) for t in toks if t.startswith('"')]
    if toks and toks[0] == "(" and "{" in toks:  # (const char *const[]){ "a", "b", NULL }
        return strs
    if strs and all(t.startswith('"') for t in toks):
        return "".join(strs)
    return " ".join(toks)


def number(expr):
    e = re.sub(r"\(uint64_t\)", "", expr).replace("ULL", "").replace("UL", "")
    if e.strip() == "UINT64_MAX":
        return 2**64 - 1
    if not re.fullmatch(r"[\d\s<()]+", e):
        return None
    return int(eval(e))  # digits, spaces, parentheses and << only


def tables(path):
    text = open(path).read()
    for m in re.finditer(r"struct sefer_option\s+\w+\s*\[[^\]]*\]\s*=\s*\{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = list(tokens(text[m.end():i - 1]))
        for entry in split_top(body, ","):
            if not entry or entry[0] != "{":
                continue
            fields = {}
            for f in split_top(entry[1:-1], ","):
                if len(f) < 3 or f[0] != ".":
                    sys.exit("genoptions: %s: cannot read field %r" % (path, " ".join(f)))
                eq = f.index("=")
                fields["".join(f[1:eq])] = value(f[eq + 1:])
            if fields.get("name") not in (None, "NULL"):
                fields["source"] = path
                yield fields


def all_options(src):
    files = [os.path.join(src, "core/options.c")]
    files += sorted(glob.glob(os.path.join(src, "policies/*/*.c")))
    opts = [o for f in files for o in tables(f)]
    names = [o["name"] for o in opts]
    if len(set(names)) != len(names):
        sys.exit("genoptions: an option is defined twice: %s" % " ".join(names))
    for o in opts:
        for f in ("type", "secure", "help", "def"):
            if f not in o:
                sys.exit("genoptions: %s: SEFER_%s has no .%s" % (o["source"], o["name"], f))
    return opts


def esc(text):
    """Plain text to roff: backslashes, a leading dot or quote, `code` in bold."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"`([^`]*)`", lambda m: "\\fB" + m.group(1).replace("-", "\\-") + "\\fR",
                  text)
    return "\n".join(("\\&" + ln if ln[:1] in ".'" else ln) for ln in text.split("\n"))


def sentences(text):
    """One sentence a line, as roff wants (its end-of-sentence spacing follows the line)."""
    return esc(re.sub(r"\. +", ".\n", text))


def size_text(v):
    for shift, suffix in ((40, "T"), (30, "G"), (20, "M"), (10, "K")):
        if v and v % (1 << shift) == 0:
            return "%d%s" % (v >> shift, suffix)
    return str(v)


def default_text(o):
    if "doc_default" in o:
        return o["doc_default"]
    v = number(o["def"]) if o["type"] != "OPT_CHOICE" else None
    if o["type"] == "OPT_CHOICE":
        i = number(o["def"])
        if i is None:
            sys.exit("genoptions: SEFER_%s: give .def as a number or add doc_default" % o["name"])
        return "\\fB%s\\fR" % o["choices"][i]
    if v is None:
        sys.exit("genoptions: SEFER_%s: .def %r needs a doc_default" % (o["name"], o["def"]))
    return size_text(v) if o["type"] == "OPT_SIZE" else str(v)


def entry(o):
    name, t = "SEFER_" + o["name"], o["type"]
    out = [".TP"]
    if t == "OPT_BOOL":
        out.append(".BR %s = 0 | 1" % name)
    elif t == "OPT_CHOICE":
        out.append(".BR %s = %s" % (name, " | ".join(o["choices"])))
    else:
        out.append(".BI %s= %s" % (name, "N" if t == "OPT_UINT" else "BYTES"))
    out.append("Default %s." % default_text(o))
    lo, hi = number(o.get("min", "0")), number(o.get("max", "0"))
    if t == "OPT_UINT" or (t == "OPT_SIZE" and (lo, hi) != (0, 2**64 - 1)):
        fmt = size_text if t == "OPT_SIZE" else str
        out.append("From %s to %s." % (fmt(lo), fmt(hi)))
    out.append(sentences(o["help"]))
    if t == "OPT_SIZE":
        out += ["A", ".BR K \", \" M \", \" G \" or \" T",
                "suffix (powers of 1024, optionally followed by", ".B B", "or", ".BR iB )",
                "multiplies."]
    if "needs" in o:
        out += ["Needs", ".BR %s ." % o["needs"]]
    if "example" in o:
        m = re.fullmatch(r"([^`]*?)\s*(?:`([^`]*)`)?", o["example"])
        out += [".IP", "Example:", ".B %s" % m.group(1).replace("-", "\\-")]
        if m.group(2):
            out.append(esc(m.group(2)))
    return "\n".join(out)


def name_list(names):
    out = []
    for i, n in enumerate(names):
        punct = "." if i == len(names) - 1 else ","
        if i == len(names) - 2:
            out += [".B %s" % n, "and"]
        else:
            out.append(".BR %s %s" % (n, punct))
    return out


def secure_part(opts):
    ignored = ["SEFER_" + o["name"] for o in opts if o["secure"] == "OPT_SECURE_IGNORED"]
    lower = ["SEFER_" + o["name"] for o in opts if o["secure"] == "OPT_SECURE_LOWER"]
    out = [".PP", "Ignored there, from the environment (each of them prints):"]
    out += name_list(ignored)
    out += [".PP", "Taken only when the value does not exceed the one it replaces (lower is "
            "tighter; for a choice, an earlier one in its list):"]
    out += name_list(lower)
    return "\n".join(out)


def parts(src):
    opts = all_options(src)
    return {"OPTIONS": "\n".join(entry(o) for o in opts), "SECURE": secure_part(opts)}


def splice(page, gen):
    for part, text in gen.items():
        begin, end = '.\\" BEGIN GENERATED %s\n' % part, '.\\" END GENERATED %s\n' % part
        if begin not in page or end not in page:
            sys.exit("genoptions: the page has no %s part (%s...%s)" % (part, begin, end))
        a, b = page.index(begin) + len(begin), page.index(end)
        page = page[:a] + text + "\n" + page[b:]
    return page


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] not in ("--check", "--write")):
        sys.exit(__doc__)
    gen = parts(argv[1])
    if len(argv) == 2:
        for part, text in gen.items():
            print('.\\" %s\n%s' % (part, text))
        return 0
    page = open(argv[3]).read()
    new = splice(page, gen)
    if argv[2] == "--write":
        if new != page:
            open(argv[3], "w").write(new)
        return 0
    if new != page:
        sys.stdout.writelines(difflib.unified_diff(page.splitlines(True), new.splitlines(True),
                                                   argv[3], "generated"))
        print("genoptions: %s's option list differs from the option tables: run "
              "'make man-options'" % os.path.basename(argv[3]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
