"""Square matrix products on the CPU in float32, bfloat16, float16 and int8 into int32
(torch._int_mm), Kiln against PyTorch in one run: GFLOP/s (GOP/s for int8) of each, and each
rate against the same library's float32 rate.

    python3 bench/gemm_dtypes.py build/bench/gemm_dtypes
"""
import statistics
import subprocess
import sys
import time

import torch


def torch_ms(dtype, n):
    if dtype == torch.int8:
        a, b = torch.randint(-128, 128, (n, n), dtype=torch.int8), torch.randint(-128, 128, (n, n), dtype=torch.int8)
        product = lambda: torch._int_mm(a, b)
    else:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        product = lambda: a @ b
    product()
    start = time.perf_counter()
    product()
    probe = time.perf_counter() - start
    calls = max(1, int(0.2 / max(probe, 1e-6)))
    times = []
    for _ in range(7 if probe < 0.5 else 1):  # torch's float16 [2048]^2 takes a minute
        start = time.perf_counter()
        for _ in range(calls):
            product()
        times.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(times)


def main():
    kiln = {}
    for line in subprocess.run([sys.argv[1]], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        name, n, ms = line.split()
        kiln[(name, int(n))] = float(ms)
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
              "int8": torch.int8}
    ref = {key: torch_ms(dtypes[key[0]], key[1]) for key in kiln}
    gflops = lambda n, ms: 2 * n**3 / (ms * 1e-3) / 1e9
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| dtype | n | Kiln | torch | Kiln / torch (time) | Kiln vs its float32 | torch vs its float32 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, n), k in kiln.items():
        t = ref[(name, n)]
        k32, t32 = kiln[("float32", n)], ref[("float32", n)]
        print(f"| {name} | {n} | {k:.3f} ms ({gflops(n, k):.0f} GFLOP/s) | "
              f"{t:.3f} ms ({gflops(n, t):.0f} GFLOP/s) | {k / t:.2f} | "
              f"{k32 / k:.2f}x | {t32 / t:.2f}x |")


if __name__ == "__main__":
    main()
