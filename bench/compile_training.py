"""torch's side of bench/compile_training.cpp: the same training steps (zero_grad, forward,
cross_entropy, backward, AdamW step) eager and with the model under torch.compile (inductor on
the CPU, forward and backward compiled by AOTAutograd), and with the backward under compiled
autograd (torch._dynamo.compiled_autograd, its graph compiled by torch.compile) after an eager
and after a compiled forward, and with the whole step under one torch.compile
(whole_step_fn), 2 threads; time per step after warm-up (the median of 5 timed
loops of about 0.5 s).

    /opt/ref/bin/python bench/compile_training.py
"""
import torch
import torch.nn.functional as F

from compile_fusion import GPT
from timing import per_call


def step_fn(model, forward, x, y, compiled_autograd=False):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        logits = forward(x)
        loss = F.cross_entropy(logits.flatten(0, logits.dim() - 2), y.flatten())
        if compiled_autograd:
            with torch._dynamo.compiled_autograd._enable(torch.compile):
                loss.backward()
        else:
            loss.backward()
        opt.step()

    return step


def whole_step_fn(model, x, y):
    """The whole step (zero_grad, forward, loss, backward, AdamW step) under one torch.compile,
    as Kiln's train_steps_whole: dynamo breaks the graph at backward(), whose AOT backward runs,
    and compiles the optimizer step as a graph of its own."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    @torch.compile
    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, logits.dim() - 2), y.flatten())
        loss.backward()
        opt.step()
        return loss.detach()

    return lambda: step(x, y)


def main():
    torch.set_num_threads(2)
    print(f"torch {torch.__version__}")
    cases = [
        ("GPT train step [64, 8]", lambda: GPT(), torch.randint(0, 12, (64, 8)),
         torch.randint(0, 12, (64, 8))),
        ("MLP train step [128, 784]",
         lambda: torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                     torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                     torch.nn.Linear(512, 10)),
         torch.randn(128, 784), torch.randint(0, 10, (128,))),
        ("CNN train step [32, 1, 28, 28]",
         lambda: torch.nn.Sequential(torch.nn.Conv2d(1, 16, 5), torch.nn.ReLU(),
                                     torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 5),
                                     torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                     torch.nn.Linear(32 * 4 * 4, 10)),
         torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))),
    ]
    for name, make, x, y in cases:
        torch.manual_seed(0)
        model = make()
        eager = per_call(step_fn(model, model, x, y), loop_seconds=0.5, repeats=5)
        compiled_model = torch.compile(model)
        compiled = per_call(step_fn(model, compiled_model, x, y), loop_seconds=0.5, repeats=5)
        ca = per_call(step_fn(model, model, x, y, True), loop_seconds=0.5, repeats=5)
        both = per_call(step_fn(model, compiled_model, x, y, True), loop_seconds=0.5, repeats=5)
        whole = per_call(whole_step_fn(model, x, y), loop_seconds=0.5, repeats=5)
        print(f"{name}: eager {eager * 1e6:.0f} us, torch.compile {compiled * 1e6:.0f} us, "
              f"compiled autograd {ca * 1e6:.0f} us, torch.compile and compiled autograd "
              f"{both * 1e6:.0f} us, the whole step under torch.compile "
              f"{whole * 1e6:.0f} us")


if __name__ == "__main__":
    main()
