"""Timing shared by the Python halves of the compile benchmarks."""
import statistics
import time


def per_call(fn, *args, loop_seconds=0.2, repeats=9):
    """Seconds per call of fn(*args) after warm-up: the median of `repeats` timed loops, each
    lasting about `loop_seconds`."""
    for _ in range(20 if loop_seconds < 0.5 else 3):
        fn(*args)
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn(*args)
        if time.perf_counter() - t > loop_seconds:
            break
        n *= 2
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn(*args)
        times.append((time.perf_counter() - t) / n)
    return statistics.median(times)
