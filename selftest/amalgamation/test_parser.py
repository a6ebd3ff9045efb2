#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The declaration parser of scripts/amalgamate.py on the shapes the sources use and the
ones annotations bring: which name a declaration declares, and which declarations get the
static-all linkage macro. Run by make check-amalgamation; prints one line, exits 1 on a
mismatch."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import amalgamate  # noqa: E402

SOURCE = r'''#define __guarded_by(x)
#define __rcu
#define __must_hold(x) __attribute__((unused))
#define FACE __attribute__((visibility("default")))
#ifdef __cplusplus
extern "C" {
#endif
extern int counter __guarded_by(lock);
extern struct node __rcu *head SEFER_INTERNAL;
void f(struct spinlock *l) __must_hold(l);
__must_hold(l) void g(void);
uint64_t (*clk)(void) = 0;
void visit(void (*fn)(struct heap *h, void *arg), void *arg);
extern _Atomic(uint64_t) table[64] SEFER_INTERNAL;
extern _Atomic(uint64_t) deadline SEFER_INTERNAL;
struct heap { int a; } cacheline_aligned;
struct heap;
typedef struct x { int b; } x_t;
static int hidden(void) { return 1; }
SEFER_API void *sefer_malloc(size_t size);
FACE void *malloc(size_t size) { return sefer_malloc(size); }
extern char **environ;
__thread struct heap *cur = 0;
int defined_here(void) { const char *s = "}{;"; return s[0]; }
#ifdef __cplusplus
}
#endif
'''
NAMES = ["counter", "head", "f", "g", "clk", "visit", "table", "deadline", "cacheline_aligned",
         "heap", "x_t", "hidden", "sefer_malloc", "malloc", "environ", "cur", "defined_here"]
# rewritten: external-linkage names the "sources" define that are not public
DEFINED = {"counter", "head", "f", "g", "clk", "visit", "table", "deadline", "cur",
           "defined_here", "hidden", "sefer_malloc", "malloc"}
EXPECT = {"counter": "SEFER_AMALG_EXTERN int counter", "head": "SEFER_AMALG_EXTERN struct node",
          "f": "SEFER_AMALG_LINK void f(", "g": "SEFER_AMALG_LINK __must_hold(l) void g",
          "clk": "SEFER_AMALG_LINK uint64_t (*clk)", "visit": "SEFER_AMALG_LINK void visit(",
          "table": "SEFER_AMALG_EXTERN _Atomic(uint64_t) table",
          "deadline": "SEFER_AMALG_EXTERN _Atomic(uint64_t) deadline",
          "cur": "SEFER_AMALG_LINK __thread struct heap *cur",
          "defined_here": "SEFER_AMALG_LINK int defined_here"}
UNTOUCHED = ["struct heap { int a; }", "\nstruct heap;", "typedef struct x", "static int hidden",
             "SEFER_API void *sefer_malloc", "FACE void *malloc", "extern char **environ",
             'extern "C" {']


def main():
    bad = []
    link = amalgamate.Linkage()
    link.collect_api("SEFER_API void *sefer_malloc(size_t size);\n")
    got = [amalgamate.declared_name(h, link.attr_macros) for _, h, _ in link.chunks(SOURCE)]
    if got != NAMES:
        bad.append("names %s, expected %s" % (got, NAMES))
    link.defined = set(DEFINED)
    out, n = link.rewrite(SOURCE)
    for name, want in EXPECT.items():
        if want not in out:
            bad.append("%s: no '%s'" % (name, want))
    for want in UNTOUCHED:
        if want not in out:
            bad.append("changed: '%s'" % want.strip())
    if n != len(EXPECT):
        bad.append("%d declarations rewritten, expected %d" % (n, len(EXPECT)))
    if bad:
        print("FAIL amalgamate.py parser:\n  " + "\n  ".join(bad))
        print(out)
        return 1
    print("ok   amalgamate.py parser: %d declarations named, %d rewritten, %d left alone"
          % (len(NAMES), n, len(UNTOUCHED)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
