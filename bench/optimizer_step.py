"""Optimizer steps on the CPU, Kiln against PyTorch in one run (each library's default path).

    python3 bench/optimizer_step.py build/bench/optimizer_step
"""
import subprocess
import sys
import time

import torch


def torch_cases(suffix, count, numel, steps):
    params = [torch.randn(numel, requires_grad=True) for _ in range(count)]
    for p in params:
        p.grad = torch.randn(numel)
    out = {}
    for name, opt in [("sgd_momentum", torch.optim.SGD(params, lr=0.01, momentum=0.9)),
                      ("adamw", torch.optim.AdamW(params, lr=1e-3))]:
        for _ in range(steps // 10 + 1):
            opt.step()
        start = time.perf_counter()
        for _ in range(steps):
            opt.step()
        out[name + suffix] = (time.perf_counter() - start) / steps * 1e3
    return out


def main():
    kiln = dict(line.split() for line in
                subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True)
                .stdout.splitlines())
    ref = {**torch_cases("", 8, 1 << 21, 20), **torch_cases("_64_small", 64, 4096, 200)}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, t in ref.items():
        k = float(kiln[name])
        print(f"{name:24} kiln {k:8.4f} ms  torch {t:8.4f} ms  kiln/torch {k / t:5.2f}")


if __name__ == "__main__":
    main()
