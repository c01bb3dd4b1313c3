"""torch DistributedDataParallel (gloo) step time, the peer of bench/ddp.cpp: the same MLP, batch,
SGD and timing (5 warm-up steps, median of 30). World 1 runs without DDP.
Run: OMP_WAIT_POLICY=passive /opt/ref/bin/python bench/ddp.py [world]"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

WARMUP, STEPS, WIDTH, BATCH = 5, 30, 1024, 128


def make_model():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, WIDTH))


def median_step(model, rank):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(rank)
    x, y = torch.randn(BATCH, WIDTH), torch.randn(BATCH, WIDTH)
    times = []
    for s in range(WARMUP + STEPS):
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if s >= WARMUP:
            times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def run(rank, world, port):
    torch.set_num_threads(1)
    model = make_model()
    if world == 1:
        step = median_step(model, rank)
    else:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
        dist.init_process_group("gloo", rank=rank, world_size=world)
        step = median_step(nn.parallel.DistributedDataParallel(model), rank)
        dist.destroy_process_group()
    if rank == 0:
        print(f"torch {torch.__version__}, {world} rank(s): {step * 1e3:.2f} ms a step "
              f"(median of {STEPS})", flush=True)


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    mp.start_processes(run, args=(world, 29613), nprocs=world, start_method="fork")
