#!/usr/bin/env python3
"""Runs .device/peers.py unchanged (runpy, same arguments) and marks, for ncu
--profile-from-start off, the peers' timed queries: at each group count the second
torch_index_add_dense query (its index_add_) and the second torch_unique_index_add query
(torch.unique, the zeros and the index_add_). With --reps 1 the second call of each is the timed
one (the first is the warm-up). Each marked range starts with cudaProfilerStart and a tiny
marker kernel (torch.cuda._sleep: ncu names it spin_kernel), so collect.py can split ncu's rows
into ranges; the ranges, in order, are printed to stderr as `PROFILED_RANGE <n> <groups> <peer>`.

    ncu --profile-from-start off ... python3 bench/profile/peers_profiled.py \
        [--peers .device/peers.py] --rows-log2 27 --groups-log2 4,10 --reps 1
"""
import os
import runpy
import sys

import torch

peers_path = ".device/peers.py"
argv = sys.argv[1:]
if argv[:1] == ["--peers"]:
    peers_path, argv = argv[1], argv[2:]

state = {"groups": None, "index_add": 0, "unique": 0, "range": None, "ranges": 0}
original_randint = torch.randint
original_unique = torch.unique
original_index_add = torch.Tensor.index_add_
cudart = torch.cuda.cudart()


def start(peer):
    torch.cuda.synchronize()
    cudart.cudaProfilerStart()
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(1)  # the marker kernel (spin_kernel)
    state["range"] = peer
    print("PROFILED_RANGE %d %d %s" % (state["ranges"], state["groups"], peer), file=sys.stderr, flush=True)
    state["ranges"] += 1


def stop():
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()
    state["range"] = None


def randint(low, high=None, *args, **kwargs):
    # peers.py draws g (randint(0, card)) then v (randint(0, 100)) for each group count.
    if high is not None and kwargs.get("dtype") == torch.int32 and state["groups"] != high and low == 0 and high != 100:
        state.update(groups=high, index_add=0, unique=0)
    return original_randint(low, high, *args, **kwargs)


def unique(*args, **kwargs):
    state["unique"] += 1
    if state["unique"] == 2:
        start("torch_unique_index_add")
    return original_unique(*args, **kwargs)


def index_add_(self, *args, **kwargs):
    if state["unique"] == 0:
        state["index_add"] += 1
        if state["index_add"] == 2:
            start("torch_index_add_dense")
    result = original_index_add(self, *args, **kwargs)
    if state["range"] is not None:
        stop()
    return result


torch.randint = randint
torch.unique = unique
torch.Tensor.index_add_ = index_add_
if not hasattr(torch.cuda, "_sleep"):
    print("peers_profiled.py: torch.cuda._sleep is missing: no marker kernels, ranges split by name only",
          file=sys.stderr)
sys.argv = [peers_path] + argv
runpy.run_path(peers_path, run_name="__main__")
