"""torch.distributed (gloo) all_reduce at 4 ranks on loopback, the peer of bench/distributed.cpp
(same sizes, same timing: 3 warm-up calls, a count of calls lasting about 0.2 s, 5 repeats,
median). Run: OMP_WAIT_POLICY=passive /opt/ref/bin/python bench/distributed.py [world]"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28]


def run(rank, world, port):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for nbytes in SIZES:
        t = torch.ones(nbytes // 4)
        for _ in range(3):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(t)
        one = time.perf_counter() - start
        calls = torch.tensor([max(2.0, min(2000.0, 0.2 / one))])
        dist.broadcast(calls, 0)
        n = int(calls.item())
        per_call = []
        for _ in range(5):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(n):
                dist.all_reduce(t)
            per_call.append((time.perf_counter() - start) / n)
        s = sorted(per_call)[2]
        if rank == 0:
            bus = 2 * (world - 1) / world * nbytes / s / 1e9
            print(f"all_reduce {nbytes:10d} bytes: {s * 1e6:12.1f} us  bus {bus:7.3f} GB/s  "
                  f"({n} calls x 5)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    print(f"torch {torch.__version__} all_reduce (gloo), {world} ranks on loopback", flush=True)
    mp.start_processes(run, args=(world, 29611), nprocs=world, start_method="fork")
