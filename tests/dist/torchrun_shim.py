"""Runs torchrun (torch.distributed.run) with Debian's torch 1.13 on Python 3.11, whose
argument parsing leaves --redirects/--tee as None and crashes in to_map(); the shim maps None
to "no redirect" and changes nothing else. Usage: python3 torchrun_shim.py TORCHRUN_ARGS..."""
import sys

import torch.distributed.elastic.multiprocessing as mp
import torch.distributed.elastic.multiprocessing.api as api

_to_map = api.to_map


def to_map(val_or_map, local_world_size):
    return _to_map(api.Std.NONE if val_or_map is None else val_or_map, local_world_size)


api.to_map = to_map
mp.to_map = to_map

from torch.distributed.run import main  # noqa: E402  (after the patch)

main(sys.argv[1:])
