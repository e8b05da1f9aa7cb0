"""The benchmarks' one way to time a captured CUDA graph (imported by the scripts beside it)."""

import statistics

import torch


def median_replay_us(graph, calls=1, reps=30):
    """The median over ``reps`` replays of ``graph`` (a torch.cuda.CUDAGraph holding ``calls`` calls), in
    microseconds per call, each replay timed with CUDA events."""
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(times)
