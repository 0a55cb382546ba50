#!/usr/bin/env python3
"""Comparator of the differential test: normalises two tinker-sim request logs (one
written while the official Python SDK ran the scenario, one while tinker-wasm did) and
diffs them request by request. NOTES.md explains every rule below and why it is sound.

    python3 tests/differential/compare.py DIR_PYTHON DIR_OURS

Each DIR holds `requests.jsonl` (the simulator's --request-log), `models.json` (the
simulator's /_sim/models/{id} for every training run in the log: which request id was
applied at which seq_id) and, optionally, `results.json` (what the driver got back).
Exit status 0 when the logs match, 1 with a readable report when they do not.

Stdlib only (runs under any Python 3.9+).
"""

from __future__ import annotations

import copy
import json
import re
import sys
import urllib.parse
from collections import Counter, OrderedDict
from pathlib import Path

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# Headers whose values change what the server does: compared strictly.
STRICT_HEADERS = ("content-type", "accept", "content-encoding", "x-tinker-request-type", "x-tinker-sampling-backpressure")
# Headers that carry client identity or timing, compared as a report only (NOTES.md).
SOFT_HEADERS = ("x-sdk-method", "x-sdk-version")
DRIVER_METHOD_DIFFERENCE = ("x-sdk-method", ["RestClient.delete_checkpoint"], ["RestClient.delete_checkpoint_from_tinker_path"])
# Headers whose per-route values say what the SDK does (Python's timeouts, the raw-response
# read of polls): every request, polls and background included, the same values per route.
ROUTE_VALUE_HEADERS = ("x-stainless-read-timeout", "x-stainless-raw-response", "accept-encoding")
# Per-route values that differ for a stated reason: (header, python's, ours) -> why.
DELIBERATE_ROUTE_VALUES = {
    ("accept-encoding", "gzip, deflate, zstd", "gzip, deflate"): "Node before 22.15 has no zstd "
    "decoder, so node-transport.js asks only for what it can decode (on Node 22.15+ and Deno it "
    "asks for zstd as Python does)",
}
# Header names one SDK sends and the other does not, each with the reason it is not a
# difference in behaviour (issue 26: every other name sent by one side only fails).
DELIBERATE_HEADER_NAMES = {
    "connection": "Node's node:http agent (pkg/node-transport.js) says `Connection: keep-alive`, "
    "HTTP/1.1's default, which httpx leaves implicit; the connection is kept alive by both",
}
# Telemetry event kinds (GENERIC_EVENT by its event_name) one SDK sends and the other does
# not, with the reason (none today: both send what Python's lib/telemetry.py sends).
DELIBERATE_TELEMETRY = {}
# Driver results computed by the caller's own loss function (torch float32 in Python,
# float64 in JS), not by either SDK: compared with a relative tolerance.
CLIENT_COMPUTED = {("custom", "metrics", "loss:sum"), ("custom", "metrics", "custom:sum")}
# Polls and background traffic are timing-dependent (NOTES.md, "Normalisations").
POLL_PATHS = ("/api/v1/retrieve_future",)
# The session-wide sample poller (`sample_use_retrieve_futures`): one long-poll loop per
# sampling session whose acks ride on whichever poll goes out next (NOTES.md).
SESSION_POLL_PATHS = ("/api/v1/retrieve_futures",)
CONNECT_PATHS = ("/api/v1/client/config", "/api/v1/client/dynamic_config")
BACKGROUND_PATHS = ("/api/v1/session_heartbeat", "/api/v1/telemetry")


class Side:
    """One normalised run."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.dir = directory
        self.entries = [json.loads(line) for line in (directory / "requests.jsonl").read_text().splitlines() if line.strip()]
        models_file = directory / "models.json"
        self.models = json.loads(models_file.read_text()) if models_file.exists() else {}
        results_file = directory / "results.json"
        self.results = json.loads(results_file.read_text()) if results_file.exists() else None
        self.labels: dict[str, str] = {}  # server-assigned uuid -> stable label
        self.futures: dict[str, str] = {}  # future request_id -> label
        self.notes: list[str] = []
        self._build()

    # -- ids ---------------------------------------------------------------

    def label(self, text: str) -> str:
        """Replaces server-assigned uuids by labels in order of first appearance."""

        def sub(m: re.Match) -> str:
            u = m.group(0)
            if u in self.futures:
                return self.futures[u]
            if u not in self.labels:
                self.labels[u] = f"<id{len(self.labels)}>"
            return self.labels[u]

        return UUID.sub(sub, text)

    def norm(self, value):
        if isinstance(value, str):
            return self.label(value)
        if isinstance(value, list):
            return [self.norm(v) for v in value]
        if isinstance(value, dict):
            return {self.label(k): self.norm(v) for k, v in value.items()}
        return value

    # -- classification ------------------------------------------------------

    def _build(self) -> None:
        # Training futures: which (run, seq_id, kind) each request id was, from the simulator.
        train_futures: dict[str, tuple[str, int, str]] = {}
        for model_id, info in self.models.items():
            for a in info.get("applied", []) + info.get("failed", []):
                train_futures[a["request_id"]] = (model_id, a["seq_id"], a["kind"])

        self.segments: "OrderedDict[str, list]" = OrderedDict()
        self.segments["(before the first step)"] = []
        current = "(before the first step)"  # requests a driver makes before its first mark
        self.connect: list = []
        self.background: list = []
        self.polls: dict[str, list] = {}  # future label -> poll payloads
        self.session_polls: dict[str, dict] = {}  # target -> what its poller sent
        self.soft: Counter = Counter()
        self.header_names: Counter = Counter()
        self.route_headers: dict[str, set] = {}  # route -> header names sent there
        self.route_values: dict[tuple[str, str], set] = {}  # (header, route) -> values
        seg_future_counts: Counter = Counter()
        self.first_polls: dict[str, list] = {}
        for idx, e in enumerate(self.entries):
            path = e["path"]
            if path.startswith("/_sim/"):
                q = dict(urllib.parse.parse_qsl(e.get("query") or ""))
                if path == "/_sim/health" and "mark" in q:
                    current = q["mark"]
                    if current in self.segments:
                        raise SystemExit(f"{self.name}: step {current!r} appears twice in the log")
                    self.segments[current] = []
                continue
            headers = e.get("headers") or {}
            route = f"{e['method']} {self._route(path)}"
            for h in headers:
                self.header_names[h] += 1
            self.route_headers.setdefault(route, set()).update(headers)
            for h in ROUTE_VALUE_HEADERS:
                self.route_values.setdefault((h, route), set()).add(headers.get(h, "(absent)"))
            body = e.get("body")
            if path in POLL_PATHS:
                rid = (body or {}).get("request_id", "")
                if rid not in self.futures:
                    if rid in train_futures:
                        model_id, seq, kind = train_futures[rid]
                        self.futures[rid] = f"<future {self.label(model_id)}#{seq} {kind}>"
                    else:
                        rtype = headers.get("x-tinker-request-type", "?")
                        k = seg_future_counts[(current, rtype)]
                        seg_future_counts[(current, rtype)] += 1
                        self.futures[rid] = f"<future {current}:{rtype}#{k}>"
                    self.first_polls.setdefault(current, []).append(self.futures[rid])
                self.polls.setdefault(self.futures[rid], []).append(self._payload(e, body))
                continue
            if path in SESSION_POLL_PATHS:
                b = dict(body or {})
                target = canon(self.norm(b.pop("target", None)))
                acc = self.session_polls.setdefault(target, {"shapes": set(), "cursors": set(), "acked": set(), "polls": 0})
                acc["polls"] += 1
                acc["cursors"].add(b.pop("prev_cursor", None))
                for rid in b.pop("retrieved_request_ids", None) or []:
                    acc["acked"].add(self.futures.get(rid, "<a future never fetched with retrieve_future>"))
                b["(headers)"] = {h: headers.get(h) for h in STRICT_HEADERS if h in headers}
                b["(status)"] = e.get("status")
                acc["shapes"].add(canon(b))
                continue
            if path in CONNECT_PATHS:
                self.connect.append((e["method"], path, json.dumps(self.norm(body), sort_keys=True)))
                continue
            if path in BACKGROUND_PATHS:
                self.background.append((idx, e))
                continue
            for h in SOFT_HEADERS:
                self.soft[(h, f"{e['method']} {self._route(path)}", headers.get(h, "(absent)"))] += 1
            key, stream, seq = self._key(e, body)
            self.segments[current].append(("request", key, self._payload(e, body), stream, seq))
        self.segments = OrderedDict((name, self._arrange(name, items)) for name, items in self.segments.items())

    def _arrange(self, name: str, items: list) -> list:
        """One step as compared: its calls in the order they were made; each training run's
        and sampling session's requests by seq_id, plus the order they arrived in; the
        futures the step waited on (concurrent futures are first polled in any order)."""
        calls = [(k, key, p) for k, key, p, stream, _ in items if stream is None]
        streamed = sorted((stream, seq, i, key, p) for i, (k, key, p, stream, seq) in enumerate(items) if stream is not None)
        out = calls + [("request", key, p) for _, _, _, key, p in streamed]
        arrival: dict[str, list] = {}
        for _, key, p, stream, seq in items:
            if stream is not None:
                arrival.setdefault(stream, []).append(seq)
        out += [("arrival", f"order of {stream} (seq_ids as they reached the server)", order) for stream, order in sorted(arrival.items())]
        out += [("poll", f, None) for f in sorted(self.first_polls.get(name, []))]
        return out

    @staticmethod
    def _route(path: str) -> str:
        return UUID.sub("{id}", path)

    def _key(self, e: dict, body) -> tuple[str, str | None, int]:
        """What a request is: (its key: stream, position, method and path; its stream; seq_id)."""
        path = self.label(urllib.parse.unquote(e["path"]))
        b = body if isinstance(body, dict) else {}
        stream, seq = None, 0
        if "model_id" in b and "seq_id" in b:
            stream, seq = self.label(b["model_id"]), b["seq_id"]
        elif "session_id" in b and "model_seq_id" in b:  # create_model, create-via-load: seq 0 of the new run
            stream = f"{self.label(b['session_id'])}:train:{b['model_seq_id']}"
        elif "sampling_session_id" in b and "seq_id" in b:
            stream, seq = self.label(b["sampling_session_id"]), b["seq_id"]
        if stream is None:
            return f"call: {e['method']} {path}", None, 0
        return f"{stream} seq={seq}: {e['method']} {path}", stream, seq

    def _payload(self, e: dict, body) -> dict:
        headers = e.get("headers") or {}
        query = sorted(urllib.parse.parse_qsl(e.get("query") or "", keep_blank_values=True))
        strict = {h: headers.get(h) for h in STRICT_HEADERS if h in headers}
        if body is None:
            # No body: its content-type describes nothing (NOTES.md), so it is only reported.
            self.soft[("content-type (no body)", f"{e['method']} {self._route(e['path'])}", strict.pop("content-type", "(absent)"))] += 1
        if isinstance(body, dict) and isinstance(body.get("cursor"), dict):
            # A search cursor is the server's own value handed back (its last row's time).
            body = {**body, "cursor": {k: ("<server time>" if TIMESTAMP.fullmatch(str(v)) else v) for k, v in body["cursor"].items()}}
        return {
            "status": e.get("status"),
            "query": [[self.label(k), self.label(v)] for k, v in query],
            "headers": strict,
            "body": self.norm(body),
        }


# ---------------------------------------------------------------------------
# Diffing
# ---------------------------------------------------------------------------


def leaf_diff(a, b, path: str = "", out: list | None = None, limit: int = 12, numeric: bool = False) -> list:
    """The differing leaves of two JSON values, as `path: python | ours` lines. On the wire
    1 and 1.0 differ; with `numeric` (decoded results: JS has one number type) they do not."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            p = f"{path}.{k}" if path else k
            if k not in a:
                out.append(f"{p}: (absent) | {short(b[k])}")
            elif k not in b:
                out.append(f"{p}: {short(a[k])} | (absent)")
            else:
                leaf_diff(a[k], b[k], p, out, limit, numeric)
            if len(out) >= limit:
                break
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items | {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b)):
            leaf_diff(x, y, f"{path}[{i}]", out, limit, numeric)
            if len(out) >= limit:
                break
    elif numeric and isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        if a != b:
            out.append(f"{path}: {short(a)} | {short(b)}")
    elif canon(a) != canon(b):  # 1 and 1.0 differ on the wire, so they differ here
        out.append(f"{path or '(value)'}: {short(a)} | {short(b)}")
    return out


def canon(v) -> str:
    return json.dumps(v, sort_keys=True)


def short(v, n: int = 160) -> str:
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= n else s[: n - 3] + "..."


def diff_sequences(title: str, a: list, b: list, problems: list) -> None:
    """Aligns two lists of (kind, key, payload) by key and reports every difference."""
    import difflib

    ka = [f"{kind} {key}" for kind, key, _ in a]
    kb = [f"{kind} {key}" for kind, key, _ in b]
    sm = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
    lines = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                pa, pb = a[i][2], b[j][2]
                if canon(pa) != canon(pb):
                    lines.append(f"  ~ {ka[i]}")
                    lines.extend(f"      {d}" for d in leaf_diff(pa, pb))
        else:
            lines.extend(f"  - {ka[i]}   (python only)" for i in range(i1, i2))
            lines.extend(f"  + {kb[j]}   (ours only)" for j in range(j1, j2))
    if lines:
        problems.append(f"step {title}:\n" + "\n".join(lines))


def compare(py: Side, ours: Side) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    notes: list[str] = []

    # Steps, in order.
    sa, sb = list(py.segments), list(ours.segments)
    if sa != sb:
        problems.append(f"the two runs have different steps:\n  python: {sa}\n  ours:   {sb}")
    for name in sa:
        if name in ours.segments:
            diff_sequences(name, py.segments[name], ours.segments[name], problems)

    # Polls: per future, the set of distinct poll requests (their number is timing).
    for fut in sorted(set(py.polls) | set(ours.polls)):
        va = {canon(p) for p in py.polls.get(fut, [])}
        vb = {canon(p) for p in ours.polls.get(fut, [])}
        if not va or not vb:
            continue  # already reported as a missing/extra poll line in its step
        if va != vb:
            lines = [f"polls of {fut} differ (distinct poll requests):"]
            lines += [f"  - {v}" for v in sorted(va - vb)]
            lines += [f"  + {v}" for v in sorted(vb - va)]
            problems.append("\n".join(lines))
    # Session pollers: per sampling session, the same kinds of polls, every cursor the server
    # handed out sent back, every fetched sample acknowledged; their number and grouping is timing.
    for target in sorted(set(py.session_polls) | set(ours.session_polls)):
        a, b = py.session_polls.get(target), ours.session_polls.get(target)
        if a is None or b is None:
            problems.append(f"retrieve_futures for {target}: only {'python' if a else 'ours'} polls it")
            continue
        for k, what in (("shapes", "poll bodies (without cursor and acks)"), ("cursors", "prev_cursor values"), ("acked", "acknowledged futures")):
            if a[k] != b[k]:
                problems.append(
                    f"retrieve_futures for {target}: {what} differ:\n"
                    + "".join(f"  - {v}\n" for v in sorted(map(str, a[k] - b[k])))
                    + "".join(f"  + {v}\n" for v in sorted(map(str, b[k] - a[k]))).rstrip()
                )
        notes.append(f"retrieve_futures for {target}: python {a['polls']} polls, ours {b['polls']}")
    ca = Counter(len(v) for v in py.polls.values())
    cb = Counter(len(v) for v in ours.polls.values())
    notes.append(
        f"polls: python {sum(len(v) for v in py.polls.values())} for {len(py.polls)} futures, "
        f"ours {sum(len(v) for v in ours.polls.values())} for {len(ours.polls)} futures "
        f"(polls per future: python {dict(sorted(ca.items()))}, ours {dict(sorted(cb.items()))})"
    )

    # Configuration fetches: the same requests, once per client holder (NOTES.md).
    if set(py.connect) != set(ours.connect):
        problems.append(f"client config requests differ:\n  python: {sorted(set(py.connect))}\n  ours:   {sorted(set(ours.connect))}")
    notes.append(f"client/config + dynamic_config requests: python {len(py.connect)}, ours {len(ours.connect)}")

    # Background: both sides send heartbeats (the drivers wait for one) and they look alike;
    # telemetry must carry the same kinds of events (GENERIC_EVENT by name), counts reported.
    hb = {s.name: {json.dumps(s.norm(e.get("body")), sort_keys=True) for _, e in s.background if e["path"].endswith("session_heartbeat")} for s in (py, ours)}
    for s in (py, ours):
        if not hb[s.name]:
            problems.append(f"session_heartbeat: {s.name} sent none (the driver waits for one)")
    if hb[py.name] and hb[ours.name] and hb[py.name] != hb[ours.name]:
        problems.append(f"session_heartbeat bodies differ: python {sorted(hb[py.name])} ours {sorted(hb[ours.name])}")
    kinds = {}
    for s in (py, ours):
        events = Counter()
        batches = 0
        for _, e in s.background:
            if e["path"].endswith("/telemetry"):
                batches += 1
                for ev in (e.get("body") or {}).get("events", []):
                    k = ev.get("event", "?")
                    events[ev.get("event_name", k) if k == "GENERIC_EVENT" else k] += 1
        kinds[s.name] = set(events)
        n_hb = sum(1 for _, e in s.background if e["path"].endswith("session_heartbeat"))
        notes.append(f"{s.name}: {n_hb} heartbeats, {batches} telemetry batches, events {dict(sorted(events.items()))}")
    for k in sorted(kinds[py.name] ^ kinds[ours.name]):
        who = "python" if k in kinds[py.name] else "ours"
        if k in DELIBERATE_TELEMETRY:
            notes.append(f"telemetry event {k} only {who} sends (deliberate: {DELIBERATE_TELEMETRY[k]})")
        else:
            problems.append(f"telemetry event {k}: only {who} sends it")

    # Header names per route (issue 26): a name only one SDK sends on a route both use fails,
    # unless DELIBERATE_HEADER_NAMES gives the reason; per-route values of the headers that
    # say what the SDK does must be equal.
    deliberate: set = set()
    for r in sorted(set(py.route_headers) & set(ours.route_headers)):
        for h in sorted(py.route_headers[r] ^ ours.route_headers[r]):
            who = "python" if h in py.route_headers[r] else "ours"
            if h in DELIBERATE_HEADER_NAMES:
                continue
            problems.append(f"header {h} on {r}: only {who} sends it")
        for h in ROUTE_VALUE_HEADERS:
            va, vb = py.route_values.get((h, r), set()), ours.route_values.get((h, r), set())
            if va != vb:
                if len(va) == len(vb) == 1 and (h, *va, *vb) in DELIBERATE_ROUTE_VALUES:
                    deliberate.add((h, *va, *vb))
                    continue
                problems.append(f"{h} on {r}: python {sorted(va)} | ours {sorted(vb)}")
    for k in sorted(deliberate):
        notes.append(f"{k[0]}: python {k[1]!r}, ours {k[2]!r}, deliberately: {DELIBERATE_ROUTE_VALUES[k]}")
    used = sorted(h for h in DELIBERATE_HEADER_NAMES if any(h in v for v in py.route_headers.values()) != any(h in v for v in ours.route_headers.values()))
    if used:
        notes.append("header names one side sends, deliberately: " + "; ".join(f"{h}: {DELIBERATE_HEADER_NAMES[h]}" for h in used))

    # x-sdk-method / x-sdk-version: the same values per route. The one known difference
    # comes from the drivers, not the SDKs: Python's driver deletes one checkpoint with
    # RestClient.delete_checkpoint(run, id), which tinker-wasm does not have (only the
    # tinker:// path form), so that request is attributed to different methods.
    soft_diff = []
    routes = sorted({(h, r) for h, r, _ in py.soft} | {(h, r) for h, r, _ in ours.soft})
    for h, r in routes:
        va = sorted({v for (hh, rr, v) in py.soft if (hh, rr) == (h, r)})
        vb = sorted({v for (hh, rr, v) in ours.soft if (hh, rr) == (h, r)})
        if va != vb:
            line = f"  {h} on {r}: python {va} | ours {vb}"
            if (h, va, vb) == DRIVER_METHOD_DIFFERENCE:
                soft_diff.append(line + " (the drivers call different methods)")
            else:
                problems.append(f"{h} header values differ:\n{line}")
    if soft_diff:
        notes.append("header values that differ because the drivers differ:\n" + "\n".join(soft_diff))

    # What the SDKs got back (same requests to the same deterministic server => same answers).
    if py.results is not None and ours.results is not None:
        ra, rb = py.norm(py.results), ours.norm(ours.results)
        for k in sorted(set(ra) | set(rb)):
            if k not in ra or k not in rb:
                problems.append(f"result {k}: only {'python' if k in ra else 'ours'} has it")
            else:
                va, vb = copy.deepcopy(ra[k]), copy.deepcopy(rb[k])
                for step, field, metric in CLIENT_COMPUTED:
                    if step == k and isinstance(va, dict) and isinstance(vb, dict):
                        x, y = va.get(field, {}).pop(metric, None), vb.get(field, {}).pop(metric, None)
                        if x is None or y is None or abs(x - y) > 1e-6 * max(1.0, abs(x)):
                            problems.append(f"result {k}.{field}.{metric}: {x} | {y} (beyond the 1e-6 relative tolerance)")
                d = leaf_diff(va, vb, numeric=True)
                if d:
                    problems.append(f"result {k} differs (python | ours):\n" + "\n".join(f"  {x}" for x in d))
    return problems, notes


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    py, ours = Side("python", Path(argv[1])), Side("ours", Path(argv[2]))
    problems, notes = compare(py, ours)
    n_req = sum(1 for s in py.segments.values() for x in s if x[0] == "request")
    print(f"compared {len(py.segments)} steps: {n_req} requests, {len(py.polls)} futures (python log {len(py.entries)} lines, ours {len(ours.entries)})")
    for n in notes:
        print("note: " + n)
    if problems:
        print(f"\nDIFFERENCES ({len(problems)}), '-' python only, '+' ours only, '~' same request with different content (python | ours):\n")
        for p in problems:
            print(p + "\n")
        return 1
    print("the request logs match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
