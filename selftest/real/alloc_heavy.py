# SPDX-License-Identifier: MIT
# An allocation-heavy pure-Python workload: dicts, lists, strings and tuples built and dropped.
import sys

total = 0
for rnd in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
    d = {}
    for i in range(20000):
        d["k%d-%d" % (rnd, i)] = [i, str(i) * (i % 7), (i, rnd)]
    total += sum(len(v[1]) for v in d.values())
    words = " ".join(k for k in d if k.endswith("7")).split()
    total += len(words)
    del d, words
print("checksum", total)
