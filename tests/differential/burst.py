#!/usr/bin/env python3
"""Empty 400s under a burst (issue 31, item 10): 300 concurrent samples through the official
Python SDK 0.38.0 and through tinker-wasm (Node), each against its own fresh tinker-sim that
answers an empty 400 (what a CDN in front of the API sends when it rejects a connection) to
every 7th `asample`. Both SDKs turn an empty 400 into a retried connection error while the
pool's budget (16, one back per success) lasts; a burst spends it before its successes give
any back. Then a persistent 400 (every `asample`): both must give up, within the bound.

Checks, per round:
* ours loses no sample to the 1-in-7 burst (Python's losses are printed: they vary by run);
* under a persistent 400 both sides fail every sample with `BadRequestError`, and ours sends
  at most 300 + 16 + 300 `asample` requests (every sample once, then the budget, then one
  conversion per request in flight at most: `retry.rs` `connection_budget`).

    tests/conformance/.venv/bin/python tests/differential/burst.py [--rounds N]

Artifacts: target/differential/burst/<case>-<round>/{python,ours}/ (request logs, results).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import run  # noqa: E402

N = 300
BASE_MODEL = json.loads((HERE / "scenario.json").read_text())["base_model"]
API_KEY = json.loads((HERE / "scenario.json").read_text())["api_key"]

PYTHON = f"""
import asyncio, collections, json, sys
sys.modules["torch"] = None  # torch is not used here: start without its ~5 s import (tests/cli/tinker-py)
import tinker
from tinker import types
url, out = sys.argv[1], sys.argv[2]
async def main():
    sc = tinker.ServiceClient(api_key={API_KEY!r}, base_url=url)
    sampler = await sc.create_sampling_client_async(base_model={BASE_MODEL!r})
    params = types.SamplingParams(max_tokens=4)
    calls = [sampler.sample_async(prompt=types.ModelInput.from_ints([i + 1]), num_samples=1, sampling_params=params) for i in range({N})]
    results = await asyncio.gather(*calls, return_exceptions=True)
    lost = collections.Counter(type(r).__name__ for r in results if isinstance(r, BaseException))
    json.dump({{"samples": len(results), "lost": dict(lost)}}, open(out, "w"))
asyncio.run(main())
"""

NODE = f"""
import {{ writeFileSync }} from 'node:fs';
import {{ ServiceClient }} from 'tinker-wasm';
const [url, out] = process.argv.slice(2);
const sc = new ServiceClient({{ apiKey: {json.dumps(API_KEY)}, baseURL: url }});
const sampler = await sc.createSamplingClient({{ base_model: {json.dumps(BASE_MODEL)} }});
const results = await Promise.allSettled(Array.from({{ length: {N} }}, (_, i) =>
  sampler.sample({{ prompt: [i + 1], num_samples: 1, sampling_params: {{ max_tokens: 4 }} }})));
const lost = {{}};
for (const r of results) if (r.status === 'rejected') lost[r.reason.constructor.name] = (lost[r.reason.constructor.name] ?? 0) + 1;
writeFileSync(out, JSON.stringify({{ samples: results.length, lost }}));
await sc.close();
"""

CASES = {
    # The API answers a sample's submission in 300 ms, the CDN its rejections at once: a
    # burst's rejections reach the client before its successes, as through a real edge.
    "burst": ["--faults", "empty400:1/7@asample,slow:1:300@asample"],
    "persistent": ["--faults", "empty400:1/1@asample"],
}


def side(name: str, case: str, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    script = out / ("driver.py" if name == "python" else "driver.mjs")
    script.write_text(PYTHON if name == "python" else NODE)
    cmd = [str(run.VENV_PY), str(script)] if name == "python" else ["node", str(script)]
    proc, sim, t0 = run.run_side(name, cmd, out, CASES[case])
    try:
        try:
            rc = proc.wait(run.TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SystemExit(f"FAIL: the {name} driver did not finish in {run.TIMEOUT} s (log: {out / 'driver.log'})")
        if rc != 0:
            sys.stdout.write((out / "driver.log").read_text()[-3000:])
            raise SystemExit(f"FAIL: the {name} driver exited with {rc} (log: {out / 'driver.log'})")
    finally:
        sim.stop()
    result = json.loads((out / "results.json").read_text())
    log = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    result["asample"] = sum(1 for e in log if e["path"].endswith("/api/v1/asample"))
    result["seconds"] = round(time.monotonic() - t0, 1)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    problems = []
    for case in CASES:
        for k in range(args.rounds if case == "burst" else 1):
            sides = {}
            for name in ("python", "ours"):
                sides[name] = side(name, case, ROOT / "target/differential/burst" / f"{case}-{k}" / name)
            py, ours = sides["python"], sides["ours"]
            print(f"{case} round {k}: lost python {py['lost'] or 0} | ours {ours['lost'] or 0}; asample requests {py['asample']} | {ours['asample']}; {py['seconds']} | {ours['seconds']} s")
            if case == "burst" and ours["lost"]:
                problems.append(f"{case} round {k}: ours lost {ours['lost']} (Python {py['lost'] or 'none'})")
            if case == "persistent":
                for name, s in sides.items():
                    if s["lost"] != {"BadRequestError": N}:
                        problems.append(f"{case}: {name} did not fail every sample with BadRequestError: {s['lost']}")
                if ours["asample"] > 2 * N + 16:
                    problems.append(f"{case}: ours sent {ours['asample']} asample requests, over the bound {2 * N + 16}")
    for p in problems:
        print("FAIL: " + p)
    print("burst: " + ("ours lost no sample; a persistent 400 stays final" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
