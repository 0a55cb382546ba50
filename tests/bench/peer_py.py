"""The official Python SDK (tinker 0.38.0) side of tests/bench/run.mjs: the same workloads as
tests/bench/driver.mjs, one measurement per process, one JSON line on stdout. Client CPU is
the process's (resource.getrusage: user + system, every thread, including the SDK's event
loop thread); the simulator is another process.

    python peer_py.py sample URL N TOTAL WARMUP     N concurrent sample() calls, TOTAL of them
    python peer_py.py sft URL STEPS BATCH LEN       pipelined SFT steps (forward_backward + optim_step)
    python peer_py.py encode BATCH LEN REPS         ForwardBackwardRequest → proto → bytes (→ zstd)
    python peer_py.py cold URL                      import tinker → first completed sample()
"""

from __future__ import annotations

import json
import logging
import resource
import sys
import time
import warnings

T_START = time.perf_counter()
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
API_KEY = "tml-bench"


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def out(o: dict) -> None:
    print(json.dumps(o), flush=True)


def resolved(x):
    """0.38 returns Backcompat*Future objects from create_*_client: take the client."""
    return x.result() if hasattr(x, "result") else x


def sample_args(types, i: int):
    return (types.ModelInput.from_ints([100 + i % 50, 200, 300, 400]), 1, types.SamplingParams(max_tokens=4, seed=i))


def sft_tokens(batch: int, n: int) -> list[list[int]]:
    return [[1000 + (b * 7919 + j * 104729) % 50000 for j in range(n)] for b in range(batch)]


def sft_weights(n: int) -> list[float]:
    return [0.0 if j < n / 2 else 1.0 for j in range(n)]


def sft_data(types, batch: int, length: int):
    """The same data as driver.mjs's datumFromTokens(tokens, { weights }): input tokens[:-1],
    targets tokens[1:] (int64), weights[1:] (float32), numpy-backed as the cookbook builds it."""
    import numpy as np

    w = sft_weights(length + 1)
    return [
        types.Datum(
            model_input=types.ModelInput.from_ints(t[:-1]),
            loss_fn_inputs={
                "target_tokens": types.TensorData.from_numpy(np.asarray(t[1:], dtype=np.int64)),
                "weights": types.TensorData.from_numpy(np.asarray(w[1:], dtype=np.float32)),
            },
        )
        for t in sft_tokens(batch, length + 1)
    ]


def rounds(n: int, total: int, one) -> None:
    done = 0
    while done < total:
        futs = [one(done + i) for i in range(min(n, total - done))]
        for f in futs:
            f.result()
        done += n


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "cold":
        url = args[0]
        t0 = time.perf_counter()
        import tinker
        from tinker import types

        t_import = time.perf_counter()
        sc = tinker.ServiceClient(base_url=url, api_key=API_KEY)
        s = resolved(sc.create_sampling_client(base_model="Qwen/Qwen3-8B"))
        s.sample(*sample_args(types, 0)).result()
        t_first = time.perf_counter()
        out({"import_ms": (t_import - t0) * 1e3, "first_request_ms": (t_first - t0) * 1e3})
        return

    import tinker
    from tinker import types

    if mode == "sample":
        url, n, total, warmup = args[0], int(args[1]), int(args[2]), int(args[3])
        sc = tinker.ServiceClient(base_url=url, api_key=API_KEY)
        s = resolved(sc.create_sampling_client(base_model="Qwen/Qwen3-8B"))
        one = lambda i: s.sample(*sample_args(types, i))  # noqa: E731
        rounds(n, warmup, one)
        c0, t0 = cpu(), time.perf_counter()
        rounds(n, total, one)
        wall, c = time.perf_counter() - t0, cpu() - c0
        out({"requests": total, "wall_s": wall, "cpu_s": c})
    elif mode == "sft":
        url, steps, batch, length = args[0], int(args[1]), int(args[2]), int(args[3])
        sc = tinker.ServiceClient(base_url=url, api_key=API_KEY)
        tc = resolved(sc.create_lora_training_client("Qwen/Qwen3-8B", rank=8, seed=1))
        data = sft_data(types, batch, length)

        def step() -> float:
            fb = tc.forward_backward(data, "cross_entropy")
            op = tc.optim_step(types.AdamParams(learning_rate=1e-3))
            loss = fb.result().metrics["loss:sum"]
            op.result()
            return loss

        step()  # warm-up
        c0, t0 = cpu(), time.perf_counter()
        losses = [step() for _ in range(steps)]
        wall, c = time.perf_counter() - t0, cpu() - c0
        out({"steps": steps, "wall_s": wall, "cpu_s": c, "first_loss": losses[0], "last_loss": losses[-1]})
    elif mode == "encode":
        import zstandard
        from google.protobuf.internal import api_implementation
        from tinker.proto.request_conv import forward_backward_request_to_proto

        batch, length, reps = int(args[0]), int(args[1]), int(args[2])
        data = sft_data(types, batch, length)

        def proto() -> bytes:
            # What AsyncTrainingResource.forward_backward does with the user's Datums
            # (the request object the TrainingClient builds, then the proto and its bytes).
            req = types.ForwardBackwardRequest(
                forward_backward_input=types.ForwardBackwardInput(data=data, loss_fn="cross_entropy", loss_fn_config=None),
                model_id="bench:train:0",
                seq_id=1,
            )
            msg = forward_backward_request_to_proto(req)
            msg.forward_only = False
            return msg.SerializeToString()

        def zstd() -> bytes:
            return zstandard.ZstdCompressor().compress(proto())

        def best(fn):
            fn()
            ms = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                r = fn()
                ms = min(ms, (time.perf_counter() - t0) * 1e3)
            return ms, r

        p_ms, p = best(proto)
        z_ms, z = best(zstd)
        out({
            "batch": batch, "len": length, "proto_bytes": len(p), "zstd_bytes": len(z), "proto_ms": p_ms, "zstd_ms": z_ms,
            "protobuf": api_implementation.Type(), "zstd_level": 3,
        })
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
