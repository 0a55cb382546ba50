#!/usr/bin/env python3
"""Request deadlines side by side (issue 31, item 2): how long the official Python SDK
0.38.0 and tinker-wasm keep a request whose response trickles or stalls, on each of
Python's transports.

Python sends its API requests through pyqwest unless the server's `client/config` says
`use_pyqwest_transport: false`: one deadline over the whole exchange, the sum of httpx's
read and write timeouts, body included. Without it, httpx's own transport limits each
read. Each side here runs against its own tinker-sim behind a proxy that answers the
first telemetry request (Python's `timeout=5.0`: a 10 s deadline on pyqwest, 5 s per read
on httpx) in one of two ways:

* `stall`: the status line and headers, then nothing;
* `trickle`: the body in pieces 2 s apart, 16 s in all (every read makes progress).

The proxy records when the client gave up (closed the connection) or that it read the
whole answer, and when. Python's figure is the oracle; ours must agree on the outcome and
be within TOLERANCE_S of its time. Sides: Python, ours on Node's default transport
(node:http, which sees the phases), and ours on the global `fetch` (which does not: with
httpx's transport it cannot tell a trickle from a stall, the deliberate difference the
table in NOTES.md states, so it runs the pyqwest cases and the httpx stall only).

    tests/conformance/.venv/bin/python tests/differential/deadlines.py
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import run  # noqa: E402

OUT = ROOT / "target/differential/deadlines"
API_KEY = "tml-deadlines-0000000000000000000000000000000000000000000000000"
TRICKLE_PIECES, TRICKLE_GAP_S = 8, 2.0
TOLERANCE_S = 1.0
# A stall the client has not given up on after this long is "still open" (a hang); the
# telemetry request comes about 10 s after start, so a case waits that much longer.
CASE_LIMIT_S = 60
CASE_WAIT_S = CASE_LIMIT_S + 40

PYTHON = f"""
import sys, time
sys.modules["torch"] = None  # torch is not used here: start without its ~5 s import (tests/cli/tinker-py)
import tinker
sc = tinker.ServiceClient(base_url=sys.argv[1], api_key={API_KEY!r})
sc.create_sampling_client(base_model="Qwen/Qwen3-8B").result()
print("ready", flush=True)
time.sleep({CASE_WAIT_S})
"""
OURS = f"""
import * as tinker from 'tinker-wasm';
const [url, transport] = process.argv.slice(-2);
const options = {{ apiKey: {json.dumps(API_KEY)}, baseURL: url }};
if (transport === 'fetch') options.fetch = globalThis.fetch;
const sc = new tinker.ServiceClient(options);
await sc.createSamplingClient({{ base_model: 'Qwen/Qwen3-8B' }});
console.log('ready');
await new Promise((r) => setTimeout(r, {CASE_WAIT_S * 1000}));
"""


class Proxy(http.server.ThreadingHTTPServer):
    """Forwards to the simulator; answers the first telemetry request as `mode` says and
    records what the client did (`outcome`, `after_s` from the request's arrival)."""

    daemon_threads = True

    def __init__(self, upstream: str, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.upstream = urllib.parse.urlsplit(upstream)
        self.mode = mode
        self.taken = False
        self.record: dict | None = None
        self.decided = threading.Event()
        self.lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:
        # A client killed at the end of its case resets its connections: not news.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Proxy

    def log_message(self, *args) -> None:  # quiet
        pass

    def _forward(self) -> tuple[int, list[tuple[str, str]], bytes]:
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else None
        up = self.server.upstream
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        keep = [(k, v) for k, v in r.getheaders() if k.lower() not in ("content-length", "transfer-encoding", "connection")]
        return r.status, keep, data

    def _handle(self) -> None:
        arrived = time.monotonic()
        status, headers, data = self._forward()
        with self.server.lock:
            special = self.path.endswith("/api/v1/telemetry") and not self.server.taken
            self.server.taken |= special
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if not special:
            self.wfile.write(data)
            return
        self.wfile.flush()
        outcome = self._trickle(data) if self.server.mode == "trickle" else self._stall()
        self.server.record = {"outcome": outcome, "after_s": round(time.monotonic() - arrived, 2)}
        self.server.decided.set()
        self.close_connection = True

    def _closed_within(self, seconds: float) -> bool:
        """Whether the client closes the connection within `seconds`."""
        sock = self.connection
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            readable, _, _ = select.select([sock], [], [], min(left, 0.05))
            if readable:
                try:
                    if sock.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
                time.sleep(0.01)
        return False

    def _stall(self) -> str:
        return "closed" if self._closed_within(CASE_LIMIT_S) else "still open"

    def _trickle(self, data: bytes) -> str:
        size = -(-len(data) // TRICKLE_PIECES)
        for i in range(TRICKLE_PIECES):
            if self._closed_within(TRICKLE_GAP_S):
                return "closed"
            try:
                self.wfile.write(data[i * size:(i + 1) * size])
                self.wfile.flush()
            except OSError:
                return "closed"
        return "read in full"

    do_GET = do_POST = do_PUT = do_DELETE = _handle


def run_case(side: str, transport: str, pyqwest: bool, mode: str) -> dict:
    name = f"{side}-{transport}-{'pyqwest' if pyqwest else 'httpx'}-{mode}"
    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    extra = [] if pyqwest else ["--client-config", json.dumps({"use_pyqwest_transport": False})]
    sim = run.Sim(out / "requests.jsonl", out / "sim.stderr", extra)
    proxy = Proxy(sim.url, mode)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINKER_")}
    if side == "python":
        cmd = [str(run.VENV_PY), "-c", PYTHON, proxy.url]
    else:
        cmd = ["node", "--input-type=module", "-e", OURS, proxy.url, transport]
    log = open(out / "driver.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    try:
        decided = proxy.decided.wait(CASE_WAIT_S)
        record = proxy.record if decided else {"outcome": "no telemetry request", "after_s": None}
    finally:
        proc.kill()
        proc.wait()
        log.close()
        proxy.shutdown()
        sim.stop()
    return {"case": name, **record}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    cases = []
    for pyqwest in (True, False):
        for mode in ("stall", "trickle"):
            sides = [("python", "default"), ("ours", "node"), ("ours", "fetch")]
            if not pyqwest and mode == "trickle":
                sides.remove(("ours", "fetch"))
            cases.append((pyqwest, mode, sides))
    failures = []
    results = {}
    # The cases of one transport at once (they mostly wait).
    for pyqwest in (True, False):
        threads, rows = [], []
        for p, mode, sides in cases:
            if p != pyqwest:
                continue
            for side, transport in sides:
                t = threading.Thread(target=lambda a=(side, transport, p, mode): rows.append(run_case(*a)))
                t.start()
                threads.append(t)
        for t in threads:
            t.join()
        for r in rows:
            results[r["case"]] = r
    for p, mode, sides in cases:
        kind = f"{'pyqwest' if p else 'httpx'}-{mode}"
        oracle = results[f"python-default-{kind}"]
        print(f"{kind}: Python {oracle['outcome']} after {oracle['after_s']} s")
        expected = {("pyqwest", "stall"): ("closed", 10), ("pyqwest", "trickle"): ("closed", 10), ("httpx", "stall"): ("closed", 5), ("httpx", "trickle"): ("read in full", 16)}[tuple(kind.split("-"))]
        if oracle["outcome"] != expected[0] or abs((oracle["after_s"] or 0) - expected[1]) > 2.5:
            failures.append(f"{kind}: Python did not do what its transport should ({oracle}, expected {expected})")
        for side, transport in sides:
            if side == "python":
                continue
            r = results[f"{side}-{transport}-{kind}"]
            ok = r["outcome"] == oracle["outcome"] and r["after_s"] is not None and abs(r["after_s"] - oracle["after_s"]) <= TOLERANCE_S
            print(f"  ours ({transport}): {r['outcome']} after {r['after_s']} s {'ok' if ok else 'DIFFERS'}")
            if not ok:
                failures.append(f"{kind}, ours on {transport}: {r} against Python's {oracle}")
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    for f in failures:
        print(f"not ok: {f}")
    print("deadlines: " + ("every side agrees with Python" if not failures else f"{len(failures)} differences"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
