"""torch's side of bench/compile_fusion.cpp: the same cases on the same sizes, eager and
torch.compile (inductor on the CPU), 2 threads; time per call after warm-up (the median of 5
timed loops of about 0.5 s), and torch.compile's cold and warm compile latency.

    /opt/ref/bin/python bench/compile_fusion.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from timing import per_call

N = 16 << 20


def gelu_affine(x, w, b):
    return F.gelu(x * w + b)


def chain(x, y):
    return torch.tanh(torch.sigmoid(x * y + 1.0) - x) * 0.5 + torch.exp(y)


def softmax(x):
    return torch.softmax(x, -1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (4096,), w, b)


def rms_norm(x, w):
    return F.rms_norm(x, (4096,), w)


def cross_entropy(x, t):
    return F.cross_entropy(x, t)


COLD = """
import sys, time, torch, torch.nn.functional as F
def gelu_affine(x, w, b):
    return F.gelu(x * w + b)
x, w, b = torch.randn(64, 1024), torch.randn(1024), torch.randn(1024)
f = torch.compile(gelu_affine)
t = time.perf_counter()
f(x, w, b)
print(time.perf_counter() - t)
"""


def compile_latency(cache):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="1")
    out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    torch.set_num_threads(2)
    print(f"torch {torch.__version__}")
    x, w, b = torch.randn(N // 1024, 1024), torch.randn(1024), torch.randn(1024)
    xc, yc = torch.randn(N), torch.randn(N)
    big = torch.randn(4096, 4096)
    wn, bn = torch.randn(4096), torch.randn(4096)
    target = torch.randint(0, 4096, (4096,))
    a = torch.ones(N)
    c = torch.empty(N)
    t = per_call(lambda: c.copy_(a), loop_seconds=0.5, repeats=5)
    print(f"copy 16M floats: {t * 1e3:.2f} ms, {2 * N * 4 / t / 1e9:.1f} GB/s")
    cases = [
        ("gelu(x*w+b) 16M", gelu_affine, (x, w, b)),
        ("six-op chain 16M", chain, (xc, yc)),
        ("softmax [4096, 4096]", softmax, (big,)),
        ("layer_norm [4096, 4096]", layer_norm, (big, wn, bn)),
        ("rms_norm [4096, 4096]", rms_norm, (big, wn)),
        ("cross_entropy [4096, 4096]", cross_entropy, (big, target)),
    ]
    for name, fn, args in cases:
        eager = per_call(fn, *args, loop_seconds=0.5, repeats=5)
        compiled = per_call(torch.compile(fn), *args, loop_seconds=0.5, repeats=5)
        print(f"{name}: eager {eager * 1e3:.2f} ms, torch.compile {compiled * 1e3:.2f} ms")
    cache = tempfile.mkdtemp(prefix="inductor-bench-")
    try:
        cold = compile_latency(cache)
        warm = compile_latency(cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"compile latency gelu(x*w+b) [64, 1024]: cold {cold * 1e3:.0f} ms, "
          f"warm (new process, cache on disk) {warm * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
