#!/usr/bin/env python3
"""Differential test (issues 4 and 5): the same scenario through the official Python SDK
(tinker==0.38.0) and through tinker-wasm (the npm package in pkg/, in Node), each against
its own fresh tinker-sim with the same seed and --request-log; then the two request logs
are normalised and compared request by request (compare.py; rules in NOTES.md).

    tests/conformance/.venv/bin/python tests/differential/run.py [--keep DIR] [--config NAME] [--compare-only]

Needs target/debug/tinker-sim (`cargo build -p tinker-sim`), pkg/ (`scripts/build-wasm.sh`)
and the conformance venv with torch (`scripts/setup.sh`). Artifacts (both logs, the
simulator's model records, the drivers' results) go to target/differential/ (or DIR).

After the comparison it runs the comparator's self-test: it mutates the recorded logs in
ways the comparator must catch (a changed body value, a changed seq_id, a changed query,
a missing request, a poll with a different header, a reordered step…) and fails unless
every mutation is reported, and unless the unmutated logs still compare equal.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import compare  # noqa: E402

SIM_BIN = Path(os.environ.get("TINKER_SIM_BIN", ROOT / "target/debug/tinker-sim"))
VENV_PY = ROOT / "tests/conformance/.venv/bin/python"
SIM_ARGS = ["--seed", "11"]
# The scenario runs once per server configuration: the simulator's defaults, and flags
# that switch the SDKs onto other wire paths (zstd bodies, byte-budget chunking submitted
# serially, session-wide sample polling through retrieve_futures).
CONFIGS = {
    "default": [],
    "flags": ["--client-config", json.dumps({
        "proto_compress_fwdbwd": True,
        "fwdbwd_max_chunk_bytes_count": 250,
        "parallel_fwdbwd_chunks": False,
        "sample_use_retrieve_futures": True,
    })],
}
TIMEOUT = 120


class Sim:
    def __init__(self, log: Path, stderr: Path, extra: list[str]) -> None:
        self.stderr = open(stderr, "w")
        self.proc = subprocess.Popen(
            [str(SIM_BIN), "--port", "0", "--request-log", str(log), *SIM_ARGS, *extra],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True,
        )
        line = self.proc.stdout.readline().strip()
        prefix = "tinker-sim listening on "
        if not line.startswith(prefix):
            self.stop()
            raise SystemExit(f"tinker-sim did not start: {line!r} (see {stderr})")
        self.url = line[len(prefix):]

    def get(self, path: str):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


def model_ids(log: Path) -> list[str]:
    """Every training run the log mentions (by model_id, or created by session + model_seq_id)."""
    ids: list[str] = []
    for line in log.read_text().splitlines():
        e = json.loads(line)
        b = e.get("body") if isinstance(e.get("body"), dict) else {}
        found = []
        if isinstance(b.get("model_id"), str):
            found.append(b["model_id"])
        if isinstance(b.get("session_id"), str) and "model_seq_id" in b:
            found.append(f"{b['session_id']}:train:{b['model_seq_id']}")
        for m in found:
            if m not in ids:
                ids.append(m)
    return ids


ENDED: dict[int, float] = {}  # driver pid -> when it exited (for the timing line)


def _watch(proc: subprocess.Popen) -> None:
    proc.wait()
    ENDED[proc.pid] = time.monotonic()


def run_side(name: str, cmd: list[str], out: Path, extra: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Sim, float]:
    out.mkdir(parents=True, exist_ok=True)
    for f in ("requests.jsonl", "models.json", "results.json"):
        (out / f).unlink(missing_ok=True)
    sim = Sim(out / "requests.jsonl", out / "sim.stderr", extra)
    proc = subprocess.Popen([*cmd, sim.url, str(out / "results.json")], cwd=ROOT, stdout=open(out / "driver.log", "w"), stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    threading.Thread(target=_watch, args=(proc,), daemon=True).start()
    return proc, sim, time.monotonic()


def finish_side(name: str, proc: subprocess.Popen, sim: Sim, t0: float, out: Path) -> float:
    try:
        try:
            rc = proc.wait(max(1.0, TIMEOUT - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SystemExit(f"FAIL: the {name} driver did not finish in {TIMEOUT} s (log: {out / 'driver.log'})")
        elapsed = ENDED.get(proc.pid, time.monotonic()) - t0
        if rc != 0:
            sys.stdout.write((out / "driver.log").read_text()[-4000:])
            raise SystemExit(f"FAIL: the {name} driver exited with {rc} (log: {out / 'driver.log'})")
        models = {m: sim.get("/_sim/models/" + urllib.parse.quote(m, safe="")) for m in model_ids(out / "requests.jsonl")}
        (out / "models.json").write_text(json.dumps(models, indent=1, sort_keys=True))
        return elapsed
    finally:
        sim.stop()


# ---------------------------------------------------------------------------
# Self-test: the comparator must report each of these mutations of the recorded log.
# ---------------------------------------------------------------------------


def _find(entries, pred):
    for i, e in enumerate(entries):
        if pred(e):
            return i
    raise AssertionError("self-test: the log lacks a request the mutation needs")


def _fb(e):
    return e["path"] == "/api/v1/forward_backward"


def m_body_value(entries):
    """A weight of the 1100-datum chunk changes by one float32 ulp."""
    i = _find(entries, lambda e: _fb(e) and len(e["body"]["data"]) == 1024)
    d = entries[i]["body"]["data"][700]["loss_fn_inputs"]["target_tokens"]
    d["data"][1] += 1
    return "target_tokens of datum 700 in the first chunk"


def m_seq_id(entries):
    """optim_step and forward_backward of one step swap seq_ids."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/optim_step")
    j = max(k for k in range(i) if _fb(entries[k]))
    entries[i]["body"]["seq_id"], entries[j]["body"]["seq_id"] = entries[j]["body"]["seq_id"], entries[i]["body"]["seq_id"]
    return "seq_ids of a pipelined forward_backward and optim_step swapped"


def m_query(entries):
    """A pagination offset changes."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/training_runs" and "offset=2" in e["query"])
    entries[i]["query"] = entries[i]["query"].replace("offset=2", "offset=3")
    return "offset of a list_training_runs page"


def m_missing(entries):
    """A REST call is not sent at all."""
    i = _find(entries, lambda e: e["path"].endswith("/publish") and e["method"] == "DELETE")
    del entries[i]
    return "the unpublish request"


def m_poll_header(entries):
    """The polls of a forward_backward future ask for JSON instead of protobuf."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/retrieve_future" and e["headers"].get("x-tinker-request-type") == "ForwardBackward")
    rid = entries[i]["body"]["request_id"]
    for e in entries:
        if e["path"] == "/api/v1/retrieve_future" and e["body"]["request_id"] == rid:
            e["headers"]["accept"] = "application/json"
    return "accept header of a forward_backward poll"


def m_unpolled(entries):
    """A sample future is never polled."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/retrieve_future" and e["headers"].get("x-tinker-request-type") == "Sample")
    rid = entries[i]["body"]["request_id"]
    entries[:] = [e for e in entries if not (e["path"] == "/api/v1/retrieve_future" and e["body"]["request_id"] == rid)]
    return "every poll of one sample future"


def m_sampling_param(entries):
    """A sampling parameter's type changes (an int where Python sends a float)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/asample")
    entries[i]["body"]["sampling_params"]["temperature"] = 1
    return "sampling_params.temperature 1.0 -> 1"


def m_chunk_order(entries):
    """The second chunk goes out after the first instead of before it."""
    i = _find(entries, lambda e: _fb(e) and len(e["body"]["data"]) == 76)
    j = _find(entries, lambda e: _fb(e) and len(e["body"]["data"]) == 1024)
    assert i < j, "self-test: the recorded chunk order is not 2 then 1"
    entries[i], entries[j] = entries[j], entries[i]
    return "chunk order on the wire (2, 1) -> (1, 2)"


def m_step_moved(entries):
    """A request lands in the next step (it was sent late)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/weights_info")
    j = next(k for k in range(i + 1, len(entries)) if entries[k]["path"] == "/_sim/health")
    entries.insert(j, entries.pop(i))
    return "weights_info sent after the next step began"


def m_strict_header(entries):
    """forward_backward goes out as JSON instead of protobuf."""
    i = _find(entries, _fb)
    entries[i]["headers"]["content-type"] = "application/json"
    return "content-type of a forward_backward"


def m_header_name(entries):
    """A request without a header Python sends (issue 26: names are compared per route)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/optim_step")
    entries[i]["headers"].pop("x-stainless-read-timeout", None)
    entries[i]["headers"]["x-made-up"] = "1"
    return "an optim_step with a header Python never sends and without one it sends"


def m_read_timeout(entries):
    """A poll announcing another read timeout (Python's `timeout=45` on retrieve_future)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/retrieve_future")
    entries[i]["headers"]["x-stainless-read-timeout"] = "60"
    return "x-stainless-read-timeout of a retrieve_future poll"


def m_telemetry_kind(entries):
    """A SESSION_END on a normal close (Python queues one only with a fatal exception)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/telemetry")
    ev = dict(entries[i]["body"]["events"][0], event="SESSION_END")
    entries[i]["body"]["events"].append(ev)
    return "a SESSION_END telemetry event"


def m_no_heartbeat(entries):
    """No session heartbeat at all (a heartbeat loop that never started)."""
    entries[:] = [e for e in entries if e["path"] != "/api/v1/session_heartbeat"]
    return "no session heartbeat"


def m_accept_encoding(entries):
    """Another Accept-Encoding on one route (what the client says it can decode)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/create_session")
    entries[i]["headers"]["accept-encoding"] = "identity"
    return "accept-encoding of create_session"


def _acks(entries):
    return [e for e in entries if e["path"] == "/api/v1/retrieve_futures" and e["body"].get("retrieved_request_ids")]


def m_ack_timeout(entries):
    """An acknowledgement-only poll sends the integer 0 as its timeout (the bug fixed in crates/core/src/client/sampling.rs)."""
    ack = next(e for e in _acks(entries) if "timeout" in e["body"])
    ack["body"]["timeout"] = 0
    return "retrieve_futures timeout 0.0 -> 0"


def m_ack_missing(entries):
    """A fetched sample is never acknowledged to the session poller."""
    rid = _acks(entries)[0]["body"]["retrieved_request_ids"][0]
    for e in _acks(entries):
        e["body"]["retrieved_request_ids"] = [r for r in e["body"]["retrieved_request_ids"] if r != rid]
    return "the acknowledgement of one sample"


def m_zstd(entries):
    """One forward_backward chunk goes out uncompressed."""
    i = _find(entries, lambda e: _fb(e) and e["headers"].get("content-encoding") == "zstd")
    del entries[i]["headers"]["content-encoding"]
    return "content-encoding of a forward_backward chunk"


def m_sdk_method(entries):
    """A request a public method sends is attributed to the inner RestClient call (difference 5 of NOTES.md)."""
    i = _find(entries, lambda e: e["headers"].get("x-sdk-method") == "ServiceClient.get_server_capabilities")
    entries[i]["headers"]["x-sdk-method"] = "RestClient.get_server_capabilities"
    return "x-sdk-method of ServiceClient.get_server_capabilities"


def m_sdk_version(entries):
    """create_session carries x-sdk-version (Python sends it only with x-sdk-method)."""
    i = _find(entries, lambda e: e["path"] == "/api/v1/create_session")
    entries[i]["headers"]["x-sdk-version"] = "0.38.0"
    return "x-sdk-version on create_session"


# (configuration whose recorded log is mutated, mutation)
MUTATIONS = [("default", m) for m in (m_body_value, m_seq_id, m_query, m_missing, m_poll_header, m_unpolled, m_sampling_param, m_chunk_order, m_step_moved, m_strict_header, m_sdk_method, m_sdk_version, m_header_name, m_read_timeout, m_telemetry_kind, m_no_heartbeat, m_accept_encoding)]
MUTATIONS += [("flags", m) for m in (m_ack_timeout, m_ack_missing, m_zstd)]


def self_test(out: Path, configs: list[str]) -> list[str]:
    failures = []
    scratch = out / "self-test"
    for config, mutate in MUTATIONS:
        if config not in configs:
            continue
        py_dir, ours_dir = out / config / "python", out / config / "ours"
        baseline = set(compare.compare(compare.Side("python", py_dir), compare.Side("ours", ours_dir))[0])
        entries = [json.loads(x) for x in (ours_dir / "requests.jsonl").read_text().splitlines() if x.strip()]
        mutated = copy.deepcopy(entries)
        what = mutate(mutated)
        d = scratch / mutate.__name__
        d.mkdir(parents=True, exist_ok=True)
        (d / "requests.jsonl").write_text("\n".join(json.dumps(e) for e in mutated) + "\n")
        shutil.copy(ours_dir / "models.json", d / "models.json")
        problems, _ = compare.compare(compare.Side("python", py_dir), compare.Side("ours", d))
        # Caught: the mutation adds a report about the requests (results are not mutated).
        request_problems = [p for p in problems if p not in baseline and not p.startswith("result ")]
        status = "caught" if request_problems else "MISSED"
        first = request_problems[0].splitlines()[:4] if request_problems else []
        print(f"  self-test {config}/{mutate.__name__}: {what}: {status}" + ("".join(f"\n      {x}" for x in first)))
        if not request_problems:
            failures.append(f"the comparator did not notice: {what}")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", default=str(ROOT / "target/differential"), help="artifact directory")
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), help="only these server configurations (default: all)")
    ap.add_argument("--compare-only", action="store_true", help="only re-run the comparison and self-test on the logs recorded in --keep")
    args = ap.parse_args()
    out = Path(args.keep)
    configs = args.config or list(CONFIGS)
    t_start = time.monotonic()
    if not args.compare_only:
        for need, how in ((SIM_BIN, "cargo build -p tinker-sim"), (ROOT / "pkg/gen/full/tinker_wasm_bg.wasm", "scripts/build-wasm.sh"), (VENV_PY, "scripts/setup.sh")):
            if not Path(need).exists():
                print(f"FAIL: {need} is missing: run `{how}` first", file=sys.stderr)
                return 2
        # Every side of every configuration at once, each against its own simulator
        # (the timing differences this causes are what the comparator normalises).
        running = []
        try:
            for c in configs:
                # Each driver waits for a heartbeat before closing, so both send some.
                env = {"DIFF_HEARTBEATS": "1"}
                running.append((f"{c}: python", run_side("python", [str(VENV_PY), str(HERE / "driver.py")], out / c / "python", CONFIGS[c], env), out / c / "python"))
                running.append((f"{c}: ours (Node)", run_side("ours", ["node", str(HERE / "driver.mjs")], out / c / "ours", CONFIGS[c], env), out / c / "ours"))
        except BaseException:
            for _, (proc, sim, _), _ in running:
                proc.kill()
                sim.stop()
            raise
        times = []
        errors = []
        for name, side, d in running:
            try:
                times.append(f"{name} {finish_side(name, *side, d):.1f} s")
            except SystemExit as e:
                errors.append(str(e))
        if errors:
            print("\n".join(errors))
            return 1
        print(f"scenario ran ({', '.join(times)}); artifacts in {out}")
    rc = 0
    failures = []
    for c in configs:
        print(f"\n=== server configuration {c!r}: tinker-sim {' '.join(SIM_ARGS + CONFIGS[c])}")
        print("python = the official SDK 0.38.0, ours = tinker-wasm")
        py_dir, ours_dir = out / c / "python", out / c / "ours"
        rc |= compare.main(["compare.py", str(py_dir), str(ours_dir)])
        problems, _ = compare.compare(compare.Side("python", py_dir), compare.Side("python-again", py_dir))
        if problems:
            failures.append(f"{c}: a log compared with itself shows differences: " + problems[0])
    print("\ncomparator self-test (each mutation of our recorded log must be reported):")
    failures += self_test(out, configs)
    for f in failures:
        print("FAIL self-test: " + f)
    print(f"\ndifferential test {'passed' if rc == 0 and not failures else 'FAILED'} in {time.monotonic() - t_start:.1f} s")
    return 1 if rc != 0 or failures else 0


if not __debug__:
    # Assertions are this suite's checks: under -O / PYTHONOPTIMIZE they would vanish and
    # every case would pass.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")


if __name__ == "__main__":
    sys.exit(main())
