"""gpu_calibrate: measures this machine's GPU and writes a Cluster file.

    python bench/gpu_calibrate.py --out bench/results/gpu_cluster.pbtxt

Figures (each the median of ``--reps`` timed runs after two warm-ups, timed
with CUDA events):
  - matmul FLOP/s per dtype: an n x n x n product through PyTorch's cuBLAS
    (float32 with TF32 off, bfloat16 and float16; n = 8192, float32 4096);
    our runtime's own matmul against cuBLASLt is bench/gpu_matmul.cpp's;
  - memory bandwidth: a 1 GiB device-to-device copy, bytes read + written;
  - collective bandwidth and latency: on one GPU the N virtual devices of an
    in-process group move bytes by device copies (CudaGroupMemory,
    oneflow_lite/core/cuda/cuda_device_context.h), so
    the one level, "gpu_memory", is that copy's bandwidth counting the bytes
    that arrive, and its latency is a 4-byte copy's (one step).
With several GPUs in this process, a level "nvlink" would need NCCL's
all-reduce: not measured here (one GPU). The Cluster has one level of size
0 (any number of virtual devices share it) and the GPU's memory. It loads
with ``_C.load_cluster`` (checked at the end when the extension imports).
Needs torch with CUDA.
"""
from __future__ import annotations

import argparse
import datetime
import statistics

import torch


def timed_ms(fn, reps: int) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    return statistics.median(times)


def matmul_flops(dtype, n: int, reps: int) -> float:
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    return 2.0 * n ** 3 / (timed_ms(lambda: a @ b, reps) / 1e3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    flops = {
        "float32": matmul_flops(torch.float32, 4096, args.reps),
        "bfloat16": matmul_flops(torch.bfloat16, 8192, args.reps),
        "float16": matmul_flops(torch.float16, 8192, args.reps),
    }
    big = torch.empty(1 << 28, device="cuda", dtype=torch.float32)  # 1 GiB
    dst = torch.empty_like(big)
    copy_ms = timed_ms(lambda: dst.copy_(big), args.reps)
    memory_gbps = 2 * big.numel() * 4 / (copy_ms / 1e3) / 1e9   # read + write
    level_gbps = big.numel() * 4 / (copy_ms / 1e3) / 1e9        # bytes that arrive
    tiny, tiny_dst = torch.zeros(1, device="cuda"), torch.empty(1, device="cuda")
    latency_us = timed_ms(lambda: tiny_dst.copy_(tiny), args.reps * 20) * 1e3
    name = props.name.lower().replace(" ", "_")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# gpu_calibrate on {props.name} ({stamp}), torch {torch.__version__}",
        f"# matmul (cuBLAS via PyTorch, TF32 off): float32 {flops['float32'] / 1e12:.1f}, "
        f"bfloat16 {flops['bfloat16'] / 1e12:.1f}, float16 {flops['float16'] / 1e12:.1f} TFLOP/s",
        f"# device memory copy: {memory_gbps:.0f} GB/s read + written; a 4-byte copy "
        f"{latency_us:.1f} us",
        f'name: "{name}_local"',
        "levels {",
        '  name: "gpu_memory"',
        "  size: 0",
        f"  bandwidth_gbps: {level_gbps:.1f}",
        f"  latency_us: {latency_us:.2f}",
        "}",
        "device {",
        f'  name: "{name}"',
    ]
    lines += [f'  flops {{ key: "{k}" value: {v:.4g} }}' for k, v in flops.items()]
    lines += [f"  memory_bytes: {props.total_memory}", "}"]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        from oneflow_lite import _C
    except ImportError as e:  # the extension is optional for the measurement
        print(f"# not checked with _C.load_cluster: {e}")
        return 0
    _C.load_cluster(args.out)
    print(f"# {args.out} loads with _C.load_cluster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
