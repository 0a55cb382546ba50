#!/usr/bin/env python3
"""rl.train's off-policy mode (async_config, issue 34): tinker-cookbook 0.6.1's own
`rl.train.main` (run_rl.py) and ours (run_rl.mjs) on the arithmetic environment, each
against its own tinker-sim, with and without injected faults (failed, dropped, lost and
throttled requests, slow responses), checked from the simulator's request log and its
record of what each training run applied:

* the run finishes every step: `steps` metrics lines, the token totals, the final save;
  the training run applied one forward_backward and one optim_step per step and nothing
  failed;
* every sampled rollout is trained exactly once (a rollout's sample request carries its
  prompt, its datum starts with that prompt: the multisets of prompts are equal; a sample
  whose response was lost is sampled again, and only the one received counts), so
  nothing is lost or trained twice when requests fail and are retried;
* sampling never runs further ahead than the rollout slots allow: at each sample request,
  rollouts started and not yet trained ≤ groups_per_batch · (max_steps_off_policy + 1) ·
  group_size;
* each line's staleness is what its sampler steps say (`async/staleness_*` = step −
  `sampling_client/step_*`, from 0); the cookbook's 0.6.1 semantics bound slots, not
  staleness: a slow group is trained when it completes;
* both sides write the same metric names, line for line (their values depend on timing).

The order in which concurrent rollouts complete differs from run to run, so the two runs
are not compared request for request (the synchronous configurations of
sft_differential.py are).

    tests/conformance/.venv/bin/python tests/cookbook/rl_async.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIM = ROOT / "target/debug/tinker-sim"
PY = ROOT / "tests/conformance/.venv/bin/python"
TOKENIZER = ROOT / "target/renderer-parity/tokenizers/qwen3"

GROUPS, OFF_POLICY, GROUP_SIZE, BATCHES, BATCH = 2, 1, 3, 4, 2
ARGS = ["--tokenizer-dir", str(TOKENIZER), "--batch-size", str(BATCH), "--group-size", str(GROUP_SIZE),
        "--n-batches", str(BATCHES), "--max-tokens", "8", "--save-every", "2",
        "--async-off-policy", str(OFF_POLICY), "--async-groups", str(GROUPS), "--async-loss", "ppo"]
STEPS = BATCHES * BATCH // GROUPS
FAULTS = {
    "none": [],
    "faults": ["--faults", "slow:0.2:40@asample,500:0.08,drop:0.05,lost:0.08,429ms:0.08:30"],
}
SIDES = {"cookbook": [str(PY), str(HERE / "run_rl.py")], "ours": ["node", str(HERE / "run_rl.mjs")]}


def run(side: str, faults: str, tmp: Path) -> tuple[Path, Path, dict]:
    out = tmp / f"{faults}-{side}"
    log = tmp / f"{faults}-{side}.requests.jsonl"
    err = open(tmp / f"{faults}-{side}.sim.err", "w")
    sim = subprocess.Popen([str(SIM), "--port", "0", "--seed", "9", "--request-log", str(log), *FAULTS[faults]],
                           stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        url = sim.stdout.readline().strip().split("listening on ")[1]
        env = {"TINKER_API_KEY": "tml-local", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin:/usr/local/bin"}
        import os
        env = dict(os.environ, **env)
        r = subprocess.run(SIDES[side] + ARGS + ["--log-path", str(out), "--base-url", url], env=env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"{side} ({faults}) failed ({r.returncode}):\n{r.stderr[-3000:]}")
        models = {}
        for m in model_ids(log):
            with urllib.request.urlopen(url + "/_sim/models/" + urllib.parse.quote(m, safe=""), timeout=10) as resp:
                models[m] = json.loads(resp.read())
        return out, log, models
    finally:
        sim.kill()
        sim.wait()
        err.close()


def model_ids(log: Path) -> list[str]:
    ids: list[str] = []
    for e in entries(log):
        b = e.get("body") if isinstance(e.get("body"), dict) else {}
        if e["path"].endswith("/create_model") and e.get("status") == 200 and "model_seq_id" in b:
            m = f"{b['session_id']}:train:{b['model_seq_id']}"
            if m not in ids:
                ids.append(m)
    return ids


def entries(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines()]


def tokens(model_input: dict) -> tuple[int, ...]:
    return tuple(t for c in model_input["chunks"] for t in c.get("tokens", []))


def check(side: str, faults: str, out: Path, log: Path, models: dict) -> list[str]:
    problems: list[str] = []
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "training_client/step" in r]
    if [r["step"] for r in steps] != list(range(STEPS)) or "tokens/cumulative/trained" not in rows[-1]:
        problems.append(f"metrics lines: {[r.get('step') for r in rows]}")
    recs = [json.loads(x)["name"] for x in (out / "checkpoints.jsonl").read_text().splitlines()]
    if recs[0] != "000000" or recs[-1] != "final":
        problems.append(f"checkpoints: {recs}")
    trained = [m for m in models.values() if m["trainable"]]
    if len(trained) != 1:
        problems.append(f"{len(trained)} training runs")
    for m in trained:
        kinds = Counter(a["kind"] for a in m["applied"])
        if kinds["forward_backward"] != STEPS or kinds["optim_step"] != STEPS or m["failed"]:
            problems.append(f"applied {dict(kinds)}, failed {m['failed']}")
    # Each request once: a retry carries the attempt's idempotency key (deduplicated by the
    # simulator), a training request its seq_id.
    samples: dict[str, tuple[int, ...]] = {}
    fwd: dict[tuple, list] = {}
    events: list[tuple[str, object]] = []
    for e in entries(log):
        b = e.get("body") if isinstance(e.get("body"), dict) else {}
        if e["path"].endswith("/asample") and b.get("sampling_params", {}).get("max_tokens") != 1:
            # A lost response (applied, never received) is sampled again by the client.
            key = e["headers"].get("x-idempotency-key", e["ts"])
            if e.get("status") == 200 and e.get("fault") != "lost" and key not in samples:
                samples[key] = tokens(b["prompt"])
                events.append(("sample", key))
        elif e["path"].endswith("/forward_backward") and e.get("status") == 200:
            k = (b.get("model_id"), b.get("seq_id"))
            if k not in fwd:
                fwd[k] = [tokens(d["model_input"]) for d in b["data"]]
                events.append(("train", k))
    datums = [d for ds in fwd.values() for d in ds]
    prompts = Counter(samples.values())
    matched = Counter()
    for d in datums:
        hits = [p for p in prompts if d[: len(p)] == p and matched[p] < prompts[p]]
        if not hits:
            problems.append(f"a trained datum matches no sample request: {d[:20]}…")
            continue
        matched[max(hits, key=len)] += 1
    if matched != prompts or len(datums) != STEPS * GROUPS * GROUP_SIZE:
        problems.append(f"{sum(prompts.values())} rollouts sampled, {len(datums)} trained, {sum(matched.values())} matched")
    cap = GROUPS * (OFF_POLICY + 1) * GROUP_SIZE
    started = trained_n = worst = 0
    for kind, k in events:
        if kind == "sample":
            started += 1
            worst = max(worst, started - trained_n)
        else:
            trained_n += len(fwd[k])
    if worst > cap:
        problems.append(f"{worst} rollouts in flight and untrained at once, over the {cap} the slots allow")
    for r in steps:
        for s in ("max", "min"):
            other = "min" if s == "max" else "max"
            if r[f"async/staleness_{s}"] != r["step"] - r[f"sampling_client/step_{other}"] or r[f"async/staleness_{s}"] < 0:
                problems.append(f"step {r['step']}: staleness {s} {r[f'async/staleness_{s}']} against sampler steps {r[f'sampling_client/step_{other}']}")
    print(f"{side} ({faults}): {len(steps)} steps, {len(datums)} rollouts trained once each, at most {worst} in flight (cap {cap}), "
          f"staleness max {max(r['async/staleness_max'] for r in steps) if steps else '-'}: " + ("ok" if not problems else f"{len(problems)} problems"))
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep")
    a = ap.parse_args()
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="rl-async-"))
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    problems: list[str] = []
    # The four runs are independent (each on its own simulator) and mostly wait on the
    # faulted simulator's delays: run them at once.
    with ThreadPoolExecutor(max_workers=len(FAULTS) * len(SIDES)) as pool:
        runs = {(f, s): pool.submit(run, s, f, tmp) for f in FAULTS for s in SIDES}
    for faults in FAULTS:
        keys = {}
        for side in SIDES:
            out, log, models = runs[(faults, side)].result()
            problems += [f"{side} ({faults}): {p}" for p in check(side, faults, out, log, models)]
            keys[side] = [[k for k in json.loads(x) if not k.startswith("time/")] for x in (out / "metrics.jsonl").read_text().splitlines()]
        if keys["cookbook"] != keys["ours"]:
            problems.append(f"{faults}: metric names differ: {keys['cookbook']} (cookbook) against {keys['ours']} (ours)")
    for p in problems:
        print("DIFF", p)
    print("rl.train async: " + ("invariants hold on both sides" if not problems else f"{len(problems)} problems"))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
