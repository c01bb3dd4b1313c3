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

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    report("Sgemm1024", per_call(torch.mm, a, b), 2.0 * 1024**3)


if __name__ == "__main__":
    main()
