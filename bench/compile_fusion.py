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


def linear_gelu(x, w, b):
    return F.gelu(x @ w + b)


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


def mean_squared_error(x, y):
    return ((x - y) * (x - y)).mean()


def scaled_column_sum(x):
    return (x * 2.0).sum(0)


def channel_variance(x, mean):
    return ((x - mean) * (x - mean)).mean((0, 2, 3))


class Block(torch.nn.Module):
    """examples/gpt/model.cpp's block."""

    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.fc_out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        heads = lambda t: t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q, k, v = self.qkv(self.ln1(x)).split(C, -1)
        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        h = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return h + self.fc_out(F.gelu(self.fc(self.ln2(h))))


class GPT(torch.nn.Module):
    """examples/gpt/model.cpp's GPT."""

    def __init__(self, vocab=12, block=8, n_layer=2, n_head=4, d=64):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(block, d)
        self.blocks = torch.nn.ModuleList(Block(d, n_head) for _ in range(n_layer))
        self.ln_f = torch.nn.LayerNorm(d)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return F.linear(self.ln_f(x), self.tok.weight)


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
        ("mean squared error 16M", mean_squared_error, (xc, yc)),
        ("(x*2).sum(0) [4096, 4096]", scaled_column_sum, (big,)),
        ("channel variance [64, 64, 32, 32]", channel_variance,
         (torch.randn(64, 64, 32, 32), torch.randn(64, 1, 1))),
    ]
    for m, k, n in [(4096, 256, 1024), (576, 64, 256), (256, 64, 96)]:
        xl, wl, bl = torch.randn(m, k), torch.randn(k, n), torch.randn(n)
        cases.append((f"gelu(x@w+b) [{m}, {k}] @ [{k}, {n}]", linear_gelu, (xl, wl, bl)))
        gemm = per_call(lambda: xl @ wl, loop_seconds=0.5, repeats=5)
        print(f"x@w alone [{m}, {k}] @ [{k}, {n}]: {gemm * 1e3:.3f} ms")
    for name, fn, args in cases:
        eager = per_call(fn, *args, loop_seconds=0.5, repeats=5)
        compiled = per_call(torch.compile(fn), *args, loop_seconds=0.5, repeats=5)
        print(f"{name}: eager {eager * 1e3:.3f} ms, torch.compile {compiled * 1e3:.3f} ms")
    model = GPT().eval()
    idx = torch.randint(0, 12, (16, 8))
    with torch.no_grad():
        eager = per_call(model, idx)
        compiled = per_call(torch.compile(model), idx)
    print(f"GPT forward [16, 8]: eager {eager * 1e6:.1f} us, torch.compile {compiled * 1e6:.1f} us")
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
