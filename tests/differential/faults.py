#!/usr/bin/env python3
"""Differential fault suite (issue 23): the differential scenario (scenario.json: training
with chunking and pipelining, sampling, REST, futures) through the official Python SDK
0.38.0 and through tinker-wasm (Node), each against its own fresh tinker-sim injecting
one fault kind at a time, then the two runs compared on what must not depend on timing:

* both drivers finish the scenario, or both fail;
* every training run applied the same requests in the same order (`/_sim/models/{id}`:
  seq_id and kind of each applied request, the failed ones) and ends with the same
  weights digest;
* the same answers reached the drivers (results.json: losses, per-datum logprobs, seeded
  samples, checkpoint paths, REST pages), compared as the fault-free test compares them;
* the simulator deduplicated the same requests (`duplicates_deduped` of /_sim/stats);
* retries stay within the same bounds: per endpoint, the requests the simulator faulted
  and the attempts sent are printed for both; a side that gave up where the other retried
  shows up as a failed run or different answers above.

Where the SDKs legitimately differ, DIFFERENCES below says so, with the reason; a kind
listed there is reported, not failed, on that point only.

    tests/conformance/.venv/bin/python tests/differential/faults.py [--short] [--kind K]...

Artifacts: target/differential/faults/<kind>/{python,ours}/ (request logs, models,
stats, results, driver logs). Needs what run.py needs.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
import time
import urllib.parse
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import compare  # noqa: E402
import run  # noqa: E402

# One fault kind per run; rates keep the scenario's ~1,000 requests to a few dozen faults.
# The 401 kind needs JWT auth on (it only fires then).
KINDS: dict[str, list[str]] = {
    "429": ["--faults", "429:0.1:1"],
    "429ms": ["--faults", "429ms:0.15:50"],
    "429date": ["--faults", "429date:0.05:0"],
    "500": ["--faults", "500:0.15"],
    "502": ["--faults", "502:0.15"],
    "503": ["--faults", "503:0.15"],
    "drop": ["--faults", "drop:0.1"],
    "lost": ["--faults", "lost:0.25"],
    "garbled": ["--faults", "garbled:0.15"],
    "408": ["--faults", "408:0.15"],
    "paused": ["--faults", "paused:0.2"],
    "storm": ["--faults", "storm:0.2:5"],
    "expire": ["--faults", "expire:0.2"],
    # It hits heartbeats only (their answers are not JSON); the drivers wait for two of them
    # (DRIVER_ENV), which a run shorter than the 10 s heartbeat period would not send.
    "malformed": ["--faults", "malformed:0.5"],
    "401": ["--faults", "401:0.1", "--client-config", json.dumps({"pjwt_auth_enabled": True})],
    "empty400": ["--faults", "empty400:0.05"],
    # Billing: each 402 pauses 5 s (uncounted) in both SDKs, so few of them, on two
    # submissions both SDKs wrap in their holder retries / sampling backpressure.
    "402": ["--faults", "402:0.3@forward_backward,402:0.03@asample"],
    # So many that a call without a retry loop around it (create_sampling_session) meets one:
    # both SDKs must fail there, with a connection error.
    "empty400-heavy": ["--faults", "empty400:0.15"],
    # Results that arrive but cannot be read as their type (issue 31, item 6): a protobuf
    # one (forward/backward, sample: Python's proto_deserialization_error event) or a JSON
    # one (create_model, save_weights: its validation_error event; the other JSON futures'
    # models accept it, and a save that names a checkpoint then asserts its path, as
    # `unreadable-save` shows). The call fails on both sides.
    "unreadable-proto": ["--faults", "unreadable:1/6:proto"],
    "unreadable-json": ["--faults", "unreadable:1/1:json"],
    "unreadable-save": ["--faults", "unreadable:1/2:json"],
}
# Driver environment per kind: DIFF_HEARTBEATS=n adds a step that waits for n heartbeats.
DRIVER_ENV: dict[str, dict[str, str]] = {"malformed": {"DIFF_HEARTBEATS": "2"}}
# `make test`: the kinds whose handling the fixes changed, plus the commonest.
SHORT = ["empty400", "503", "lost", "storm", "unreadable-proto", "unreadable-json", "unreadable-save"]

# A failed call's error class in Python and the JS class ours raises for the same failure
# (tests/differential/NOTES.md): a result that cannot be read as its type (Python's
# ValueError), or a save's result without the checkpoint's path (Python asserts it).
SAME_FAILURE = {("ValueError", "APIResponseValidationError"), ("AssertionError", "APIResponseValidationError")}

# Known, deliberate differences: (kind, check) -> reason. A listed check is printed, not failed.
DIFFERENCES: dict[tuple[str, str], str] = {}

# Traffic whose count is timing, not behaviour: polls, heartbeats, telemetry, markers, config.
TIMING_ROUTES = ("retrieve_future", "retrieve_futures", "session_heartbeat", "telemetry", "client/config", "client/dynamic_config")
# Traffic per client holder: Python makes one holder more than ours (NOTES.md, difference 7),
# each with its own JWT exchange (and refreshes after a 401), so these counts differ by design.
HOLDER_ROUTES = ("auth/token",)


def run_pair(kind: str, out: Path) -> dict[str, dict]:
    """Runs both drivers against fresh simulators with `kind`'s faults; what each did."""
    sides = {}
    running = []
    for name, cmd in (("python", [str(run.VENV_PY), str(HERE / "driver.py")]), ("ours", ["node", str(HERE / "driver.mjs")])):
        d = out / name
        running.append((name, d, run.run_side(name, cmd, d, KINDS[kind], DRIVER_ENV.get(kind))))
    for name, d, (proc, sim, t0) in running:
        try:
            try:
                rc = proc.wait(max(1.0, run.TIMEOUT - (time.monotonic() - t0)))
            except Exception:
                proc.kill()
                rc = "timeout"
            models = {m: sim.get("/_sim/models/" + urllib.parse.quote(m, safe="")) for m in run.model_ids(d / "requests.jsonl")}
            (d / "models.json").write_text(json.dumps(models, indent=1, sort_keys=True))
            stats = sim.get("/_sim/stats")
            (d / "stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True))
        finally:
            sim.stop()
        log = (d / "driver.log").read_text()
        sides[name] = {"rc": rc, "dir": d, "stats": stats, "tail": log.strip().splitlines()[-3:] if log.strip() else []}
    return sides


def failure(d: Path) -> tuple[str, str]:
    """Where a failed driver stopped (its last step marker) and the error class it died with."""
    import re

    marks = re.findall(r"mark=([A-Za-z0-9_]+)", (d / "requests.jsonl").read_text())
    log = (d / "driver.log").read_text()
    # Python: `tinker.APIConnectionError: …` (last line); Node: `APIConnectionError: …`.
    errors = re.findall(r"^(?:tinker\.)?([A-Z]\w*Error)\b", log, re.M)
    return (marks[-1] if marks else "(none)", errors[-1] if errors else "(no error class)")


def route(e: dict) -> str:
    p = e["path"].split("/api/v1/", 1)[-1]
    for prefix in ("training_runs", "sessions", "samplers", "checkpoints"):
        if p.startswith(prefix + "/"):
            return f"{e['method']} {prefix}/…"
    return f"{e['method']} {p}"


def traffic(d: Path) -> tuple[Counter, Counter]:
    """Attempts and faulted requests per route."""
    sent, faulted = Counter(), Counter()
    for line in (d / "requests.jsonl").read_text().splitlines():
        e = json.loads(line)
        if not e["path"].startswith("/api/"):
            continue
        r = route(e)
        sent[r] += 1
        if e.get("fault"):
            faulted[r] += 1
    return sent, faulted


def failure_telemetry(d: Path) -> Counter:
    """The error reports a run's telemetry carried: (event, error class, kind) per event."""
    out: Counter = Counter()
    for line in (d / "requests.jsonl").read_text().splitlines():
        e = json.loads(line)
        if not e["path"].endswith("/api/v1/telemetry"):
            continue
        for ev in (e.get("body") or {}).get("events", []):
            data = ev.get("event_data") or {}
            error = data.get("exception_type") or data.get("error_type")
            # Error reports: generic events naming an error class, and the non-generic kinds
            # other than the session's start and end.
            kind = ev.get("event")
            if kind in ("SESSION_START", "SESSION_END") or (kind == "GENERIC_EVENT" and not error):
                continue
            out[(ev.get("event_name") or ev.get("event"), error, data.get("kind"))] += 1
    return out


def _ts(e: dict) -> float:
    from datetime import datetime

    return datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()


def retry_waits(d: Path) -> dict[int, list[float]]:
    """The HTTP layer's waits before each retry (by its x-stainless-retry-count): from the end
    of a failed attempt to the start of the next attempt with the same idempotency key. The
    simulator logs a request when its answer is ready (`ts`) with the time it took
    (`duration_ms`): it started at `ts - duration`."""
    last: dict[str, dict] = {}
    waits: dict[int, list[float]] = {}
    for line in (d / "requests.jsonl").read_text().splitlines():
        e = json.loads(line)
        h = {k.lower(): v for k, v in (e.get("headers") or {}).items()}
        key, count = h.get("x-idempotency-key"), h.get("x-stainless-retry-count")
        if not key or count is None or not e["path"].startswith("/api/"):
            continue
        prev = last.get(key)
        if prev is not None and int(count) == prev["count"] + 1:
            started = _ts(e) - (e.get("duration_ms") or 0) / 1000
            waits.setdefault(int(count), []).append(started - prev["end"])
        last[key] = {"count": int(count), "end": _ts(e)}
    return waits


@functools.lru_cache(maxsize=None)
def retry_band(count: int) -> tuple[float, float]:
    """The wait before retry `count` as Python computes it, at both ends of its jitter
    (`_calculate_retry_timeout` of the SDK itself, with `random()` at 0 and at 1)."""
    from tinker import _base_client
    from tinker._client import AsyncTinker
    from tinker._models import FinalRequestOptions

    client = AsyncTinker(api_key="tml-" + "0" * 60, base_url="http://127.0.0.1:9")
    options = FinalRequestOptions(method="post", url="/x")
    remaining = client.max_retries - (count - 1)
    ends = []
    saved = _base_client.random
    try:
        for r in (1.0, 0.0):
            _base_client.random = lambda r=r: r
            ends.append(client._calculate_retry_timeout(remaining, options, None))
    finally:
        _base_client.random = saved
    return ends[0], ends[1]


# Faults answered without Retry-After (the wait is the SDK's own backoff), the kinds whose
# retry waits are compared.
BACKOFF_KINDS = ("500", "502", "503", "drop", "lost", "garbled", "empty400", "empty400-heavy")
# Scheduling and loopback time on top of the computed wait, and timer granularity before it.
WAIT_SLACK_S, WAIT_EARLY_S = 0.25, 0.02


def compare_telemetry(pa: Path, pb: Path, problem, notes: list[str]) -> None:
    """Failure telemetry: the same kinds of error reports, with the same error classes."""
    ta, tb = failure_telemetry(pa), failure_telemetry(pb)
    if set(ta) != set(tb):
        problem("telemetry", "failure telemetry differs (event, error class, kind):\n"
                + "".join(f"  only {'python' if k in ta else 'ours'}: {k}\n" for k in sorted(set(ta) ^ set(tb), key=str)))
    notes.append("failure telemetry (python | ours): " + "; ".join(f"{k[0]} {k[1]}{' ' + k[2] if k[2] else ''} {ta[k]} | {tb[k]}" for k in sorted(set(ta) | set(tb), key=str)))


def check(kind: str, sides: dict) -> tuple[list[str], list[str]]:
    problems, notes = [], []

    def problem(what: str, text: str) -> None:
        reason = DIFFERENCES.get((kind, what))
        (notes if reason else problems).append(text + (f" [deliberate: {reason}]" if reason else ""))

    py, ours = sides["python"], sides["ours"]
    ok = {n: s["rc"] == 0 for n, s in sides.items()}
    if ok["python"] != ok["ours"]:
        problem("outcome", f"python {'finished' if ok['python'] else 'failed'} ({py['rc']}: {' / '.join(py['tail'])}), ours {'finished' if ok['ours'] else 'failed'} ({ours['rc']}: {' / '.join(ours['tail'])})")
    if not (ok["python"] and ok["ours"]):
        if not any(ok.values()):
            # Both failed: at the same step, with the same error class (or its JS name),
            # and with the same failure telemetry.
            fa, fb = failure(py["dir"]), failure(ours["dir"])
            if fa[0] != fb[0] or (fa[1] != fb[1] and (fa[1], fb[1]) not in SAME_FAILURE):
                problem("outcome", f"both failed, differently: python {fa} | ours {fb}")
            else:
                notes.append(f"both failed in step {fa[0]!r} with {fa[1]} | {fb[1]}")
            compare_telemetry(py["dir"], ours["dir"], problem, notes)
        return problems, notes
    a, b = compare.Side("python", py["dir"]), compare.Side("ours", ours["dir"])
    # Training runs: the same requests applied, in the same order, the same weights.
    ma = {a.label(k): v for k, v in json.loads((py["dir"] / "models.json").read_text()).items()}
    mb = {b.label(k): v for k, v in json.loads((ours["dir"] / "models.json").read_text()).items()}
    if sorted(ma) != sorted(mb):
        problem("runs", f"training runs differ: python {sorted(ma)} | ours {sorted(mb)}")
    for m in sorted(set(ma) & set(mb)):
        for field in ("applied", "failed"):
            sa = [(x["seq_id"], x["kind"]) for x in ma[m].get(field, [])]
            sb = [(x["seq_id"], x["kind"]) for x in mb[m].get(field, [])]
            if sa != sb:
                problem(field, f"{m}: {field} requests differ:\n  python {sa}\n  ours   {sb}")
        if ma[m].get("weights_digest") != mb[m].get("weights_digest"):
            problem("weights", f"{m}: weights digests differ: {ma[m].get('weights_digest')} | {mb[m].get('weights_digest')}")
    # The answers the drivers got.
    ra, rb = a.norm(a.results or {}), b.norm(b.results or {})
    for k in sorted(set(ra) | set(rb)):
        if k not in ra or k not in rb:
            problem("results", f"result {k}: only {'python' if k in ra else 'ours'} has it")
            continue
        va, vb = copy.deepcopy(ra[k]), copy.deepcopy(rb[k])
        for step, field, metric in compare.CLIENT_COMPUTED:
            # The user's own loss value (torch float32 vs JS float64), as run.py tolerates it.
            if step == k and isinstance(va, dict) and isinstance(vb, dict):
                va.get(field, {}).pop(metric, None), vb.get(field, {}).pop(metric, None)
        d = compare.leaf_diff(va, vb, numeric=True)
        if d:
            problem("results", f"result {k} differs (python | ours):\n" + "\n".join(f"  {x}" for x in d))
    # Deduplication and fault counts.
    da, db = py["stats"].get("duplicates_deduped"), ours["stats"].get("duplicates_deduped")
    if da != db:
        problem("dedupe", f"duplicates deduplicated: python {da} | ours {db}")
    notes.append(f"faults injected: python {py['stats'].get('faults_injected')} | ours {ours['stats'].get('faults_injected')}; deduplicated {da} | {db}")
    (sa, fa), (sb, fb) = traffic(py["dir"]), traffic(ours["dir"])
    for r in sorted(set(fa) | set(fb)):
        notes.append(f"  {r}: faulted {fa[r]} | {fb[r]}, attempts {sa[r]} | {sb[r]}")
    compare_telemetry(py["dir"], ours["dir"], problem, notes)
    # Retry waits: every wait of both sides within Python's own backoff band for its retry.
    if kind in BACKOFF_KINDS:
        for name, side in (("python", py), ("ours", ours)):
            for count, ws in sorted(retry_waits(side["dir"]).items()):
                lo, hi = retry_band(count)
                bad = [round(w, 3) for w in ws if not lo - WAIT_EARLY_S <= w <= hi + WAIT_SLACK_S]
                notes.append(f"{name} retry {count}: {len(ws)} waits {min(ws):.3f}-{max(ws):.3f} s (Python's band {lo:.3f}-{hi:.3f} s)")
                if bad:
                    problem("waits", f"{name}: waits before retry {count} outside Python's band {lo:.3f}-{hi:.3f} s: {bad}")
    for r in sorted(set(sa) | set(sb)):
        if any(t in r for t in TIMING_ROUTES + HOLDER_ROUTES):
            continue
        # Every non-timing route: attempts = successes + retried faults on both sides, so a
        # route retried by one side and given up by the other has fewer attempts there.
        if (sa[r] - fa[r]) != (sb[r] - fb[r]):
            problem("attempts", f"{r}: unfaulted requests python {sa[r] - fa[r]} | ours {sb[r] - fb[r]}")
    return problems, notes


# ---------------------------------------------------------------------------
# Self-test: each mutation of our recorded run must be reported.
# ---------------------------------------------------------------------------


def self_test(kind: str, out: Path, skip: tuple[str, ...] = (), only: str | None = None) -> list[str]:
    import shutil

    src = out / kind
    py = {"rc": 0, "dir": src / "python", "stats": json.loads((src / "python/stats.json").read_text()), "tail": []}

    def mutated(name: str, edit) -> tuple[str, bool]:
        d = out / "self-test" / name / "ours"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src / "ours", d)
        side = {"rc": 0, "dir": d, "stats": json.loads((d / "stats.json").read_text()), "tail": []}
        what = edit(side, d)
        problems, _ = check(kind, {"python": py, "ours": side})
        return what, bool(problems)

    def rw(d: Path, name: str, f) -> None:
        p = d / name
        v = json.loads(p.read_text())
        f(v)
        p.write_text(json.dumps(v))

    def drop_applied(side, d):
        rw(d, "models.json", lambda m: next(iter(m.values()))["applied"].pop())
        return "a training request never applied"

    def digest(side, d):
        rw(d, "models.json", lambda m: next(iter(m.values())).__setitem__("weights_digest", "0" * 64))
        return "other final weights"

    def result(side, d):
        def f(r):
            k = next(k for k, v in r.items() if isinstance(v, dict) and v)
            r[k]["(mutated)"] = 1
        rw(d, "results.json", f)
        return "a different answer to the driver"

    def dedupe(side, d):
        side["stats"]["duplicates_deduped"] = (side["stats"].get("duplicates_deduped") or 0) + 1
        return "one more deduplicated retry"

    def failed(side, d):
        side["rc"] = 1
        return "the run failed"

    def extra_submit(side, d):
        lines = (d / "requests.jsonl").read_text().splitlines()
        e = next(json.loads(x) for x in lines if '"/api/v1/optim_step"' in x)
        e["fault"] = None
        lines.append(json.dumps(e))
        (d / "requests.jsonl").write_text("\n".join(lines) + "\n")
        return "an optim_step sent once more"

    def telemetry_class(side, d):
        lines = (d / "requests.jsonl").read_text().splitlines()
        for i, x in enumerate(lines):
            e = json.loads(x)
            for ev in (e.get("body") or {}).get("events", []) if e["path"].endswith("/api/v1/telemetry") else []:
                data = ev.get("event_data") or {}
                for k in ("exception_type", "error_type"):
                    if data.get(k):
                        data[k] = "APIStatusError"
                        lines[i] = json.dumps(e)
                        (d / "requests.jsonl").write_text("\n".join(lines) + "\n")
                        return "an error reported under another class"
        return "an error reported under another class (none to mutate: not applicable)"

    def quick_retry(side, d):
        lines = (d / "requests.jsonl").read_text().splitlines()
        entries = [json.loads(x) for x in lines]
        for i, e in enumerate(entries):
            h = {k.lower(): v for k, v in (e.get("headers") or {}).items()}
            if h.get("x-stainless-retry-count") == "1" and h.get("x-idempotency-key") and e["path"].startswith("/api/"):
                prev = next(p for p in reversed(entries[:i]) if {k.lower(): v for k, v in (p.get("headers") or {}).items()}.get("x-idempotency-key") == h["x-idempotency-key"])
                e["ts"] = prev["ts"]
                lines[i] = json.dumps(e)
                (d / "requests.jsonl").write_text("\n".join(lines) + "\n")
                return "a retry sent without its backoff"
        return "a retry sent without its backoff (none to mutate: not applicable)"

    failures = []
    mutations = [drop_applied, digest, result, dedupe, failed, extra_submit, telemetry_class, quick_retry]
    for m in [m for m in mutations if (only is None or m.__name__ == only) and m.__name__ not in skip]:
        what, caught = mutated(m.__name__, m)
        print(f"  self-test {kind}/{m.__name__}: {what}: {'caught' if caught else 'MISSED'}")
        if not caught:
            failures.append(what)
    return failures


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", default=str(ROOT / "target/differential/faults"))
    ap.add_argument("--kind", action="append", choices=sorted(KINDS))
    ap.add_argument("--short", action="store_true", help=f"only {', '.join(SHORT)}")
    ap.add_argument("--compare-only", action="store_true")
    args = ap.parse_args()
    kinds = args.kind or (SHORT if args.short else list(KINDS))
    run.TIMEOUT = 400
    out = Path(args.keep)
    failed = []
    t0 = time.monotonic()
    for kind in kinds:
        t = time.monotonic()
        if args.compare_only:
            sides = {}
            for n in ("python", "ours"):
                d = out / kind / n
                stats = json.loads((d / "stats.json").read_text())
                # The drivers write results.json when the scenario finished.
                sides[n] = {"rc": 0 if (d / "results.json").exists() else 1, "dir": d, "stats": stats, "tail": []}
        else:
            sides = run_pair(kind, out / kind)
        problems, notes = check(kind, sides)
        print(f"\n=== fault {kind!r}: tinker-sim {' '.join(run.SIM_ARGS + KINDS[kind])} ({time.monotonic() - t:.0f} s)")
        for n in notes:
            print("note: " + n)
        for p in problems:
            print("DIFFERENCE: " + p)
        print(f"fault {kind}: {'FAILED' if problems else 'same behaviour'}")
        if problems:
            failed.append(kind)
    # The self-test mutates a finished run's files (results, models).
    first = next((k for k in kinds if all((out / k / n / "results.json").exists() for n in ("python", "ours"))), None)
    if first is None:
        print("\ncomparator self-test: skipped (it needs a kind whose runs both finished)")
        return 1 if failed else 0
    print(f"\ncomparator self-test (on the {first!r} runs; each mutation of ours must be reported):")
    missed = self_test(first, out, skip=() if retry_waits(out / first / "ours") else ("quick_retry",))
    # The retry-wait check needs a run with HTTP retries to mutate.
    retried = next((k for k in kinds if k in BACKOFF_KINDS and retry_waits(out / k / "ours")), None)
    if retried and retried != first:
        missed += self_test(retried, out, only="quick_retry")
    for m in missed:
        print(f"FAIL self-test: not reported: {m}")
    print(f"\ndifferential fault suite: {len(kinds) - len(failed)}/{len(kinds)} kinds agree"
          + (f"; differ: {', '.join(failed)}" if failed else "") + f" ({time.monotonic() - t0:.0f} s)")
    return 1 if failed or missed else 0


if __name__ == "__main__":
    sys.exit(main())
