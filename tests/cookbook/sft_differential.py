#!/usr/bin/env python3
"""Supervised fine-tuning and DPO, differential (issue 33): tinker-cookbook 0.6.1's own
`supervised.train.main` (tests/cookbook/run_sft.py) and ours (tinker-wasm/cookbook's
`supervised.train` in Node, tests/cookbook/run_sft.mjs, over crates/cookbook's state machine)
run the same JSONL and config, each against its own fresh
tinker-sim with --request-log; the same for `preference.train_dpo.main`
(tests/cookbook/run_dpo.py) and our `preference.trainDpo` (run_dpo.mjs) on comparison files. Compared, in order: the training calls (create_model,
forward_backward bodies, optim_step's Adam parameters, save_weights and
save_weights_for_sampler with their names and TTLs); then checkpoints.jsonl (paths aside) and
metrics.jsonl's keys and values for what is compared today (see COMPARED_METRICS).

    tests/conformance/.venv/bin/python tests/cookbook/sft_differential.py [--keep DIR] [--only NAME]

With a held-out set (test_size > 0) the cookbook's own SamplerNLLEvaluator runs, and so does ours:
its sampler requests are compared too. Not compared: the time/* metrics (wall-clock durations;
crates/cookbook does not write them yet), user evaluators (none in these runs).

DPO's custom loss is computed by torch in float32, its sequence sums by MKL's `sdot`, whose
summation order depends on the CPU (tests/cookbook/NOTES-issue33.md); ours sums exactly and
rounds once. The two differ by a few float32 ulps of those sums, so in the DPO configurations
every float (the gradient weights of the backward pass, the DPO metrics, and through training
the later logprobs) is compared within a tolerance (DPO_TOLERANCE); everything else, including
every token, name, count, order and the learning rates, is compared exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import prefork

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIM = ROOT / "target/debug/tinker-sim"
OURS = ["node", str(HERE / "run_sft.mjs")]
PY = ROOT / "tests/conformance/.venv/bin/python"
TOKENIZER = ROOT / "target/renderer-parity/tokenizers/qwen3"

# (name, extra arguments): seeded shuffles over two epochs, each schedule, saves every few
# steps, submit_ahead 0, 1 and 2, and a run stopped by max_steps.
CONFIGS = [
    ("linear-ahead1", ["--epochs", "2", "--save-every", "2", "--submit-ahead", "1", "--shuffle-seed", "3"]),
    ("cosine-ahead0", ["--epochs", "2", "--lr-schedule", "cosine", "--save-every", "3", "--submit-ahead", "0"]),
    ("constant-ahead2", ["--epochs", "1", "--lr-schedule", "constant", "--save-every", "1", "--submit-ahead", "2", "--batch-size", "3"]),
    ("max-steps", ["--epochs", "3", "--max-steps", "4", "--save-every", "2", "--max-length", "24"]),
    ("held-out-eval", ["--epochs", "2", "--test-size", "2", "--eval-every", "2", "--save-every", "2", "--submit-ahead", "1", "--shuffle-seed", "1"]),
    ("held-out-ahead2", ["--epochs", "1", "--test-size", "3", "--eval-every", "1", "--save-every", "0", "--submit-ahead", "2", "--batch-size", "2"]),
]
COMMON = ["--batch-size", "4", "--learning-rate", "2e-4"]
# Configurations run twice on one log folder and simulator: first with these arguments added
# (stopping early), then without, resuming from the last checkpoint the first run saved.
RESUMED = {"resume": ["--max-steps", "3"]}
# Rolling saves (state only, their TTL, each replacing the last: the previous one deleted
# through the REST API once the next is saved, the last one after the final save).
CONFIGS.append(("rolling", ["--epochs", "2", "--save-every", "3", "--rolling-save-every", "2", "--submit-ahead", "1"]))
# Periodic saves in the background (async_periodic_saves), with rolling ones.
CONFIGS.append(("async-saves", ["--epochs", "2", "--save-every", "2", "--rolling-save-every", "3", "--submit-ahead", "2", "--async-periodic-saves"]))
CONFIGS.append(("resume", ["--epochs", "2", "--save-every", "2", "--submit-ahead", "1", "--shuffle-seed", "2", "--test-size", "2", "--eval-every", "2"]))
# Training calls: compared in order, bodies normalised (ids by order of appearance).
CALLS = ("create_model", "forward", "forward_backward", "optim_step", "save_weights", "save_weights_for_sampler", "load_weights", "asample")
# metrics.jsonl keys compared by value (the rest must exist on both sides, time/* aside).
COMPARED_METRICS = ("step", "epoch", "progress", "learning_rate", "num_sequences", "num_tokens", "tokens/trained", "tokens/cumulative/trained")
CLOSE_METRICS = ("num_loss_tokens", "train_mean_nll", "train_mean_bpb", "test/nll", "test/bpb")


# DPO (preference.train_dpo): comparison files, a held-out one scored every eval_every steps.
DPO_CONFIGS = [
    ("dpo-linear", ["--epochs", "2", "--save-every", "2", "--eval-every", "2", "--test"]),
    ("dpo-cosine-rolling", ["--epochs", "2", "--lr-schedule", "cosine", "--save-every", "3", "--rolling-save-every", "2", "--eval-every", "0", "--dpo-beta", "0.5"]),
    ("dpo-max-steps", ["--epochs", "3", "--max-steps", "4", "--save-every", "2", "--max-length", "24", "--eval-every", "3", "--test"]),
    ("dpo-resume", ["--epochs", "2", "--save-every", "2", "--eval-every", "2", "--test"]),
]
DPO_COMMON = ["--batch-size", "2", "--learning-rate", "1e-3"]
RESUMED["dpo-resume"] = ["--max-steps", "3"]
# Floats in DPO runs: within 1e-4 relative or 1e-5 absolute (the rewards are beta times a
# difference of sums whose float32 ulps are about 2e-6).
DPO_TOLERANCE = (1e-4, 1e-5)
DPO_METRICS = ("num_pairs",)
DPO_CLOSE = ("dpo_loss", "accuracy", "margin", "chosen_reward", "rejected_reward", "loss:sum", "surrogate_loss:sum")


# RL (rl.train, synchronous mode) with the cookbook's arithmetic environment
# (tests/cookbook/run_rl.py runs the cookbook's own; run_rl.mjs ours, the environment in JS):
# every sample request (as a set per step: they are sent concurrently), forward_backward
# body (tokens, logprobs, advantages, provenance spans), optim_step and save, and every
# metric but time/*, exactly.
RL_CONFIGS = [
    ("rl-basic", ["--save-every", "2"]),
    ("rl-substeps", ["--num-substeps", "2", "--n-batches", "2", "--batch-size", "3", "--group-size", "2", "--save-every", "0"]),
    ("rl-resume", ["--n-batches", "4", "--save-every", "2"]),
    # Groups of one reward dropped (their sampling counted as discarded), and the ppo loss.
    ("rl-constant-ppo", ["--n-batches", "3", "--batch-size", "3", "--group-size", "2", "--remove-constant-reward-groups", "--loss-fn", "ppo"]),
    # A test set evaluated every two steps and on the final weights (RLTestSetEvaluator).
    ("rl-eval", ["--n-batches", "3", "--eval-every", "2", "--test-batches", "2", "--save-every", "2"]),
    # Rollout error tolerance: groups whose grading fails are skipped (RetryOnFailure), and
    # answers whose step fails are dropped from their group (MinViableGroup, no retry);
    # rollout_errors/* counts both.
    ("rl-tolerance", ["--n-batches", "3", "--batch-size", "3", "--group-fail-mod", "4", "--tolerance", "true"]),
    ("rl-minviable", ["--n-batches", "3", "--batch-size", "3", "--fail-mod", "2", "--tolerance", "minviable"]),
    # Rolling saves between the periodic ones, each replacing (deleting) the previous.
    ("rl-rolling", ["--n-batches", "5", "--save-every", "2", "--rolling-save-every", "1"]),
    # The KL penalty against the base model, discounted, with two substeps.
    ("rl-kl", ["--n-batches", "3", "--max-tokens", "16", "--group-size", "4", "--compute-post-kl", "--kl-penalty-coef", "0.3", "--kl-discount-factor", "0.9", "--kl-reference-model", "Qwen/Qwen3-32B", "--num-substeps", "2"]),
]
RESUMED["rl-resume"] = ["--max-steps", "2"]

# On-policy distillation (distillation/train_on_policy.py): two prompt-only datasets, the
# first distilled from a teacher checkpoint that make_teacher.py trains on each side's
# simulator first (the same script, so the same requests), the second from the base model.
DISTILL_CONFIGS = [
    ("distill-basic", ["--save-every", "2", "--eval-every", "1", "--test"]),
    ("distill-discount-resume", ["--compute-post-kl", "--kl-discount-factor", "0.8", "--kl-penalty-coef", "0.5", "--save-every", "1", "--group-size", "3"]),
]
RESUMED["distill-discount-resume"] = ["--max-steps", "1"]


def close(x, y, tol) -> bool:
    """Equal, floats within `tol` (relative, absolute) when given."""
    if tol and isinstance(x, float) and isinstance(y, (float, int)) and not isinstance(y, bool):
        return abs(x - y) <= max(tol[0] * max(abs(x), abs(y)), tol[1])
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(close(x[k], y[k], tol) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(close(a, b, tol) for a, b in zip(x, y))
    return x == y and type(x) is type(y) or (tol is not None and isinstance(x, int) and isinstance(y, float) and close(y, x, tol))


def comparisons(train: Path, test: Path) -> None:
    """Nine comparisons (seven to train on, two held out): a right and a wrong answer, the
    right one labelled A or B in turn."""
    facts = [("capital of France", "Paris", "Lyon"), ("largest planet", "Jupiter", "Mars"), ("author of Hamlet", "Shakespeare", "Dickens"),
             ("chemical symbol for gold", "Au", "Ag"), ("square root of 81", "9", "8"), ("smallest prime", "2", "1"),
             ("longest river", "the Nile", "the Thames"), ("number of continents", "7", "5"), ("freezing point of water", "0 °C", "10 °C")]
    with train.open("w") as f, test.open("w") as g:
        for i, (q, good, bad) in enumerate(facts):
            label = "A" if i % 2 == 0 else "B"
            a, b = (good, bad) if label == "A" else (bad, good)
            turn = lambda t: [{"role": "assistant", "content": f"The {q} is {t}."}]  # noqa: E731
            row = {"comparison": {"prompt_conversation": [{"role": "user", "content": f"What is the {q}?"}], "completion_A": turn(a), "completion_B": turn(b)}, "label": label}
            (g if i >= 7 else f).write(json.dumps(row) + "\n")


def conversations(path: Path) -> None:
    """Twelve short conversations (the data is ours; the cookbook reads it as we do)."""
    facts = [("capital of France", "Paris"), ("largest planet", "Jupiter"), ("boiling point of water at sea level", "100 °C"),
             ("author of Hamlet", "Shakespeare"), ("chemical symbol for gold", "Au"), ("square root of 81", "9"),
             ("fastest land animal", "the cheetah"), ("smallest prime", "2"), ("speed of light", "about 300,000 km/s"),
             ("longest river", "the Nile"), ("freezing point of water", "0 °C"), ("number of continents", "7")]
    with path.open("w") as f:
        for q, a in facts:
            msgs = [{"role": "user", "content": f"What is the {q}?"}, {"role": "assistant", "content": f"The {q} is {a}."}]
            f.write(json.dumps({"messages": msgs}) + "\n")


def run_side(cmd: list[str], log: Path, tmp: Path, name: str, resume_after: list[str] | None = None, setup=None) -> None:
    """Runs `cmd` against a fresh simulator. With `resume_after`, runs it first with those
    extra arguments (a run stopped early, e.g. by max_steps), drops its final record as a
    run that was stopped would not have written it, and runs `cmd` again on the same log
    folder and simulator: the second run resumes."""
    sim_out = tmp / f"{name}.sim.out"
    with sim_out.open("w") as so:
        sim = subprocess.Popen([str(SIM), "--port", "0", "--seed", "5", "--request-log", str(log)], stdout=so, stderr=subprocess.STDOUT)
    try:
        url = ""
        for _ in range(100):
            text = sim_out.read_text()
            if "listening on " in text:
                url = text.split("listening on ")[1].split()[0]
                break
            subprocess.run(["sleep", "0.05"])  # the simulator prints its URL once bound
        env = dict(os.environ, TINKER_API_KEY="tml-local", HF_HUB_OFFLINE="1", TINKER_BASE_URL=url)
        if setup:
            cmd = cmd + setup(url, env)
        runs = [cmd + resume_after, cmd] if resume_after else [cmd]
        for i, c in enumerate(runs):
            r = run_script(c + ["--base-url", url], env, 600)
            if r.returncode != 0:
                raise SystemExit(f"{name} failed ({r.returncode}):\n{r.stderr[-3000:]}")
            if i == 0 and resume_after:
                ckpt = Path(c[c.index("--log-path") + 1]) / "checkpoints.jsonl"
                kept = [x for x in ckpt.read_text().splitlines() if json.loads(x)["name"] != "final"]
                ckpt.write_text("".join(x + "\n" for x in kept))
    finally:
        sim.kill()
        sim.wait()


def run_script(argv: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """Runs `argv`: the cookbook's scripts (argv[0] is PY) as forks of this process with the
    cookbook imported once (prefork.py), ours (node) as processes."""
    if argv[0] != str(PY):
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    code, out, err = prefork.run(argv, env, timeout)
    return subprocess.CompletedProcess(argv, code, out, err)


def teacher(url: str, env: dict) -> list[str]:
    """make_teacher.py on the simulator at `url`: `--teacher-path` and the checkpoint's path."""
    r = run_script([str(PY), str(HERE / "make_teacher.py"), "--base-url", url], env, 300)
    if r.returncode != 0:
        raise SystemExit(f"make_teacher.py failed:\n{r.stderr[-3000:]}")
    return ["--teacher-path", r.stdout.strip().splitlines()[-1]]


def calls(log: Path, split_rolling: bool = False):
    labels: dict[str, str] = {}

    def norm(v):
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items() if k not in ("session_id", "type")}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, str) and "-" in v and len(v) >= 36:  # a server id, or a path holding one
            # A sampler's id is its session's id and its creation index: only the session's
            # part is a label, so concurrent first uses cannot swap two samplers' labels.
            key = v.split("/")[2] if v.startswith("tinker://") else v.split(":sample:")[0]
            labels.setdefault(key, f"<id{len(labels)}>")
            return v.replace(key, labels[key])
        return v

    out = []
    for line in log.read_text().splitlines():
        e = json.loads(line)
        name = e["path"].rsplit("/", 1)[-1]
        if name in CALLS:
            out.append({"call": name, "body": norm(e.get("body"))})
    # RL's rolling saves run in the background (see one()): taken out before the samples
    # around them are sorted, so that where one landed does not split a run of samples.
    rolling = []
    if split_rolling:
        out, rolling = rolling_saves(out)
    # An evaluation's samples are sent concurrently (asyncio.gather; our futures all at once):
    # their order among themselves is not defined, so each run of them is compared as a set.
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j]["call"] == "asample":
            j += 1
        out[i:j] = sorted(out[i:j], key=lambda c: json.dumps(c, sort_keys=True))
        i = max(j, i + 1)
    return (out, rolling) if split_rolling else out


def rolling_saves(cs: list[dict]) -> tuple[list[dict], list[dict]]:
    """The calls without the rolling saves (save_weights with the rolling TTL), and those."""
    rolling = lambda c: c["call"] == "save_weights" and c["body"].get("ttl_seconds") == 7200  # noqa: E731
    return [c for c in cs if not rolling(c)], [c for c in cs if rolling(c)]


def unordered(cs: list[dict]) -> list[dict]:
    """Each forward_backward's datums sorted, their sequence ids' labels dropped (ORDER_FREE)."""
    import re
    out = []
    for c in cs:
        if c["call"] == "forward_backward":
            body = dict(c["body"])
            body["data"] = sorted(re.sub(r"<id\d+>", "<id>", json.dumps(d, sort_keys=True)) for d in body["data"])
            c = {**c, "body": body}
        out.append(c)
    return out


def deletes(log: Path) -> list[str]:
    """The REST calls on training runs, in order: checkpoints deleted (by name) and runs
    read (the renderer check of a resumed or loaded checkpoint), run ids dropped."""
    out = []
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e.get("method") == "DELETE" and "/checkpoints/" in e["path"]:
            out.append("DELETE " + e["path"].split("/checkpoints/", 1)[1])
        elif e.get("method") == "GET" and "/training_runs/" in e["path"] and "/checkpoints" not in e["path"]:
            out.append("GET training_runs/<id>")
    return out


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        for k in ("prefill_cached", "prefill_uncached"):  # RL: see RL_ARRIVAL_ORDER
            r.get("discarded_tokens", {}).pop(k, None)
            r.get("cumulative_tokens", {}).pop(k, None)
        for k in ("state_path", "sampler_path"):
            if k in r:
                r[k] = "tinker://<run>/" + r[k].split("/", 3)[3]
        out.append(r)
    return out


def saved_order(rs: list[dict]) -> list[dict]:
    """The records in step order, with where the final one was kept. A record is written when
    its save completes (`save_checkpoint_async`), and a rolling save (and, with
    async_periodic_saves, a periodic one) runs in the background beside the next: two saves
    in flight complete in arrival order, in the cookbook as in ours (seen: the rolling 000003
    after the periodic 000004 under load). The steps are zero-padded names, so step order is
    name order; the cookbook orders only the final record ("pending save records must precede
    the final record"), and that is kept."""
    finals = [i for i, r in enumerate(rs) if r.get("name") == "final"]
    return sorted(rs, key=lambda r: r.get("name", "")) + [{"final at": finals, "of": len(rs)}]


def compare_metrics(py: list[dict], ours: list[dict], problems: list[str], dpo: bool = False) -> None:
    if len(py) != len(ours):
        problems.append(f"metrics.jsonl: {len(py)} rows (cookbook) against {len(ours)} (ours)")
    for a, b in zip(py, ours):
        keys_a = [k for k in a if not k.startswith("time/") and k != "batch_time"]
        keys_b = [k for k in b if not k.startswith("time/") and k != "batch_time"]
        server = [k for k in keys_a if ":" in k and not (dpo and k in DPO_CLOSE)]  # the server's optim_step metrics
        if keys_a != keys_b:
            problems.append(f"metrics step {a.get('step')}: keys {keys_a} (cookbook) against {keys_b} (ours)")
        if dpo:
            if a.get("state_path", "").split("/")[3:] != b.get("state_path", "").split("/")[3:]:
                problems.append(f"metrics step {a.get('step')}: state_path {a.get('state_path')} (cookbook) against {b.get('state_path')} (ours)")
            for k in DPO_CLOSE + ("test/nll",):
                if (k in a or k in b) and not close(a.get(k), b.get(k), DPO_TOLERANCE):
                    problems.append(f"metrics step {a.get('step')}: {k} {a.get(k)!r} (cookbook) against {b.get(k)!r} (ours)")
        for k in COMPARED_METRICS + DPO_METRICS + tuple(server):
            if a.get(k) != b.get(k) or type(a.get(k)) is not type(b.get(k)):
                problems.append(f"metrics step {a.get('step')}: {k} {a.get(k)!r} (cookbook) against {b.get(k)!r} (ours)")
        for k in () if dpo else CLOSE_METRICS:
            if k not in a and k not in b:
                continue
            x, y = a.get(k), b.get(k)
            if not (isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-5 * max(1.0, abs(x))):
                problems.append(f"metrics step {a.get('step')}: {k} {x!r} (cookbook) against {y!r} (ours)")


# How a step's prompt tokens split into cached and uncached depends on which of its
# concurrent requests reached the simulator's prefix cache first: a run's totals are fixed,
# the split between kept and dropped groups varies from run to run.
RL_ARRIVAL_ORDER = ("env/all/total_cached_ob_tokens", "tokens/prefill_cached", "tokens/prefill_uncached",
                    "tokens/discarded/prefill_cached", "tokens/discarded/prefill_uncached",
                    "tokens/cumulative/prefill_cached", "tokens/cumulative/prefill_uncached")

# The retrying rollout strategies (RetryOnFailure, MinViableGroup) keep a group's
# trajectories in the order they complete, in the cookbook as in ours: these
# configurations compare each forward_backward's datums as a multiset (sequence ids by
# presence) and the floats that sum over them within 1e-6 relative.
ORDER_FREE = ("rl-tolerance", "rl-minviable")


def compare_rl_metrics(py: list[dict], ours: list[dict], problems: list[str], order_free: bool = False) -> None:
    """Every row, every key but time/*, in order, every value exactly (ints and floats as
    written; floats within 1e-6 relative when `order_free`); the keys of RL_ARRIVAL_ORDER by
    presence only."""
    if len(py) != len(ours):
        problems.append(f"metrics.jsonl: {len(py)} rows (cookbook) against {len(ours)} (ours)")
    for a, b in zip(py, ours):
        drop = lambda r: [(k, v) for k, v in r.items() if not k.startswith("time/")]  # noqa: E731
        for (ka, va), (kb, vb) in zip(drop(a), drop(b)):
            if ka == kb and ka in RL_ARRIVAL_ORDER:
                continue
            near = order_free and isinstance(va, float) and isinstance(vb, float) and abs(va - vb) <= 1e-6 * max(1.0, abs(va))
            if ka != kb or (va != vb and not near) or type(va) is not type(vb):
                problems.append(f"metrics step {a.get('step')}: {ka}={va!r} (cookbook) against {kb}={vb!r} (ours)")
                break
        if len(drop(a)) != len(drop(b)):
            problems.append(f"metrics step {a.get('step')}: {len(drop(a))} keys (cookbook) against {len(drop(b))} (ours)")


def one(name: str, extra: list[str], tmp: Path, data: Path, ours: list[str]) -> list[str]:
    resume = RESUMED.get(name)
    dpo = name.startswith("dpo")
    setup = None
    if name.startswith("rl-"):
        args = ["--tokenizer-dir", str(TOKENIZER)] + extra
        script, ours = "run_rl.py", ["node", str(HERE / "run_rl.mjs")]
    elif name.startswith("distill-"):
        args = ["--tokenizer-dir", str(TOKENIZER)] + extra
        script, ours = "run_distill.py", ["node", str(HERE / "run_distill.mjs")]
        setup = teacher
    elif dpo:
        extra = [x for x in extra if x != "--test"] + (["--test", str(tmp / "test.jsonl")] if "--test" in extra else [])
        args = ["--train", str(tmp / "train.jsonl"), "--tokenizer-dir", str(TOKENIZER)] + DPO_COMMON + extra
        script, ours = "run_dpo.py", ["node", str(HERE / "run_dpo.mjs")]
    else:
        args = ["--jsonl", str(data), "--tokenizer-dir", str(TOKENIZER)] + COMMON + extra
        script = "run_sft.py"
    py_dir, our_dir = tmp / f"{name}-cookbook", tmp / f"{name}-ours"
    run_side([str(PY), str(HERE / script), "--log-path", str(py_dir)] + args, tmp / f"{name}-cookbook.requests.jsonl", tmp, f"{name}-cookbook", resume, setup)
    run_side(ours + ["--log-path", str(our_dir)] + args, tmp / f"{name}-ours.requests.jsonl", tmp, f"{name}-ours", resume, setup)
    problems: list[str] = []
    if name.startswith("rl-"):
        # A rolling save runs in the background while the next step samples: where its
        # request lands among the samples is arrival order; its seq_id (the training run's
        # order) is compared, with the rolling saves in order among themselves.
        (a, ra), (b, rb) = calls(tmp / f"{name}-cookbook.requests.jsonl", True), calls(tmp / f"{name}-ours.requests.jsonl", True)
        if ra != rb:
            problems.append(f"rolling saves: {ra} (cookbook) against {rb} (ours)")
    else:
        a, b = calls(tmp / f"{name}-cookbook.requests.jsonl"), calls(tmp / f"{name}-ours.requests.jsonl")
    if name in ORDER_FREE:
        a, b = unordered(a), unordered(b)
    for i, (x, y) in enumerate(zip(a, b)):
        if not close(x, y, DPO_TOLERANCE if dpo else None):
            problems.append(f"call {i}: cookbook {json.dumps(x)[:400]}\n      ours     {json.dumps(y)[:400]}")
            break
    if len(a) != len(b):
        problems.append(f"{len(a)} training calls (cookbook) against {len(b)} (ours): " f"{[c['call'] for c in a]} / {[c['call'] for c in b]}")
    da, db = deletes(tmp / f"{name}-cookbook.requests.jsonl"), deletes(tmp / f"{name}-ours.requests.jsonl")
    if da != db:
        problems.append(f"REST calls on training runs: {da} (cookbook) against {db} (ours)")
    if saved_order(records(py_dir / "checkpoints.jsonl")) != saved_order(records(our_dir / "checkpoints.jsonl")):
        problems.append(f"checkpoints.jsonl: {records(py_dir / 'checkpoints.jsonl')} (cookbook) against {records(our_dir / 'checkpoints.jsonl')} (ours)")
    backups = lambda d: sorted(p.name for p in d.glob("metrics.jsonl.pre_resume_*"))  # noqa: E731
    if backups(py_dir) != backups(our_dir):
        problems.append(f"metrics backups on resume: {backups(py_dir)} (cookbook) against {backups(our_dir)} (ours)")
    load = lambda d: [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]  # noqa: E731
    if name.startswith(("rl-", "distill-")):
        compare_rl_metrics(load(py_dir), load(our_dir), problems, name in ORDER_FREE)
    else:
        compare_metrics(load(py_dir), load(our_dir), problems, dpo)
    print(f"{name}: {len(a)} training calls, {len(records(py_dir / 'checkpoints.jsonl'))} checkpoints, {len(da)} REST calls, {len(load(py_dir))} metrics rows: " + ("same" if not problems else f"{len(problems)} differences"))
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep")
    ap.add_argument("--only")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sft-diff-"))
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    data = tmp / "data.jsonl"
    conversations(data)
    comparisons(tmp / "train.jsonl", tmp / "test.jsonl")
    problems = []
    prefork.preload([str(TOKENIZER)])
    for name, extra in CONFIGS + DPO_CONFIGS + RL_CONFIGS + DISTILL_CONFIGS:
        if args.only and args.only != name:
            continue
        for p in one(name, extra, tmp, data, OURS):
            problems.append(f"{name}: {p}")
    for p in problems:
        print("DIFF", p)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print("sft, dpo and rl differential: " + ("same requests, records and metrics" if not problems else f"{len(problems)} differences"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
