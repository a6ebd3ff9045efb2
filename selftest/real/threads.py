# SPDX-License-Identifier: MIT
# A multithreaded Python program: worker threads build objects and hand them to the main
# thread through a queue, which drops them (cross-thread frees under PYTHONMALLOC=malloc).
import queue
import threading

q = queue.Queue(maxsize=64)


def work(seed):
    for i in range(3000):
        q.put({"seed": seed, "i": i, "data": [str(seed * i + k) for k in range(20)]})
    q.put(None)


threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
for t in threads:
    t.start()
done, total = 0, 0
while done < len(threads):
    item = q.get()
    if item is None:
        done += 1
    else:
        total += len("".join(item["data"]))
for t in threads:
    t.join()
print("total", total)
