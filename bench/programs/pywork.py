# SPDX-License-Identifier: MIT
"""Allocation-heavy pure-Python workload for the sefer benchmarks.

Run as:  python3 pywork.py SCALE [SEED]

It builds and drops binary trees, churns dicts keyed by formatted strings,
sorts lists of tuples, grows and slices lists, and makes many small objects
with attributes: the object churn of an interpreter running ordinary code.
bench/run.py runs it with PYTHONMALLOC=malloc so that every object goes
through the allocator under test (with the default pymalloc, objects up to
512 bytes would come from CPython's own arenas). The output is a checksum,
identical for every allocator for a given SCALE and SEED.
"""
import random
import sys


class Node:
    __slots__ = ("left", "right")

    def __init__(self, left, right):
        self.left = left
        self.right = right


def make_tree(depth):
    if depth == 0:
        return Node(None, None)
    return Node(make_tree(depth - 1), make_tree(depth - 1))


def check_tree(node):
    if node.left is None:
        return 1
    return 1 + check_tree(node.left) + check_tree(node.right)


class Record:
    def __init__(self, key, value, tags):
        self.key = key
        self.value = value
        self.tags = tags


def trees(scale):
    total = 0
    long_lived = make_tree(12)
    for depth in range(4, 15, 2):
        iters = (scale << 14) >> depth
        for _ in range(iters):
            total += check_tree(make_tree(depth))
    return total + check_tree(long_lived)


def dict_churn(rng, scale):
    table = {}
    total = 0
    for i in range(20000 * scale):
        k = "key-%d-%x" % (rng.randrange(5000 * scale), i & 0xff)
        v = table.get(k)
        if v is None:
            table[k] = [i, str(i), (i, k)]
        elif len(v) > 4:
            del table[k]
        else:
            v.append(k * 2)
        total += len(k)
    return total + len(table)


def records(rng, scale):
    out = []
    for i in range(15000 * scale):
        tags = {("t%d" % rng.randrange(50)): j for j in range(rng.randrange(1, 6))}
        out.append(Record("r%06d" % i, rng.random(), tags))
        if len(out) > 4000:
            out = [r for r in out[1500:] if r.value > 0.3]
    out.sort(key=lambda r: (len(r.tags), r.key))
    return sum(len(r.tags) for r in out)


def strings(rng, scale):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    total = 0
    for _ in range(3000 * scale):
        parts = [rng.choice(words) * rng.randrange(1, 4) for _ in range(12)]
        line = ",".join(parts)
        fields = line.split(",")
        total += len(" ".join(reversed(fields)).upper())
        total += sum(len(f) for f in fields[::2])
    return total


def lists(rng, scale):
    total = 0
    for _ in range(400 * scale):
        data = [(rng.randrange(1000), str(rng.random())) for _ in range(200)]
        data.sort()
        total += len(data[50:150]) + data[0][0]
        data = None
    return total


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 42
    rng = random.Random(seed)
    total = trees(scale)
    total += dict_churn(rng, scale)
    total += records(rng, scale)
    total += strings(rng, scale)
    total += lists(rng, scale)
    print("pywork checksum", total)


if __name__ == "__main__":
    main()
