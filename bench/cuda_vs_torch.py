"""PyTorch's side of the CUDA backend benchmark, and the comparison (bench/RESULTS-cuda.md).

    python3 bench/cuda_vs_torch.py path/to/build/bench/cuda_bench

Times the same cases as bench/cuda.cpp, the same way (median of 9 timed runs of `inner` calls
between synchronisations, after 3 warm-up calls), on the same GPU in the same run, and prints
Kiln's time, torch's, their ratio (below 1: Kiln faster) and the achieved bandwidth or rate.
"""
import subprocess
import sys
import time

import torch


def median_seconds(f, inner, repeats=9):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / inner)
    return sorted(times)[len(times) // 2]


class Block(torch.nn.Module):
    """examples/gpt/model.cpp's block: pre-norm causal self-attention and a GELU MLP."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.fc_out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.qkv(self.ln1(x)).split(C, -1))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return h + self.fc_out(torch.nn.functional.gelu(self.fc(self.ln2(h))))


class GPT(torch.nn.Module):
    def __init__(self, vocab, block, layers, heads, d):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(block, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return torch.nn.functional.linear(self.ln_f(x), self.tok.weight)


def gpt_step_seconds(out):
    """The whole step, then its parts: forward and loss; forward, loss and backward; AdamW."""
    model = GPT(512, 128, 4, 4, 256).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 512, (16, 128), device="cuda")
    target = torch.randint(0, 512, (16, 128), device="cuda")

    def loss():
        logits = model(idx)
        return torch.nn.functional.cross_entropy(logits.view(-1, 512), target.view(-1))

    def forward_backward():
        opt.zero_grad()
        loss().backward()

    def step():
        forward_backward()
        opt.step()

    out["gpt_train_step"] = median_seconds(step, 10)
    out["gpt_forward_loss"] = median_seconds(loss, 10)
    out["gpt_forward_backward"] = median_seconds(forward_backward, 10)
    out["gpt_adamw_step"] = median_seconds(opt.step, 10)


def torch_cases():
    torch.manual_seed(0)
    out = {}
    n = 1 << 26
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out["add_f32_2^26"] = median_seconds(lambda: a + b, 20)
    h = a.to(torch.bfloat16)
    out["gelu_bf16_2^26"] = median_seconds(lambda: torch.nn.functional.gelu(h), 20)
    m = a.view(8192, 8192)
    out["sum_rows_f32_8192^2"] = median_seconds(lambda: m.sum(1), 20)
    out["softmax_f32_8192^2"] = median_seconds(lambda: torch.softmax(m, 1), 20)
    at = a.view(8192, 8192).t()
    out["copy_transpose_f32_8192^2"] = median_seconds(lambda: at.contiguous(), 20)
    e = torch.randn(50304, 768, device="cuda").to(torch.bfloat16)
    ids = torch.randint(0, 50304, (8, 1024), device="cuda")
    out["embedding_bf16_8x1024x768"] = median_seconds(
        lambda: torch.nn.functional.embedding(ids, e), 50)
    logits = m[:, :4096].contiguous()
    target = torch.randint(0, 4096, (8192,), device="cuda")
    out["cross_entropy_f32_8192x4096"] = median_seconds(
        lambda: torch.nn.functional.cross_entropy(logits, target), 20)
    del a, b, h, at, e, logits
    a = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    out["mm_bf16_8192"] = median_seconds(lambda: a @ b, 10)
    af, bf = a.float(), b.float()
    torch.backends.cuda.matmul.allow_tf32 = False  # Kiln's float32 default, and torch's
    out["mm_f32_4096"] = median_seconds(lambda: af[:4096] @ bf[:, :4096], 10)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 10)).cuda()
    xs = torch.randn(64, 256, device="cuda")
    ts = torch.randn(64, 10, device="cuda")

    def step():
        torch.nn.functional.mse_loss(model(xs), ts).backward()

    def eager():
        model.zero_grad(set_to_none=True)
        step()

    out["mlp_step_eager"] = median_seconds(eager, 50)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(side)
    model.zero_grad(set_to_none=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    out["mlp_step_graph"] = median_seconds(g.replay, 50)
    gpt_step_seconds(out)
    x = torch.randn(32, 64, 56, 56, device="cuda").bfloat16().requires_grad_()
    w = (torch.randn(64, 64, 3, 3, device="cuda") * 0.05).bfloat16().requires_grad_()
    gy = torch.randn(32, 64, 56, 56, device="cuda").bfloat16()
    out["conv_bf16_3x3_fwd_bwd"] = median_seconds(
        lambda: torch.nn.functional.conv2d(x, w, padding=1).backward(gy), 10)
    del x, w, gy
    host = torch.randn(1 << 26)
    pinned = host.pin_memory()
    out["h2d_pageable_f32_2^26"] = median_seconds(lambda: host.to("cuda"), 5)
    out["h2d_pinned_f32_2^26"] = median_seconds(lambda: pinned.to("cuda", non_blocking=True), 5)
    del host, pinned
    x = torch.ones(1, device="cuda")
    y = torch.ones(1, device="cuda")
    out["add_1_element"] = median_seconds(lambda: x + y, 2000)
    return out


# Bytes each case must move (read + write) or flops it must do, for the achieved rate.
WORK = {
    "add_f32_2^26": ("GB/s", 3 * 4 * (1 << 26)),
    "gelu_bf16_2^26": ("GB/s", 2 * 2 * (1 << 26)),
    "copy_transpose_f32_8192^2": ("GB/s", 2 * 4 * 8192 * 8192),
    "sum_rows_f32_8192^2": ("GB/s", 4 * 8192 * 8192 + 4 * 8192),
    "softmax_f32_8192^2": ("GB/s", 2 * 4 * 8192 * 8192),
    "embedding_bf16_8x1024x768": ("GB/s", 2 * 2 * 8192 * 768 + 8 * 8192),
    "cross_entropy_f32_8192x4096": ("GB/s", 4 * 8192 * 4096 + 8 * 8192),
    "mm_bf16_8192": ("TFLOP/s", 2 * 8192**3),
    "conv_bf16_3x3_fwd_bwd": ("TFLOP/s", 3 * 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "h2d_pageable_f32_2^26": ("GB/s", 4 * (1 << 26)),
    "h2d_pinned_f32_2^26": ("GB/s", 4 * (1 << 26)),
    "mm_f32_4096": ("TFLOP/s", 2 * 4096 * 4096 * 8192),
    "gpt_train_step": ("us", None),
    "gpt_forward_loss": ("us", None),
    "gpt_forward_backward": ("us", None),
    "gpt_adamw_step": ("us", None),
    "mlp_step_eager": ("us", None),
    "mlp_step_graph": ("us", None),
    "add_1_element": ("us", None),
}


def main():
    kiln = {}
    result = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True)
    for line in result.stdout.splitlines():
        name, seconds = line.split()
        kiln[name] = float(seconds)
    ref = torch_cases()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'case':28} {'kiln':>12} {'torch':>12} {'kiln/torch':>10}  rate (kiln, torch)")
    for name, t in ref.items():
        k = kiln.get(name, float("nan"))
        unit, work = WORK[name]
        if work is None:
            rate = f"{k * 1e6:.2f} us, {t * 1e6:.2f} us"
        else:
            scale = 1e9 if unit == "GB/s" else 1e12
            rate = f"{work / k / scale:.1f}, {work / t / scale:.1f} {unit}"
        print(f"{name:28} {k * 1e6:10.1f}us {t * 1e6:10.1f}us {k / t:10.2f}  {rate}")


if __name__ == "__main__":
    main()
