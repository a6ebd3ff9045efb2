#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A fuzzer's distilled corpus kept in the tree as one text file: one input per line, base64,
sorted (so a new distillation diffs line by line); lines that start with '#' are comments.

    fuzz_corpus.py unpack FILE DIR    write each input of FILE to DIR/<sha1 of the input>
                                      (DIR is emptied of earlier inputs first)
    fuzz_corpus.py pack DIR FILE      write every file of DIR into FILE, with a comment header

check-malloc-fuzz unpacks selftest/fuzz/distilled.b64 and hands the directory to the fuzzer
as a seed corpus; malloc-fuzz-distill (selftest/selftest.mk) merges what longer runs found into
it and packs it again.
"""
import base64
import hashlib
import os
import sys

HEADER = """\
# malloc-fuzz's distilled corpus (scripts/fuzz_corpus.py): one input per line, base64, sorted.
# Made by 'make malloc-fuzz-distill' (libFuzzer -merge=1 over the runs' corpus and the seeds);
# check-malloc-fuzz replays every input before it mutates. Do not edit by hand.
"""


def unpack(path, out):
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    n = 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            data = base64.b64decode(line, validate=True)
            with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as o:
                o.write(data)
            n += 1
    return n


def pack(src, path):
    lines = []
    for name in os.listdir(src):
        with open(os.path.join(src, name), "rb") as f:
            lines.append(base64.b64encode(f.read()).decode())
    lines.sort()
    with open(path, "w") as f:
        f.write(HEADER)
        f.write("".join(line + "\n" for line in lines))
    return len(lines)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("unpack", "pack"):
        sys.stderr.write(__doc__)
        return 2
    if argv[1] == "unpack":
        n = unpack(argv[2], argv[3])
    else:
        n = pack(argv[2], argv[3])
    print("fuzz_corpus: %s %d inputs" % (argv[1], n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
