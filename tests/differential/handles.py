#!/usr/bin/env python3
"""Sampler handles cross between the official Python SDK (tinker==0.38.0) and tinker-wasm.

    tests/conformance/.venv/bin/python tests/differential/handles.py

Against a fresh tinker-sim, once with the simulator's default flags and once with
`sample_join_sampling_session` (the server allocates clone ids):
  1. Python creates a sampler, samples a prompt with a seed, and makes a handle
     (`get_sampler_handle()`);
  2. tinker-wasm in Node restores it (`SamplingClient.fromSamplerHandle`), samples the
     same prompt and seed, and makes its own handle (`getSamplerHandle()`);
  3. Python restores that handle (`SamplingClient.from_sampler_handle`) and samples again.
All three samples must be equal (same sampler, same seed); the two handles must be the same
string (Python's JSON layout, no credentials); and the simulator's request log must
show the wasm client's samples numbered as a clone (seq ids 1e9 x clone id, never the
creator's block 0), joined first when the flag is on.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.modules["torch"] = None  # torch is not used here: start without its ~5 s import (tests/cli/tinker-py)
from run import Sim  # noqa: E402

import tinker  # noqa: E402
from tinker import types  # noqa: E402

KEY = "tml-handles-test"
PROMPT = [100, 200, 300, 400]
SEED, MAX_TOKENS = 3, 6


def decode(handle: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4)))


def case(name: str, extra: list[str], tmp: Path) -> list[str]:
    problems: list[str] = []
    log = tmp / f"{name}.requests.jsonl"
    sim = Sim(log, tmp / f"{name}.stderr", ["--seed", "5", *extra])
    try:
        params = types.SamplingParams(max_tokens=MAX_TOKENS, seed=SEED)
        sc = tinker.ServiceClient(base_url=sim.url, api_key=KEY)
        made = sc.create_sampling_client(base_model="Qwen/Qwen3-8B").result()
        prompt = types.ModelInput.from_ints(PROMPT)
        ref = list(made.sample(prompt=prompt, num_samples=1, sampling_params=params).result().sequences[0].tokens)
        py_handle = made.get_sampler_handle()

        out = subprocess.run(
            ["node", str(HERE / "handles.mjs")],
            input=json.dumps({"handle": py_handle, "apiKey": KEY, "prompt": PROMPT, "params": {"max_tokens": MAX_TOKENS, "seed": SEED}}),
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )
        if out.returncode != 0:
            return [f"{name}: the wasm side failed: {out.stderr.strip()[-2000:]}"]
        js = json.loads(out.stdout)
        if js["tokens"] != ref:
            problems.append(f"{name}: wasm restored from Python's handle sampled {js['tokens']}, Python {ref}")
        if js["baseModel"] != "Qwen/Qwen3-8B":
            problems.append(f"{name}: wasm restored base model {js['baseModel']!r}")

        py_json, js_json = decode(py_handle), decode(js["handle"])
        if list(js_json) != list(py_json) or list(js_json["holder"]) != list(py_json["holder"]):
            problems.append(f"{name}: handle layouts differ: {list(js_json)} / {list(js_json['holder'])} vs {list(py_json)} / {list(py_json['holder'])}")
        if js_json != py_json:
            problems.append(f"{name}: handles decode differently:\n  wasm   {js_json}\n  python {py_json}")
        elif js["handle"] != py_handle:
            problems.append(f"{name}: same content, different strings:\n  wasm   {js['handle']}\n  python {py_handle}")
        if KEY in base64.urlsafe_b64decode(js["handle"] + "==").decode() or js_json["holder"]["api_key"] is not None:
            problems.append(f"{name}: the wasm handle carries the key")

        back = tinker.SamplingClient.from_sampler_handle(js["handle"], api_key=KEY)
        again = list(back.sample(prompt=prompt, num_samples=1, sampling_params=params).result().sequences[0].tokens)
        if again != ref:
            problems.append(f"{name}: Python restored from the wasm handle sampled {again}, expected {ref}")
    finally:
        sim.stop()

    # The wasm client's requests, from the simulator's log (its user agent).
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    wasm = [e for e in entries if "tinker-wasm" in (e.get("headers") or {}).get("user-agent", "")]
    asample = [e["body"]["seq_id"] for e in wasm if e["path"] == "/api/v1/asample"]
    joins = [e for e in wasm if e["path"] == "/api/v1/join_sampling_session"]
    if len(asample) != 1 or asample[0] < 1_000_000_000 or asample[0] % 1_000_000_000:
        problems.append(f"{name}: the wasm client's asample seq ids {asample}: expected one, the first of a clone block")
    want_joins = 1 if "sample_join_sampling_session" in " ".join(extra) else 0
    if len(joins) != want_joins:
        problems.append(f"{name}: {len(joins)} join_sampling_session from the wasm client, expected {want_joins}")
    if any(e["path"] in ("/api/v1/create_session", "/api/v1/client/config") for e in wasm):
        problems.append(f"{name}: the wasm client created a session or fetched the config (the handle carries both)")
    print(f"{'FAIL' if problems else 'ok  '} {name}: Python -> wasm -> Python, tokens {ref}, wasm seq ids {asample}, joins {len(joins)}")
    return problems


def main() -> int:
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        for name, extra in [
            ("default flags", []),
            ("join_sampling_session", ["--client-config", json.dumps({"sample_join_sampling_session": True})]),
        ]:
            problems += case(name, extra, Path(d))
    for p in problems:
        print(p)
    print(f"sampler handles across SDKs: {'FAIL' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
