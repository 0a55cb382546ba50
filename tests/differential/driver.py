#!/usr/bin/env python3
"""Differential scenario, Python side: the official SDK (tinker==0.38.0, unmodified).

    tests/conformance/.venv/bin/python tests/differential/driver.py SIM_URL RESULTS_JSON

Runs the scenario of scenario.json against the simulator at SIM_URL, one step at a time.
Before each step it sends `GET /_sim/health?mark=<step>` (never through the SDK), so the
simulator's request log is cut into steps the comparator can line up with the Node
driver's (driver.mjs, the same steps through tinker-wasm). It writes the results it got
(losses, samples, paths…) to RESULTS_JSON for the comparator's result check.

Keep this file and driver.mjs step for step identical: same steps, same order, same calls.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
import warnings
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["HF_HUB_OFFLINE"] = "1"
for var in ("TINKER_BASE_URL", "TINKER_API_KEY", "TINKER_PROJECT_ID", "TINKER_TAGS"):
    os.environ.pop(var, None)
warnings.simplefilter("ignore")

import tinker  # noqa: E402
from tinker import types  # noqa: E402

import torch  # noqa: E402  (forward_backward_custom needs it; scripts/setup.sh installs it)

S = json.loads((HERE / "scenario.json").read_text())
URL = sys.argv[1]
OUT = Path(sys.argv[2])
RESULTS: dict = {}


def mark(name: str) -> None:
    with urllib.request.urlopen(f"{URL}/_sim/health?mark={name}", timeout=10) as r:
        assert r.status == 200


def await_heartbeats(n: int) -> None:
    """Polls the simulator until it has answered `n` session heartbeats (the SDKs send one
    every 10 s): the `malformed` fault kind only hits heartbeats (faults.py)."""
    deadline = time.monotonic() + 60
    while True:
        with urllib.request.urlopen(f"{URL}/_sim/stats", timeout=10) as r:
            seen = json.load(r)["requests_by_path"].get("POST /api/v1/session_heartbeat", 0)
        if seen >= n:
            return
        assert time.monotonic() < deadline, f"{seen} of {n} heartbeats after 60 s"
        time.sleep(0.2)


def datum(tokens, weights=None, **extra) -> types.Datum:
    inputs: dict = {"target_tokens": tokens[1:]}
    if weights is not None:
        inputs["weights"] = weights
    inputs.update(extra)
    return types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]), loss_fn_inputs=inputs)


def f32(values) -> types.TensorData:
    return types.TensorData(data=values, dtype="float32", shape=[len(values)])


def summary(out: types.ForwardBackwardOutput) -> dict:
    return {
        "metrics": {k: out.metrics[k] for k in sorted(out.metrics)},
        "logprobs": [list(o["logprobs"].data) for o in out.loss_fn_outputs],
    }


def sample_summary(r: types.SampleResponse) -> dict:
    return {
        "sequences": [{"tokens": q.tokens, "logprobs": q.logprobs, "stop_reason": q.stop_reason, "topk_logprobs": q.topk_logprobs} for q in r.sequences],
        "prompt_logprobs": r.prompt_logprobs,
        "topk_prompt_logprobs": r.topk_prompt_logprobs,
    }


def main() -> None:
    svc = S["service"]
    sft = [datum(d["tokens"], d["weights"]) for d in S["sft"]]
    adam = lambda lr: types.AdamParams(learning_rate=lr)  # noqa: E731
    names = S["names"]

    mark("service")
    sc = tinker.ServiceClient(
        user_metadata=svc["user_metadata"], project_id=svc["project_id"], display_name=svc["display_name"],
        base_url=URL, api_key=S["api_key"],
    )
    caps = sc.get_server_capabilities()
    RESULTS["capabilities"] = sorted(m.model_name for m in caps.supported_models)

    mark("create_lora")
    lora = S["lora"]
    tc = sc.create_lora_training_client(S["base_model"], rank=lora["rank"], seed=lora["seed"], user_metadata=lora["user_metadata"]).result()
    RESULTS["model_id"] = tc.model_id

    for i in range(S["sft_steps"]):
        mark(f"sft_{i}")
        fb = tc.forward_backward(sft, "cross_entropy")
        op = tc.optim_step(adam(S["sft_lr"]))
        RESULTS[f"sft_{i}"] = summary(fb.result())
        op.result()

    mark("chunked")
    n = S["chunked"]["n"]
    big = [datum([100 + i % 500, 2000 + (i * 7) % 900, 3000 + (i * 13) % 700]) for i in range(n)]
    fb = tc.forward_backward(big, "cross_entropy")
    op = tc.optim_step(adam(0.001))
    out = fb.result()
    op.result()
    RESULTS["chunked"] = {"metrics": out.metrics, "n": len(out.loss_fn_outputs)}

    mark("forward")
    RESULTS["forward"] = summary(tc.forward(sft, "cross_entropy").result())

    mark("ppo")
    p = S["ppo"]
    rl = datum(p["tokens"], None, logprobs=f32(p["logprobs"]), advantages=f32(p["advantages"]))
    fb = tc.forward_backward([rl], "ppo", p["config"])
    op = tc.optim_step(types.AdamParams(**S["adam_full"]))
    RESULTS["ppo"] = summary(fb.result())
    op.result()

    mark("custom")
    coef = S["custom"]["coefficients"]

    def linear_loss(data, logprobs_list):
        loss = sum(-(c * lp).sum() for c, lp in zip(coef, logprobs_list))
        return loss, {"custom:sum": float(loss.detach())}

    fb = tc.forward_backward_custom(sft, linear_loss)
    op = tc.optim_step(adam(S["sft_lr"]))
    RESULTS["custom"] = summary(fb.result())
    op.result()

    mark("save_state")
    p_state = tc.save_state(names["state"], ttl_seconds=names["state_ttl"], user_metadata={"k": "v"}).result().path
    RESULTS["p_state"] = p_state

    mark("from_state_with_optimizer")
    resumed = sc.create_training_client_from_state_with_optimizer(p_state).result()

    mark("resumed_step")
    fb = resumed.forward_backward(sft, "cross_entropy")
    op = resumed.optim_step(adam(S["sft_lr"]))
    RESULTS["resumed_step"] = summary(fb.result())
    op.result()

    mark("from_state")
    weights_only = sc.create_training_client_from_state(p_state, user_metadata={"from": "state"}).result()

    mark("load_state")
    weights_only.load_state(p_state).result()

    mark("load_state_with_optimizer")
    weights_only.load_state_with_optimizer(p_state).result()

    mark("save_sampler")
    p_samp = tc.save_weights_for_sampler(names["sampler"], ttl_seconds=3600).result().path
    RESULTS["p_samp"] = p_samp

    mark("sampling_client")
    s = sc.create_sampling_client(model_path=p_samp).result()

    mark("training_sampling_client")
    s_tc = tc.create_sampling_client(p_samp).result()

    prompt = types.ModelInput.from_ints(S["prompt"])
    for i, spec in enumerate(S["samples"]):
        mark(f"sample_{i}")
        kw = {k: spec[k] for k in ("include_prompt_logprobs", "topk_prompt_logprobs", "topk_sample_logprobs", "prompt_logprobs_last_n") if k in spec}
        r = s.sample(prompt, spec["num_samples"], types.SamplingParams(**spec["params"]), **kw).result()
        RESULTS[f"sample_{i}"] = sample_summary(r)

    mark("sample_from_training_sampling_client")
    RESULTS["sample_tc"] = sample_summary(s_tc.sample(prompt, 1, types.SamplingParams(max_tokens=4, seed=5)).result())

    mark("compute_logprobs")
    RESULTS["compute_logprobs"] = s.compute_logprobs(types.ModelInput.from_ints(S["logprobs_prompt"])).result()

    mark("save_weights_and_get_sampling_client")
    s2 = tc.save_weights_and_get_sampling_client().result()

    mark("sample_after_save")
    RESULTS["sample_after_save"] = sample_summary(s2.sample(prompt, 2, types.SamplingParams(max_tokens=5, seed=21)).result())

    mark("base_sampling_client")
    base = sc.create_sampling_client(base_model=S["base_model"]).result()

    mark("sample_base")
    RESULTS["sample_base"] = sample_summary(base.sample(prompt, 1, types.SamplingParams(max_tokens=5, seed=22)).result())

    mark("save_external")
    p_ext = tc.save_weights_external(names["external"]).result().path

    mark("save_extra")
    p_extra = tc.save_state(names["extra"]).result().path

    # ----- RestClient -----
    mark("rest_client")
    rc = sc.create_rest_client()
    ac = tinker.AdminClient(base_url=URL, api_key=S["api_key"])

    mark("rest_capabilities")
    rc.get_server_capabilities().result()

    mark("list_training_runs_default")
    RESULTS["runs_default"] = len(rc.list_training_runs().result().training_runs)

    for off in (0, 2):
        mark(f"list_training_runs_{off}")
        page = rc.list_training_runs(limit=2, offset=off).result()
        RESULTS[f"runs_{off}"] = [r.training_run_id for r in page.training_runs]

    mark("list_training_runs_accessible")
    rc.list_training_runs(limit=5, offset=0, access_scope="accessible").result()

    mark("get_training_run")
    RESULTS["run"] = rc.get_training_run(tc.model_id).result().training_run_id

    mark("get_training_run_by_tinker_path")
    rc.get_training_run_by_tinker_path(p_state).result()

    mark("list_checkpoints")
    RESULTS["checkpoints"] = sorted(c.checkpoint_id for c in rc.list_checkpoints(tc.model_id).result().checkpoints)

    mark("list_user_checkpoints_default")
    rc.list_user_checkpoints().result()

    for off in (0, 2):
        mark(f"list_user_checkpoints_{off}")
        page = rc.list_user_checkpoints(limit=2, offset=off).result()
        RESULTS[f"user_checkpoints_{off}"] = [c.checkpoint_id for c in page.checkpoints]

    mark("weights_info")
    RESULTS["weights_info"] = rc.get_weights_info_by_tinker_path(p_state).result().lora_rank

    mark("publish")
    rc.publish_checkpoint_from_tinker_path(p_state).result()

    mark("unpublish")
    rc.unpublish_checkpoint_from_tinker_path(p_state).result()

    mark("ttl_set")
    rc.set_checkpoint_ttl_from_tinker_path(p_state, 7200).result()

    mark("ttl_clear")
    rc.set_checkpoint_ttl_from_tinker_path(p_state, None).result()

    mark("external_weights_urls")
    RESULTS["external_files"] = sorted(rc.get_external_weights_urls(p_ext).result().urls)

    mark("rest_copy_weights")
    copied = rc.copy_weights(p_state, destination_project_id=S["copy_project"]).result()

    mark("service_copy_weights")
    sc.copy_weights(p_samp, ttl_seconds=3600).result()

    mark("weights_info_of_copy")
    rc.get_weights_info_by_tinker_path(copied).result()

    mark("delete_from_tinker_path")
    rc.delete_checkpoint_from_tinker_path(p_extra).result()

    mark("delete_checkpoint")
    # RestClient.delete_checkpoint(run, checkpoint_id): tinker-wasm has only the path form,
    # which sends the same request (see NOTES.md).
    rc.delete_checkpoint(tc.model_id, "external_weights/" + names["external"]).result()

    sid = sc.holder.get_session_id()
    mark("list_sessions_default")
    rc.list_sessions().result()

    for off in (0, 1):
        mark(f"list_sessions_{off}")
        rc.list_sessions(limit=1, offset=off).result()

    mark("get_session")
    ses = rc.get_session(sid).result()
    RESULTS["session_runs"] = len(ses.training_run_ids)

    mark("get_sampler")
    RESULTS["sampler_base_model"] = rc.get_sampler(s._sampling_session_id).result().base_model

    mark("assign_session_project")
    rc.assign_session_project(sid, S["assign_project"]).result()

    mark("search_sessions")
    req = types.SessionSearchRequest(limit=1)
    page = rc.search_sessions(req).result()
    assert page.next_cursor is not None, "the scenario needs a second page"

    mark("search_sessions_next")
    rc.search_sessions(req.model_copy(update={"cursor": page.next_cursor})).result()

    mark("search_sessions_filters")
    found = rc.search_sessions(types.SessionSearchRequest(display_name="differential", user_metadata={"suite": "differential"}, project_ids=[S["assign_project"]])).result()
    RESULTS["search_found"] = len(found.sessions)

    mark("search_sessions_statuses")
    rc.search_sessions(types.SessionSearchRequest(session_id=sid, statuses=[types.ClientFinishedSessionStatusQuery(reasons=["success"])], limit=5)).result()

    mark("export_session_trace")
    rc.export_session_trace(sid).result()

    mark("audit_log")
    ac.get_audit_log().result()

    mark("audit_log_filtered")
    ac.get_audit_log(event_type="checkpoints", day=date.fromisoformat(S["audit_day"])).result()

    mark("billing_usage")
    ac.get_billing_usage(S["billing"]["starting_on"], S["billing"]["ending_before"]).result()

    mark("storage_usage")
    ac.get_current_checkpoint_storage_usage().result()

    mark("storage_usage_project")
    ac.get_current_checkpoint_storage_usage(project_id=S["copy_project"]).result()

    if os.environ.get("DIFF_HEARTBEATS"):
        mark("heartbeats")
        await_heartbeats(int(os.environ["DIFF_HEARTBEATS"]))

    mark("close")
    sc.close("success").result()

    mark("end")
    OUT.write_text(json.dumps(RESULTS, default=str, sort_keys=True))


if not __debug__:
    # Assertions are this suite's checks: under -O / PYTHONOPTIMIZE they would vanish and
    # every case would pass.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")


if __name__ == "__main__":
    main()
