# SPDX-License-Identifier: MIT
"""Generate the SQL workload that bench/run.py feeds to sqlite3.

Run as:  python3 sqlgen.py ROWS [SEED] > workload.sql

The script creates an in-memory schema of customers, orders and notes,
inserts ROWS orders as literal INSERT statements (so the parser and
prepared-statement machinery allocate as they do for an application that
builds SQL text), in transactions of 500, then builds indexes and runs
joins, GROUP BY, ORDER BY with LIMIT, string functions, UPDATE and DELETE
passes, a window function and a recursive CTE. Output is deterministic for
ROWS and SEED; sqlite3 is run on ':memory:' so disk I/O is not measured.
"""
import random
import sys

WORDS = ("amber basil cedar delta ember fjord garnet harbor indigo juniper "
         "kestrel lumen marble nectar onyx pepper quartz raven saffron "
         "tundra umber velvet willow xenon yarrow zephyr").split()


def text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 42
    rng = random.Random(seed)
    ncust = max(10, rows // 20)
    out = sys.stdout
    w = out.write
    w("PRAGMA cache_size = -65536;\n")
    w("CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, "
      "score REAL);\n")
    w("CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER, item TEXT, "
      "qty INTEGER, price REAL, note TEXT);\n")
    w("CREATE TABLE notes(id INTEGER PRIMARY KEY, ord INTEGER, body TEXT);\n")
    w("BEGIN;\n")
    for c in range(ncust):
        w("INSERT INTO customer VALUES(%d, '%s', '%s', %.3f);\n" %
          (c, text(rng, 2, 3), rng.choice(WORDS), rng.random() * 100))
    w("COMMIT;\n")
    for start in range(0, rows, 500):
        w("BEGIN;\n")
        for i in range(start, min(rows, start + 500)):
            w("INSERT INTO orders VALUES(%d, %d, '%s', %d, %.2f, '%s');\n" %
              (i, rng.randrange(ncust), rng.choice(WORDS), rng.randint(1, 20),
               rng.random() * 500, text(rng, 3, 30)))
            if rng.random() < 0.3:
                w("INSERT INTO notes(ord, body) VALUES(%d, '%s');\n" %
                  (i, text(rng, 10, 80)))
        w("COMMIT;\n")
    w("CREATE INDEX orders_cust ON orders(cust);\n")
    w("CREATE INDEX orders_item ON orders(item, price);\n")
    w("CREATE INDEX notes_ord ON notes(ord);\n")
    for _ in range(8):
        w("SELECT c.city, count(*), sum(o.qty * o.price), max(length(o.note)) "
          "FROM orders o JOIN customer c ON c.id = o.cust "
          "WHERE o.qty > %d GROUP BY c.city ORDER BY 3 DESC;\n" %
          rng.randint(1, 15))
        w("SELECT item, group_concat(DISTINCT substr(note, 1, 12)) FROM orders "
          "WHERE price BETWEEN %d AND %d GROUP BY item;\n" %
          (rng.randint(0, 200), rng.randint(250, 500)))
        w("SELECT o.id, upper(n.body) FROM orders o JOIN notes n ON n.ord = o.id "
          "ORDER BY length(n.body) DESC, o.id LIMIT 20;\n")
    w("SELECT cust, qty, sum(price) OVER (PARTITION BY cust ORDER BY id "
      "ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) FROM orders "
      "ORDER BY cust, id LIMIT 10;\n")
    w("WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq "
      "WHERE x < %d) SELECT count(*), sum(length(printf('%%08d-%%s', x, x))) "
      "FROM seq;\n" % (rows * 2))
    w("BEGIN;\n")
    for _ in range(rows // 50):
        w("UPDATE orders SET note = note || ' %s', qty = qty + 1 WHERE id = %d;\n"
          % (rng.choice(WORDS), rng.randrange(rows)))
    w("UPDATE customer SET score = score * 1.01 WHERE city = '%s';\n" %
      rng.choice(WORDS))
    w("DELETE FROM notes WHERE ord % 3 = 0;\n")
    w("DELETE FROM orders WHERE qty < 4;\n")
    w("COMMIT;\n")
    w("SELECT count(*), sum(length(note)) FROM orders;\n")
    w("SELECT count(*), sum(length(body)) FROM notes;\n")


if __name__ == "__main__":
    main()
