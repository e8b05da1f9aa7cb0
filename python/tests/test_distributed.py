"""Tensor-parallel layers (tilevm.distributed) on 2 CPU processes over gloo, against the single layer.
TILEVM_TEST_NCCL=1 bash bench/gpu_python.sh runs the same worker over NCCL on a machine with 2 GPUs."""

import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

WORKER = pathlib.Path(__file__).with_name("distributed_worker.py")


def run_ranks(backend, world, tmp_path):
    init = tmp_path / "init"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(r), str(world), str(init), backend], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(world)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"rank {r} failed:\n{out}"
        assert f"rank {r}: ok" in out


def test_tensor_parallel_on_cpu_over_gloo(tmp_path):
    run_ranks("gloo", 2, tmp_path)


@pytest.mark.gpu
@pytest.mark.nccl
def test_tensor_parallel_on_two_gpus_over_nccl(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine has {torch.cuda.device_count()}")
    run_ranks("nccl", 2, tmp_path)
