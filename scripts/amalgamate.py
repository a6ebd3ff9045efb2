#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write sefer's amalgamation: one sefer.c and one sefer.h for one configuration.

    amalgamate.py --srctree S --objtree O --out DIR --libs "LIBS" [--defconfig FILE]
                  SOURCE...

SOURCE... are the selected .c files relative to S, in Kbuild order (the Makefile passes the
objects it would put in libsefer.a). sefer.c is, in order: a comment that says what it was made
from and what it links against; the configuration block (O/include/generated/autoconf.h) and a
check that no edit of it changed which files are selected; the feature macros (_GNU_SOURCE)
and every system #include of every file, moved to the top so that no sefer macro (likely,
noinline ...) reaches into a system header (with the defines a .c file makes before its
system headers, like _LGPL_SOURCE; an #include under #if keeps its condition when that names
only CONFIG_ and compiler macros); the linkage macros of the static-all mode; then each source
with every project-local #include inlined the first time it is met (the headers' include
guards make later ones empty anyway).
sefer.h is include/sefer.h, and include/sefer/persist.h when CONFIG_PERSIST is set.

Project-local means found, like the build's -I list, beside the including file, under
S/include, under S or under O/include. An include of a project header inside an #if (beyond a
header's own guard) is refused: inlining it once would depend on the branch met first.

SEFER_STATIC_ALL (Documentation/vendoring.rst): a program may #include "sefer.c" with
SEFER_STATIC_ALL defined, making every internal function and object static. C decides an
identifier's linkage at its first declaration, and the internal ones are declared first in
headers, where the build leaves them extern (hidden by -fvisibility=hidden or SEFER_INTERNAL).
So this script puts a macro in front of every file-scope declaration and definition of a
name the selected sources define with external linkage, unless it is public: SEFER_AMALG_EXTERN replaces `extern`, SEFER_AMALG_LINK
goes before the others. Both are `static __attribute__((unused))` under SEFER_STATIC_ALL and
`extern` / nothing otherwise. Public means marked SEFER_API (or a macro that expands to
visibility("default"), like the malloc face's FACE), or named like a SEFER_API declaration.
make check-amalgamation proves the result with nm.

Only the standard library; run with /usr/bin/python3.
"""
import argparse
import datetime
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from genfile import write_if_changed  # noqa: E402

FEATURE_MACROS = ("_GNU_SOURCE", "_DEFAULT_SOURCE", "_POSIX_C_SOURCE", "_XOPEN_SOURCE")
SKIP_WORDS = {"typedef", "static", "_Static_assert", "static_assert", "asm", "__asm__"}
# A declaration, not a definition: `extern`, or the marker of an internal object's declaration
# (include/sefer/compiler.h), which expands to extern and the hidden attribute.
EXTERN_WORDS = {"extern", "SEFER_INTERNAL_EXTERN"}
IDENT = re.compile(r"[A-Za-z_]\w*")


def die(msg):
    sys.exit("amalgamate.py: " + msg)


def blank(text):
    """text with comments, string and char literals and preprocessor lines turned into
    spaces (newlines kept), so that offsets match the original; and the list of preprocessor
    directives as (start, end) offsets."""
    out = list(text)
    pp = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n:
                k = text.find("\n", j)
                k = n if k < 0 else k
                # a comment that starts in a directive may run over lines
                seg = text[j:k]
                if "/*" in seg and "*/" not in seg[seg.index("/*"):]:
                    k = text.find("*/", j + seg.index("/*")) + 2
                    k = text.find("\n", k)
                    k = n if k < 0 else k
                    seg = text[j:k]
                if seg.endswith("\\"):
                    j = k + 1
                    continue
                j = k
                break
            pp.append((i, j))
            for m in range(i, j):
                if out[m] != "\n":
                    out[m] = " "
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                die("unterminated comment")
            for m in range(i, j + 2):
                if out[m] != "\n":
                    out[m] = " "
            i = j + 2
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for m in range(i, j):
                out[m] = " "
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for m in range(i, min(j + 1, n)):
                out[m] = " "
            i = j + 1
            line_start = False
            continue
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out), pp


def uncomment(directive):
    """A directive's text without its comments, to quote it inside one."""
    return re.sub(r"/\*.*?\*/|//.*$", "", directive).strip()


def strip_attributes(s, names=()):
    """s without __attribute__((...)) groups and the parenthesized uses of names."""
    pat = re.compile(r"\b(?:__attribute__%s)\s*\(" % "".join("|" + re.escape(n)
                                                         for n in sorted(names)))
    while True:
        m = pat.search(s)
        if not m:
            return s
        depth, j = 0, m.end() - 1
        while j < len(s):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        s = s[:m.start()] + " " + s[j + 1:]


def declared_name(head, attr_macros=()):
    """The identifier a declaration head declares: a pointer to function's (*name) when the
    head's first parenthesis opens it, else the identifier before the first parenthesis (a
    function), else the last identifier (an object); annotations (attr_macros) aside. Good
    enough to match names across declarations."""
    h = strip_attributes(head, attr_macros).split("=")[0]
    m = re.match(r"[^(]*\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", h)
    if m:
        return m.group(1)
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", h):
        if m.group(1) not in ("_Atomic", "__typeof__", "typeof"):
            return m.group(1)
    ids = [w for w in IDENT.findall(h.split("[")[0]) if w not in attr_macros]
    return ids[-1] if ids else None


class Linkage:
    """Finds the file-scope declarations of a file that have external linkage."""

    def __init__(self):
        self.public_macros = {"SEFER_API"}
        self.api_names = set()
        self.defined = set()  # names the selected sources define with external linkage
        self.attr_macros = {"SEFER_INTERNAL"}  # object-like macros that are attributes

    def learn_macros(self, text, pp):
        for s, e in pp:
            d = text[s:e]
            m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?(.*)", d, re.S)
            if not m:
                continue
            if 'visibility("default")' in d:
                self.public_macros.add(m.group(1))
            # an annotation: expands to attributes or to nothing (__rcu, __must_hold(x))
            body = uncomment(m.group(3).replace("\\\n", " "))
            if "__attribute__" in body or not body:
                self.attr_macros.add(m.group(1))

    def chunks(self, text):
        """Yield (start, head) for each file-scope declaration or definition; head is the
        blanked text before its body, initializer or ';'."""
        clean, pp = blank(text)
        self.learn_macros(text, pp)
        i, n = 0, len(clean)
        start = None
        paren = brace = 0
        kind = None  # 'func', 'init', 'aggregate', 'linkage' when a '{' was met at file scope
        head_end = None
        linkage_blocks = 0
        while i < n:
            c = clean[i]
            if c.isspace():
                i += 1
                continue
            if start is None and brace == 0 and paren == 0:
                if c == "}" and linkage_blocks:
                    linkage_blocks -= 1
                    i += 1
                    continue
                start, kind, head_end = i, None, None
            if c == "(":
                paren += 1
            elif c == ")":
                paren -= 1
            elif c == "=" and brace == 0 and paren == 0 and kind is None:
                kind, head_end = "init", i
            elif c == "{":
                if brace == 0 and paren == 0 and kind is None:
                    head = clean[start:i]
                    if head.strip() == "extern":
                        linkage_blocks += 1  # extern "C" {
                        start = None
                        i += 1
                        continue
                    if re.search(r"\b(struct|union|enum)\b\s*(__attribute__\s*\(\(.*\)\)\s*)?"
                                 r"(\w+\s*)?$", head):
                        kind = "aggregate"
                    else:
                        kind, head_end = "func", i
                brace += 1
            elif c == "}":
                brace -= 1
                if brace == 0 and kind == "func":
                    yield start, clean[start:head_end], kind
                    start = None
            elif c == ";" and brace == 0 and paren == 0:
                if kind == "aggregate":
                    # struct x {...} declarators; -- what follows the body names objects
                    body_end = clean.rfind("}", start, i)
                    tail = strip_attributes(clean[body_end + 1:i])
                    if IDENT.search(tail):
                        yield start, clean[start:i], kind
                else:
                    yield start, clean[start:head_end if head_end is not None else i], \
                        kind or "decl"
                start = None
            i += 1
        if brace or paren:
            die("unbalanced braces or parentheses")

    def is_public(self, text, start, head):
        ids = set(IDENT.findall(head))
        if ids & self.public_macros or 'visibility("default")' in text[start:start + len(head)]:
            return True
        return declared_name(head, self.attr_macros) in self.api_names

    def collect_api(self, text):
        for _, head, _ in self.chunks(text):
            if set(IDENT.findall(head)) & {"SEFER_API"}:
                name = declared_name(head, self.attr_macros)
                if name:
                    self.api_names.add(name)

    def collect_definitions(self, text):
        """Learn the names text defines with external linkage: functions with a body and
        objects declared without extern (a tentative definition counts)."""
        for _, head, kind in self.chunks(text):
            words = IDENT.findall(strip_attributes(head))
            if not words or SKIP_WORDS & set(words) or EXTERN_WORDS & set(words):
                continue
            if kind == "aggregate" or re.fullmatch(r"\s*(struct|union|enum)\s+\w+\s*", head):
                continue
            name = declared_name(head, self.attr_macros)
            if name:
                self.defined.add(name)

    def rewrite(self, text):
        """text with the linkage macro in front of each internal external-linkage
        declaration; returns (text, count)."""
        edits = []
        for start, head, kind in self.chunks(text):
            words = IDENT.findall(strip_attributes(head))
            if not words or SKIP_WORDS & set(words) or kind == "aggregate":
                continue
            if re.fullmatch(r"\s*(struct|union|enum)\s+\w+\s*", head):
                continue  # a tag declared (which may share a name with an object)
            if declared_name(head, self.attr_macros) not in self.defined:
                continue  # defined outside sefer (environ)
            if self.is_public(text, start, head):
                continue
            m = re.search(r"\b(extern|SEFER_INTERNAL_EXTERN)\b", head)
            if m:
                edits.append((start + m.start(), start + m.end(), "SEFER_AMALG_EXTERN"))
            else:
                edits.append((start, start, "SEFER_AMALG_LINK "))
        for s, e, repl in reversed(edits):
            text = text[:s] + repl + text[e:]
        return text, len(edits)


class Amalgamator:
    def __init__(self, srctree, objtree):
        self.srctree = srctree
        self.objtree = objtree
        self.search = [os.path.join(srctree, "include"), srctree,
                       os.path.join(objtree, "include")]
        self.seen = set()
        self.linkage = Linkage()
        self.feature_macros = []
        self.hoisted = []
        self.learning = False
        self.stats = {"files": 0, "internal": 0}

    def name(self, path):
        for root, tag in ((self.objtree, "$(O)"), (self.srctree, "")):
            if path.startswith(root + os.sep):
                rel = os.path.relpath(path, root)
                return tag + "/" + rel if tag else rel
        return path

    def resolve(self, inc, from_dir):
        for d in ([from_dir] if from_dir else []) + self.search:
            p = os.path.normpath(os.path.join(d, inc))
            if os.path.isfile(p):
                return p
        return None

    def expand(self, path, rewrite=True):
        """The text of path with its project includes inlined (each file once) and its
        system includes (with the defines a .c file makes before them) moved to
        self.hoisted."""
        self.seen.add(path)
        self.stats["files"] += 1
        with open(path) as f:
            text = f.read()
        if self.learning:
            self.linkage.collect_definitions(text)
        elif rewrite:
            text, n = self.linkage.rewrite(text)
            self.stats["internal"] += n
        is_header = path.endswith(".h")
        out = ["/* ---- begin %s ---- */\n" % self.name(path)]
        conds = []  # one list per open #if: the conditions of its branches so far
        guard = False
        seen_sys_include = False
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        i = 0
        while i < len(lines):
            ln = lines[i]
            i += 1
            s = ln.strip()
            while s.endswith("\\") and i < len(lines) and s.startswith("#"):
                ln += "\n" + lines[i]
                s = s[:-1] + " " + lines[i].strip()
                i += 1
            m = re.match(r"#\s*(if|ifdef|ifndef|elif|else|endif)\b\s*(.*)", s)
            if m:
                d, arg = m.group(1), m.group(2).split("/*")[0].split("//")[0].strip()
                if d in ("if", "ifdef", "ifndef"):
                    if is_header and not conds and d == "ifndef" and not guard \
                            and re.fullmatch(r"\w+_H", arg):
                        guard = True
                        conds.append(None)  # the include guard: no condition
                    else:
                        c = {"if": arg, "ifdef": "defined(%s)" % arg,
                             "ifndef": "!defined(%s)" % arg}[d]
                        conds.append([c])
                elif d == "elif":
                    conds[-1].append(arg)
                elif d == "else":
                    conds[-1].append("1")
                else:
                    conds.pop()
            m = re.match(r'#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', s)
            inc = None
            if m and m.group(1):
                inc = self.resolve(m.group(1), os.path.dirname(path))
            elif m:  # <...> names a project header when the build's -I list finds it
                inc = self.resolve(m.group(2), None)
                if inc is None:
                    m = None
            if m:
                m_name = m.group(1) or m.group(2)
                if inc is None:
                    die("%s: cannot find \"%s\"" % (self.name(path), m_name))
                if any(c is not None for c in conds):
                    die("%s: #include \"%s\" inside an #if: the amalgamation inlines each "
                        "header once, so a conditional include is not supported"
                        % (self.name(path), m_name))
                if inc in self.seen:
                    out.append("/* %s: already inlined */\n" % uncomment(s))
                else:
                    out.append(self.expand(inc, rewrite))
                continue
            m = re.match(r"#\s*define\s+(%s)\b(.*)" % "|".join(FEATURE_MACROS), s)
            if m and not is_header:
                fm = (m.group(1), m.group(2).split("/*")[0].strip())
                if fm not in self.feature_macros:
                    self.feature_macros.append(fm)
                out.append("/* %s: defined at the top of the amalgamation */\n" % uncomment(s))
                continue
            if not is_header and not conds and not seen_sys_include \
                    and re.match(r"#\s*define\s+\w+(\s|$)", s):
                self.hoisted.append(s)  # a define its system headers read (_LGPL_SOURCE)
                out.append("/* %s: moved to the system headers at the top */\n" % uncomment(s))
                continue
            m = re.match(r"#\s*include\s*<[^>]+>", s)
            if m:
                seen_sys_include = True
                cond = self.hoist_condition(conds)
                if cond is not False:
                    line = m.group(0) if cond is None else \
                        "#if %s\n%s\n#endif" % (cond, m.group(0))
                    if line not in self.hoisted:
                        self.hoisted.append(line)
                    out.append("/* %s: moved to the top */\n" % uncomment(s))
                    continue
            out.append(ln + "\n")
        out.append("/* ---- end %s ---- */\n" % self.name(path))
        return "".join(out)

    @staticmethod
    def hoist_condition(conds):
        """The condition under which an #include inside conds is read, as an #if expression
        valid at the top of the file (None: always), or False when it names macros other
        than CONFIG_* and the compiler's own, which may not be defined yet at the top."""
        terms = []
        for branches in conds:
            if branches is None:
                continue
            cur = branches[-1]
            parts = ["!(%s)" % b for b in branches[:-1]] + ([] if cur == "1" else ["(%s)" % cur])
            terms += parts
        if not terms:
            return None
        expr = " && ".join(terms)
        expr = re.sub(r"\bIS_ENABLED\s*\(", "defined(", expr)
        for name in IDENT.findall(expr):
            if name != "defined" and not name.startswith(("CONFIG_", "_")):
                return False
        return expr


def config_block(autoconf, kbuild_opts):
    """The autoconf.h lines, each option that selects files marked as such, and an #error
    check that those kept their values."""
    lines, fixed_on = [], []
    defined = set()
    with open(autoconf) as f:
        for ln in f:
            m = re.match(r"#define (CONFIG_\w+) ", ln)
            if m:
                defined.add(m.group(1))
                if m.group(1) in kbuild_opts:
                    ln = ln.rstrip("\n") + " /* selects files: regenerate to change */\n"
                    fixed_on.append(m.group(1))
            lines.append(ln)
    fixed_off = sorted(o for o in kbuild_opts if o not in defined)
    terms = ["!defined(%s)" % o for o in fixed_on] + ["defined(%s)" % o for o in fixed_off]
    check = ""
    if terms:
        check = ("/* Options that select files, as generated (the unset ones included). */\n"
                 "#if " + " || \\\n\t".join(terms) + "\n#error \"an option that selects "
                 "files was edited: make amalgamation again with the new configuration\"\n"
                 "#endif\n")
    return "".join(lines), check, fixed_off


def kbuild_options(srctree):
    """CONFIG_ options that select objects, policies or libraries in some Kbuild file."""
    opts = set()
    for top in ("core", "backends", "policies", "persist"):
        for root, _, files in os.walk(os.path.join(srctree, top)):
            if "Kbuild" in files:
                with open(os.path.join(root, "Kbuild")) as f:
                    opts |= set(re.findall(r"\$\((CONFIG_\w+)\)", f.read()))
    return opts


def git_describe(srctree):
    try:
        return subprocess.run(["git", "-C", srctree, "describe", "--always", "--dirty",
                               "--tags"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def config_origin(srctree, defconfig):
    """Which configs/*_defconfig the minimal config equals, if any, and its lines."""
    if not defconfig:
        return None, []

    def settings(path):
        with open(path) as f:
            return sorted(ln.strip() for ln in f if ln.strip() and (
                not ln.startswith("#") or re.match(r"# CONFIG_\w+ is not set", ln)))
    mine = settings(defconfig)
    cdir = os.path.join(srctree, "configs")
    for name in sorted(os.listdir(cdir)):
        if name.endswith("_defconfig") and settings(os.path.join(cdir, name)) == mine:
            return name, mine
    return None, mine


LINKAGE_MACROS = r"""
/*
 * Linkage (Documentation/vendoring.rst). Built as a translation unit of its own, sefer.c
 * gives the public API (SEFER_API) and the internal functions and objects external linkage;
 * SEFER_INTERNAL ones are hidden, compile with -fvisibility=hidden to hide the rest too.
 * A program that does  #define SEFER_STATIC_ALL  and  #include "sefer.c"  gets every internal
 * function and object static; the public API stays external unless SEFER_STATIC_API is
 * defined as well. The malloc face (CONFIG_MALLOC_FACE) replaces the process's malloc and
 * cannot be static.
 */
#ifdef SEFER_STATIC_ALL
#define SEFER_AMALG_LINK static __attribute__((__unused__))
#define SEFER_AMALG_EXTERN static __attribute__((__unused__))
#else
#if defined(SEFER_STATIC_API)
#error "SEFER_STATIC_API is for a program that includes sefer.c with SEFER_STATIC_ALL"
#endif
#define SEFER_AMALG_LINK
#define SEFER_AMALG_EXTERN extern
#endif
#if defined(SEFER_STATIC_API) && defined(CONFIG_MALLOC_FACE)
#error "SEFER_STATIC_API: the malloc face (CONFIG_MALLOC_FACE) is here and cannot be static"
#endif
#ifndef SEFER_BUILD
#define SEFER_BUILD 1
#endif
/* The sources are written for -Wall -Wextra -Wno-unused-parameter (ops slots, stubs). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
/* clang reports an unused static inline function of the main file; the headers' are in it. */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wunused-function"
#endif
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--srctree", required=True)
    ap.add_argument("--objtree", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--libs", default="")
    ap.add_argument("--defconfig")
    ap.add_argument("sources", nargs="+")
    a = ap.parse_args()
    srctree, objtree = os.path.abspath(a.srctree), os.path.abspath(a.objtree)
    autoconf = os.path.join(objtree, "include", "generated", "autoconf.h")
    dotconfig = os.path.join(objtree, ".config")
    for p in (autoconf, dotconfig):
        if not os.path.isfile(p):
            die("%s is missing: configure first (make O=... defconfig)" % p)

    am = Amalgamator(srctree, objtree)
    with open(autoconf) as f:
        has_persist = "#define CONFIG_PERSIST 1\n" in f.read()
    public = [os.path.join(srctree, "include", "sefer.h")]
    if has_persist:
        public.append(os.path.join(srctree, "include", "sefer", "persist.h"))
    for p in public:
        with open(p) as f:
            am.linkage.collect_api(f.read())

    # Two passes learn, the first the macros (public, attribute-like), the second with all of
    # them known the names the sources define; the third writes.
    for _ in range(2):
        am.linkage.defined = set()
        am.learning = True
        am.seen = set()
        for src in a.sources:
            am.expand(os.path.join(srctree, src))
    am.learning = False
    am.seen, am.hoisted, am.feature_macros = set(), [], []
    am.stats["files"] = 0
    body = []
    for src in a.sources:
        path = os.path.join(srctree, src)
        if not os.path.isfile(path):
            die("no source %s" % src)
        body.append(am.expand(path))
    conf, conf_check, _ = config_block(autoconf, kbuild_options(srctree))

    with open(dotconfig, "rb") as f:
        config_hash = hashlib.sha256(f.read()).hexdigest()[:16]
    origin, settings = config_origin(srctree, a.defconfig)
    describe = git_describe(srctree)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    libs = " ".join(x for x in a.libs.split() if x)
    setting_lines = "".join(" *     %s\n" % s for s in settings) or " *     (none)\n"
    head = """/* SPDX-License-Identifier: MIT */
/*
 * sefer amalgamation: the allocator for one configuration in one file.
 * Generated by scripts/amalgamate.py; do not edit except the configuration block below.
 *
 * Made from:     sefer %(describe)s
 * Date:          %(date)s
 * Configuration: %(origin)s, .config sha256 %(hash)s...
 *   minimal config (make savedefconfig):
%(settings)s *
 * Build:         cc -std=gnu11 -O2 -c sefer.c   (gcc or clang; C11 with GNU extensions)
 *                add -fPIC -fvisibility=hidden when it goes into a shared library
 * Link with:     %(libs)s
 * Sources:       %(nsrc)d files in Kbuild order, %(nfiles)d with the headers
 *
 * The public API is in sefer.h (the same declarations are inlined below). To include this
 * file into another one with every internal symbol static, define SEFER_STATIC_ALL first
 * (and SEFER_STATIC_API to make the API static too). Documentation/vendoring.rst.
 * The C++ operators new and delete (CONFIG_CXX_NEW) are not in the amalgamation: they need
 * -fexceptions, which would apply to the whole file.
 */
""" % {"describe": describe, "date": date,
       "origin": ("configs/" + origin) if origin else "a custom configuration",
       "hash": config_hash, "settings": setting_lines, "libs": libs or "(nothing)",
       "nsrc": len(a.sources), "nfiles": am.stats["files"]}
    feat = "".join("#ifndef %s\n#define %s%s\n#endif\n" % (m, m, " " + v if v else "")
                   for m, v in am.feature_macros)
    text = (head
            + "\n/* ---- configuration (autoconf.h): values may be edited; options that select "
              "files may not ---- */\n"
            + "#ifndef SEFER_AMALGAMATION_CONFIG\n#define SEFER_AMALGAMATION_CONFIG\n"
            + conf + conf_check + "#endif\n"
            + "\n/* ---- feature macros the sources define before their system headers ---- */\n"
            + feat
            + "\n/* ---- the system headers of every source, before any sefer macro ---- */\n"
            + "\n".join(am.hoisted) + "\n" + LINKAGE_MACROS + "\n" + "".join(body)
            + "\n#pragma GCC diagnostic pop\n")

    hdr = Amalgamator(srctree, objtree)
    hdr_body = "".join(hdr.expand(p, rewrite=False) for p in public)
    hdr_text = ("/* SPDX-License-Identifier: MIT */\n/*\n * sefer public API for the "
                "amalgamation beside it (sefer.c); generated by scripts/amalgamate.py from "
                "sefer %s.\n */\n" % describe) + "\n".join(hdr.hoisted) + "\n" + hdr_body

    os.makedirs(a.out, exist_ok=True)
    for name, t in (("sefer.c", text), ("sefer.h", hdr_text)):
        write_if_changed(os.path.join(a.out, name), t, key=undated)
    print("  AMALG    %s/sefer.c: %d sources, %d files, %d internal declarations" % (
        os.path.relpath(os.path.abspath(a.out), objtree), len(a.sources), am.stats["files"], am.stats["internal"]))


def undated(text):
    """The text without its Date line: a new date alone is no change."""
    return re.sub(r"^ \* Date: .*$", "", text, count=1, flags=re.M)


if __name__ == "__main__":
    main()
