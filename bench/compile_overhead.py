"""torch.compile's side of bench/compile_overhead.cpp: the same functions on the same sizes, eager
and compiled (inductor on the CPU), time per call after warm-up (the median of 9 repeats of a
loop lasting about 0.2 s), 2 threads.

    /opt/ref/bin/python bench/compile_overhead.py
"""
import torch

from timing import per_call


def pointwise(x):
    return torch.relu(x * 2.0 + 1.0)


def block(x, w, b):
    return torch.nn.functional.gelu(x @ w + b)


def main():
    torch.set_num_threads(2)
    x = torch.randn(4)
    xb, w, b = torch.randn(8, 64), torch.randn(64, 64), torch.randn(64)
    cases = [
        ("pointwise eager", pointwise, (x,)),
        ("pointwise compiled (dynamic=False)", torch.compile(pointwise, dynamic=False), (x,)),
        ("pointwise compiled (dynamic=True)", torch.compile(pointwise, dynamic=True), (x,)),
        ("block eager", block, (xb, w, b)),
        ("block compiled", torch.compile(block), (xb, w, b)),
    ]
    print(f"torch {torch.__version__}")
    for name, fn, args in cases:
        print(f"{name}: {per_call(fn, *args) * 1e6:.2f} us")


if __name__ == "__main__":
    main()
