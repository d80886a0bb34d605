"""Three pool threads meet at a barrier, then each runs the same line: three stops at once."""

import threading
from concurrent.futures import ThreadPoolExecutor

barrier = threading.Barrier(3)


def work(n):
    barrier.wait()
    value = n * 10  # all three here
    return value


with ThreadPoolExecutor(max_workers=3) as pool:
    print("results", sorted(pool.map(work, range(3))))
