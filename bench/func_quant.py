"""kiln::func, autocast and int8 quantization against torch.func, torch.autocast and
torch.ao.quantization (x86 backend) on the CPU, in one run.

    /opt/ref/bin/python bench/func_quant.py build/bench/func_quant
"""
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


def time_ms(body, reps):
    body()
    start = time.perf_counter()
    for _ in range(reps):
        body()
    return (time.perf_counter() - start) / reps * 1e3


def per_sample_gradients(name, model, input_sizes):
    torch.manual_seed(0)
    x, y = torch.randn(64, *input_sizes), torch.randint(0, 10, (64,))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    vmapped = vmap(grad(loss), in_dims=(None, 0, 0))
    g = grad(loss)
    return {f"per_sample_grads_{name}_vmap": time_ms(lambda: vmapped(params, x, y), 20),
            f"per_sample_grads_{name}_loop": time_ms(
                lambda: [g(params, x[b], y[b]) for b in range(64)], 5)}


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab, block, layers, heads, d):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.t()


def gpt_step(bf16):
    torch.manual_seed(0)
    model = Gpt(65, 64, 4, 4, 256)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx, target = torch.randint(0, 65, (16, 64)), torch.randint(0, 65, (16, 64))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(idx).view(-1, 65), target.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time_ms(step, 5)


def int8_layers():
    """torch's eager x86 flow on the same layers: QuantStub -> layer -> DeQuantStub."""
    import torch.ao.quantization as tq
    torch.backends.quantized.engine = "x86"
    out = {}
    for name, layer, sizes in (("linear", nn.Linear(1024, 1024), (64, 1024)),
                               ("conv2d", nn.Conv2d(64, 64, 3, padding=1), (16, 64, 28, 28))):
        torch.manual_seed(0)
        x = torch.randn(*sizes)
        with torch.no_grad():
            out[f"{name}_float32"] = time_ms(lambda: layer(x), 50)
            model = nn.Sequential(tq.QuantStub(), layer, tq.DeQuantStub()).eval()
            model.qconfig = tq.get_default_qconfig("x86")
            tq.prepare(model, inplace=True)
            for _ in range(4):
                model(torch.randn(*sizes))
            tq.convert(model, inplace=True)
            out[f"{name}_int8"] = time_ms(lambda: model(x), 50)
    fc = tq.quantize_dynamic(nn.Linear(1024, 1024), {nn.Linear}, dtype=torch.qint8)
    x = torch.randn(64, 1024)
    with torch.no_grad():
        out["linear_dynamic_int8"] = time_ms(lambda: fc(x), 50)
    return out


def main():
    kiln = dict(line.split() for line in
                subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True)
                .stdout.splitlines())
    mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                        nn.Linear(128, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
    ref = {**per_sample_gradients("mlp", mlp, (64,)),
           **per_sample_gradients("cnn", cnn, (1, 16, 16)),
           "gpt_train_step_float32": gpt_step(False),
           "gpt_train_step_autocast_bf16": gpt_step(True),
           **int8_layers()}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, t in ref.items():
        k = float(kiln[name])
        print(f"{name:30} kiln {k:9.3f} ms  torch {t:9.3f} ms  kiln/torch {k / t:5.2f}")
    for name in ("mlp", "cnn"):
        ratio = (float(kiln[f"per_sample_grads_{name}_vmap"]) /
                 float(kiln[f"per_sample_grads_{name}_loop"]))
        print(f"{'kiln vmap / kiln loop, ' + name:30} {ratio:5.2f}")
    for name in ("linear", "conv2d"):
        ratio = float(kiln[f"{name}_int8"]) / float(kiln[f"{name}_float32"])
        print(f"{'kiln int8 / kiln float32, ' + name:30} {ratio:5.2f}")
    print(f"{'kiln bf16 / kiln float32':30} {float(kiln['gpt_train_step_autocast_bf16']) / float(kiln['gpt_train_step_float32']):5.2f}")


if __name__ == "__main__":
    main()
