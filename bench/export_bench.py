"""PyTorch's side of bench/export_bench.cpp: torch.export's programs, saved and loaded back,
against the modules they came from. float32 on the CPU, eval() and no_grad, as many threads as
cores.

    /opt/ref/bin/python bench/export_bench.py [--no-aoti]

Prints one line per figure, "case label value" (microseconds unless the label says bytes):
    lstm torch_module 1234.5      the module's forward
    lstm torch_export 1234.5      torch.export.load(...).module() (the loaded program, eager)
    lstm torch_compiled 1234.5    torch.compile of that loaded module
    lstm torch_aoti 1234.5        AOTInductor: aoti_compile_and_package, then aoti_load_package
and the one-off costs. Lines that start with '#' are notes; a step that fails prints
"# case label ERROR: message" and the case goes on.
"""
import os
import statistics
import sys
import tempfile
import time
import traceback

import torch

CORES = os.cpu_count()


def median_us(fn, seconds=1.0, min_calls=20):
    """The median of single calls of fn, timed one by one after a warm-up, for at least `seconds`
    and at least `min_calls` calls (export_bench.cpp's median_us)."""
    for _ in range(5):
        fn()
    us = []
    start = time.perf_counter()
    while len(us) < min_calls or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        fn()
        us.append((time.perf_counter() - t) * 1e6)
    return statistics.median(us)


def report(name, label, value):
    print(f"{name} {label} {value:.1f}", flush=True)


def step(name, label, fn):
    """Runs one step of a case; an error is reported and the case goes on without that figure."""
    try:
        fn()
        return True
    except Exception as e:  # noqa: BLE001 - any failure is a result to print
        message = " ".join(f"{type(e).__name__}: {e}".split())
        print(f"# {name} {label} ERROR: {message[:600]}", flush=True)
        if os.environ.get("EXPORT_BENCH_TRACEBACK"):
            traceback.print_exc()
        return False


def check(name, label, y, expected):
    if not torch.allclose(y, expected, rtol=1e-4, atol=1e-5):
        print(f"# {name} {label} MISMATCH: max |diff| {(y - expected).abs().max().item():g}")


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def bench_model(name, module, x, dynamic_shapes, aoti, fallback_shapes=None):
    module.eval()
    expected = first(module(x))
    report(name, "torch_module", median_us(lambda: module(x)))

    path = os.path.join(tempfile.gettempdir(), f"export_bench_{name}_{os.getpid()}.pt2")
    state = {}

    def export(shapes):
        t = time.perf_counter()
        state["ep"] = torch.export.export(module, (x,), dynamic_shapes=shapes)
        report(name, "torch_export_program_once", (time.perf_counter() - t) * 1e6)

    def save():
        t = time.perf_counter()
        torch.export.save(state["ep"], path)
        report(name, "torch_save_once", (time.perf_counter() - t) * 1e6)

    def load():
        t = time.perf_counter()
        state["loaded"] = torch.export.load(path)
        state["m"] = state["loaded"].module()
        report(name, "torch_load_once", (time.perf_counter() - t) * 1e6)

    ok = step(name, "torch_export_program", lambda: export(dynamic_shapes))
    if not ok and fallback_shapes is not None:
        print(f"# {name}: exported again with dynamic_shapes={fallback_shapes}", flush=True)
        ok = step(name, "torch_export_program", lambda: export(fallback_shapes))
    ok = ok and step(name, "torch_save", save)
    ok = ok and step(name, "torch_load", load)
    if os.path.exists(path):
        os.remove(path)
    if not ok:
        return

    def run_export():
        m = state["m"]
        check(name, "torch_export", first(m(x)), expected)
        report(name, "torch_export", median_us(lambda: m(x)))

    def run_compiled():
        compiled = torch.compile(state["m"])
        t = time.perf_counter()
        y = first(compiled(x))
        report(name, "torch_compiled_first_call", (time.perf_counter() - t) * 1e6)
        check(name, "torch_compiled", y, expected)
        report(name, "torch_compiled", median_us(lambda: compiled(x)))

    step(name, "torch_export", run_export)
    step(name, "torch_compiled", run_compiled)
    if aoti:
        step(name, "torch_aoti", lambda: run_aoti(name, state["loaded"], x, expected))


def run_aoti(name, ep, x, expected):
    package = os.path.join(tempfile.gettempdir(), f"export_bench_{name}_{os.getpid()}.aoti.pt2")
    try:
        t = time.perf_counter()
        torch._inductor.aoti_compile_and_package(ep, package_path=package)
        report(name, "torch_aoti_compile_once", (time.perf_counter() - t) * 1e6)
        runner = torch._inductor.aoti_load_package(package)
        check(name, "torch_aoti", first(runner(x)), expected)
        report(name, "torch_aoti", median_us(lambda: runner(x)))
    finally:
        if os.path.exists(package):
            os.remove(package)


class TwoLayers(torch.nn.Module):
    """Two TransformerEncoderLayers in a row (Kiln's side calls its two layers the same way)."""

    def __init__(self):
        super().__init__()
        make = lambda: torch.nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0)
        self.layer1, self.layer2 = make(), make()

    def forward(self, x):
        return self.layer2(self.layer1(x))


class Lstm(torch.nn.Module):
    """The LSTM's output sequence, as Kiln's side returns std::get<0>(lstm->forward(x))."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(128, 256, num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


class Mlp(torch.nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, hidden)
        self.fc2 = torch.nn.Linear(hidden, hidden)
        self.fc3 = torch.nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def bench_load():
    """Loading a program of about 100 MB: an MLP of 25.2M float32 parameters."""
    name = "mlp100m"
    path = os.path.join(tempfile.gettempdir(), f"export_bench_{name}_{os.getpid()}.pt2")

    def run():
        mlp = Mlp(1024, 4096).eval()
        batch = torch.export.Dim("batch", min=2, max=1024)
        ep = torch.export.export(mlp, (torch.randn(8, 1024),), dynamic_shapes=({0: batch},))
        torch.export.save(ep, path)
        report(name, "torch_file_bytes", os.path.getsize(path))
        load, load_module = [], []
        for i in range(6):  # the first load is a warm-up (page cache)
            t = time.perf_counter()
            loaded = torch.export.load(path)
            t1 = time.perf_counter()
            loaded.module()
            t2 = time.perf_counter()
            if i > 0:
                load.append((t1 - t) * 1e6)
                load_module.append((t2 - t) * 1e6)
        report(name, "torch_load", statistics.median(load))
        report(name, "torch_load_module", statistics.median(load_module))

    try:
        step(name, "torch_load", run)
    finally:
        if os.path.exists(path):
            os.remove(path)


def main():
    aoti = "--no-aoti" not in sys.argv[1:]
    torch.manual_seed(0)
    torch.set_num_threads(CORES)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    seq = torch.export.Dim("seq", min=2, max=512)
    batch = torch.export.Dim("batch", min=2, max=64)
    dims = ({0: seq, 1: batch},)
    with torch.no_grad():
        # torch.export specialises an nn.LSTM's sequence length; where it does, the LSTM's
        # program is exported with a dynamic batch only.
        bench_model("lstm", Lstm(), torch.randn(64, 8, 128), dims, aoti, ({1: batch},))
        bench_model("transformer", TwoLayers(), torch.randn(128, 8, 256), dims, aoti)
        bench_load()


if __name__ == "__main__":
    main()
