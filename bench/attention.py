"""torch's side of bench/attention.cpp: torch.nn.functional.scaled_dot_product_attention on the
CPU (its flash kernel, and the math backend), 2 threads, on the same cases; time per call after
warm-up (the median of timed loops), and a 1024^3 sgemm for the machine's GEMM rate.

    cd bench && /opt/ref/bin/python attention.py
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from timing import per_call

torch.set_num_threads(2)


def report(name, seconds, flop):
    print(f"{name:44s} {seconds * 1e3:9.2f} ms {flop / seconds * 1e-9:8.1f} GFLOP/s")


def flex_cases():
    """torch.compile(flex_attention) (inductor's CPU template) on B1 H8 S4096 D64 float32."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    s = 4096
    q, k, v = (torch.randn(1, 8, s, 64) for _ in range(3))
    compiled = torch.compile(flex_attention)

    def causal(b, h, i, j):
        return i >= j

    def window(b, h, i, j):
        return (i >= j) & (i - j < 256)

    for name, mod in (("none", None), ("causal", causal), ("window256", window)):
        mask = create_block_mask(mod, None, None, s, s, device="cpu") if mod else None
        visible = 1.0 if mask is None else 1 - mask.sparsity() / 100
        with torch.no_grad():
            t = per_call(lambda: compiled(q, k, v, block_mask=mask), loop_seconds=0.5, repeats=3)
        report(f"FlexForward/{name} (torch.compile)", t, 4.0 * s * s * 64 * 8 * visible)


def main():
    q, k, v = (torch.randn(1, 25, 1024, 64) for _ in range(3))
    fwd_flop = 4.0 * 1024 * 1024 * 64 * 25
    for backend, name in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.MATH, "math")):
        with sdpa_kernel([backend]):
            report(f"SdpaForward/{name}", per_call(F.scaled_dot_product_attention, q, k, v),
                   fwd_flop)

    q, k, v = (torch.randn(1, 8, 4096, 64, dtype=torch.bfloat16) for _ in range(3))
    causal_flop = 4.0 * 4096 * 4096 * 64 * 8 / 2
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def forward():
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward_backward():
        F.scaled_dot_product_attention(qg, kg, vg, is_causal=True).sum().backward()

    for backend, name in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.MATH, "math")):
        with sdpa_kernel([backend]):
            report(f"CausalBf16Forward/{name}", per_call(forward, loop_seconds=0.5, repeats=3),
                   causal_flop)
            report(f"CausalBf16ForwardBackward/{name}",
                   per_call(forward_backward, loop_seconds=0.5, repeats=3), causal_flop * 3.5)

    flex_cases()

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    report("Sgemm1024", per_call(torch.mm, a, b), 2.0 * 1024**3)


if __name__ == "__main__":
    main()
