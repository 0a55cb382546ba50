// Differential scenario, tinker-wasm side: the npm package (pkg/) in Node.
//
//   node tests/differential/driver.mjs SIM_URL RESULTS_JSON
//
// The same steps, in the same order, with the same inputs (scenario.json) as driver.py
// does through the official Python SDK. Before each step it sends
// `GET /_sim/health?mark=<step>` (plain fetch, not through the SDK) so that the
// comparator can cut the simulator's request log into steps. Keep the two drivers step
// for step identical.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tinker from 'tinker-wasm';

for (const v of ['TINKER_BASE_URL', 'TINKER_API_KEY', 'TINKER_PROJECT_ID', 'TINKER_TAGS']) delete process.env[v];

const here = path.dirname(fileURLToPath(import.meta.url));
const S = JSON.parse(readFileSync(path.join(here, 'scenario.json'), 'utf8'));
const [URL, OUT] = process.argv.slice(2);
const RESULTS = {};

async function mark(name) {
  const r = await fetch(`${URL}/_sim/health?mark=${name}`);
  if (r.status !== 200) throw new Error(`mark ${name}: ${r.status}`);
  await r.arrayBuffer();
}

// Polls the simulator until it has answered `n` session heartbeats (the SDKs send one
// every 10 s): the `malformed` fault kind only hits heartbeats (faults.py).
async function awaitHeartbeats(n) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const stats = await (await fetch(`${URL}/_sim/stats`)).json();
    const seen = stats.requests_by_path['POST /api/v1/session_heartbeat'] ?? 0;
    if (seen >= n) return;
    if (Date.now() > deadline) throw new Error(`${seen} of ${n} heartbeats after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const datum = (tokens, weights = null, extra = {}) => ({
  model_input: tokens.slice(0, -1),
  loss_fn_inputs: { target_tokens: tokens.slice(1), ...(weights === null ? {} : { weights }), ...extra },
});
const f32 = (values) => ({ data: values, dtype: 'float32', shape: [values.length] });
const sorted = (o) => Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
const summary = (out) => ({ metrics: sorted(out.metrics), logprobs: out.loss_fn_outputs.map((o) => Array.from(o.logprobs.data)) });
const arr = (x) => (x == null ? null : Array.from(x));
const sampleSummary = (r) => ({
  sequences: r.sequences.map((q) => ({ tokens: arr(q.tokens), logprobs: arr(q.logprobs), stop_reason: q.stop_reason, topk_logprobs: q.topk_logprobs })),
  prompt_logprobs: r.prompt_logprobs,
  topk_prompt_logprobs: r.topk_prompt_logprobs,
});

async function main() {
  const svc = S.service;
  const sft = S.sft.map((d) => datum(d.tokens, d.weights));
  const adam = (lr) => ({ learning_rate: lr });
  const names = S.names;

  await mark('service');
  const sc = new tinker.ServiceClient({ apiKey: S.api_key, baseURL: URL, projectId: svc.project_id, userMetadata: svc.user_metadata, displayName: svc.display_name });
  CLIENT = sc;
  const caps = await sc.getServerCapabilities();
  RESULTS.capabilities = caps.supported_models.map((m) => m.model_name).sort();

  await mark('create_lora');
  const lora = S.lora;
  const tc = await sc.createLoraTrainingClient({ base_model: S.base_model, rank: lora.rank, seed: lora.seed, user_metadata: lora.user_metadata });
  RESULTS.model_id = tc.modelId;

  for (let i = 0; i < S.sft_steps; i++) {
    await mark(`sft_${i}`);
    const fb = tc.forwardBackward(sft, 'cross_entropy');
    const op = handled(tc.optimStep(adam(S.sft_lr)));
    RESULTS[`sft_${i}`] = summary(await fb);
    await op;
  }

  await mark('chunked');
  const big = Array.from({ length: S.chunked.n }, (_, i) => datum([100 + (i % 500), 2000 + ((i * 7) % 900), 3000 + ((i * 13) % 700)]));
  {
    const fb = tc.forwardBackward(big, 'cross_entropy');
    const op = handled(tc.optimStep(adam(0.001)));
    const out = await fb;
    await op;
    RESULTS.chunked = { metrics: out.metrics, n: out.loss_fn_outputs.length };
  }

  await mark('forward');
  RESULTS.forward = summary(await tc.forward(sft, 'cross_entropy'));

  await mark('ppo');
  {
    const p = S.ppo;
    const rl = datum(p.tokens, null, { logprobs: f32(p.logprobs), advantages: f32(p.advantages) });
    const fb = tc.forwardBackward([rl], 'ppo', { loss_fn_config: p.config });
    const op = handled(tc.optimStep(S.adam_full));
    RESULTS.ppo = summary(await fb);
    await op;
  }

  await mark('custom');
  {
    const coef = S.custom.coefficients;
    const linearLoss = (data, logprobs) => {
      let loss = 0;
      logprobs.forEach((lp, i) => lp.forEach((x) => (loss -= coef[i] * x)));
      return { loss, gradients: logprobs.map((lp, i) => new Float32Array(lp.length).fill(-coef[i])), metrics: { 'custom:sum': loss } };
    };
    const fb = tc.forwardBackwardCustom(sft, linearLoss);
    const op = handled(tc.optimStep(adam(S.sft_lr)));
    RESULTS.custom = summary(await fb);
    await op;
  }

  await mark('save_state');
  const pState = (await tc.saveState(names.state, { ttl_seconds: names.state_ttl, user_metadata: { k: 'v' } })).path;
  RESULTS.p_state = pState;

  await mark('from_state_with_optimizer');
  const resumed = await sc.createTrainingClientFromStateWithOptimizer(pState);

  await mark('resumed_step');
  {
    const fb = resumed.forwardBackward(sft, 'cross_entropy');
    const op = handled(resumed.optimStep(adam(S.sft_lr)));
    RESULTS.resumed_step = summary(await fb);
    await op;
  }

  await mark('from_state');
  const weightsOnly = await sc.createTrainingClientFromState(pState, { user_metadata: { from: 'state' } });

  await mark('load_state');
  await weightsOnly.loadState(pState);

  await mark('load_state_with_optimizer');
  await weightsOnly.loadStateWithOptimizer(pState);

  await mark('save_sampler');
  const pSamp = (await tc.saveWeightsForSampler(names.sampler, { ttl_seconds: 3600 })).path;
  RESULTS.p_samp = pSamp;

  await mark('sampling_client');
  const s = await sc.createSamplingClient({ model_path: pSamp });

  await mark('training_sampling_client');
  const sTc = await tc.createSamplingClient(pSamp);

  const prompt = tinker.ModelInput.fromInts(S.prompt);
  for (const [i, spec] of S.samples.entries()) {
    await mark(`sample_${i}`);
    const r = await s.sample({
      prompt,
      num_samples: spec.num_samples,
      sampling_params: spec.params,
      ...(spec.include_prompt_logprobs !== undefined && { include_prompt_logprobs: spec.include_prompt_logprobs }),
      ...(spec.topk_prompt_logprobs !== undefined && { topk_prompt_logprobs: spec.topk_prompt_logprobs }),
      ...(spec.topk_sample_logprobs !== undefined && { topk_sample_logprobs: spec.topk_sample_logprobs }),
      ...(spec.prompt_logprobs_last_n !== undefined && { prompt_logprobs_last_n: spec.prompt_logprobs_last_n }),
    });
    RESULTS[`sample_${i}`] = sampleSummary(r);
  }

  await mark('sample_from_training_sampling_client');
  RESULTS.sample_tc = sampleSummary(await sTc.sample({ prompt, num_samples: 1, sampling_params: { max_tokens: 4, seed: 5 } }));

  await mark('compute_logprobs');
  RESULTS.compute_logprobs = await s.computeLogprobs(tinker.ModelInput.fromInts(S.logprobs_prompt));

  await mark('save_weights_and_get_sampling_client');
  const s2 = await tc.saveWeightsAndGetSamplingClient();

  await mark('sample_after_save');
  RESULTS.sample_after_save = sampleSummary(await s2.sample({ prompt, num_samples: 2, sampling_params: { max_tokens: 5, seed: 21 } }));

  await mark('base_sampling_client');
  const base = await sc.createSamplingClient({ base_model: S.base_model });

  await mark('sample_base');
  RESULTS.sample_base = sampleSummary(await base.sample({ prompt, num_samples: 1, sampling_params: { max_tokens: 5, seed: 22 } }));

  await mark('save_external');
  const pExt = (await tc.saveWeightsExternal(names.external)).path;

  await mark('save_extra');
  const pExtra = (await tc.saveState(names.extra)).path;

  // ----- RestClient (Python: RestClient + AdminClient) -----
  await mark('rest_client');
  const rc = sc.restClient();

  await mark('rest_capabilities');
  await rc.getServerCapabilities();

  await mark('list_training_runs_default');
  RESULTS.runs_default = (await rc.listTrainingRunsPage()).items.length;

  for (const off of [0, 2]) {
    await mark(`list_training_runs_${off}`);
    const page = await rc.listTrainingRunsPage({ limit: 2, offset: off });
    RESULTS[`runs_${off}`] = page.items.map((r) => r.training_run_id);
  }

  await mark('list_training_runs_accessible');
  await rc.listTrainingRunsPage({ limit: 5, offset: 0, access_scope: 'accessible' });

  await mark('get_training_run');
  RESULTS.run = (await rc.getTrainingRun(tc.modelId)).training_run_id;

  await mark('get_training_run_by_tinker_path');
  await rc.getTrainingRunByTinkerPath(pState);

  await mark('list_checkpoints');
  RESULTS.checkpoints = (await rc.listCheckpoints(tc.modelId)).checkpoints.map((c) => c.checkpoint_id).sort();

  await mark('list_user_checkpoints_default');
  await rc.listUserCheckpointsPage();

  for (const off of [0, 2]) {
    await mark(`list_user_checkpoints_${off}`);
    const page = await rc.listUserCheckpointsPage({ limit: 2, offset: off });
    RESULTS[`user_checkpoints_${off}`] = page.items.map((c) => c.checkpoint_id);
  }

  await mark('weights_info');
  RESULTS.weights_info = (await rc.getWeightsInfoByTinkerPath(pState)).lora_rank;

  await mark('publish');
  await rc.publishCheckpointFromTinkerPath(pState);

  await mark('unpublish');
  await rc.unpublishCheckpointFromTinkerPath(pState);

  await mark('ttl_set');
  await rc.setCheckpointTtlFromTinkerPath(pState, { ttl_seconds: 7200 });

  await mark('ttl_clear');
  await rc.setCheckpointTtlFromTinkerPath(pState, { ttl_seconds: null });

  await mark('external_weights_urls');
  RESULTS.external_files = Object.keys((await rc.getExternalWeightsUrls(pExt)).urls).sort();

  await mark('rest_copy_weights');
  const copied = await rc.copyWeights(pState, { destination_project_id: S.copy_project });

  await mark('service_copy_weights');
  await sc.copyWeights(pSamp, { ttl_seconds: 3600 });

  await mark('weights_info_of_copy');
  await rc.getWeightsInfoByTinkerPath(copied);

  await mark('delete_from_tinker_path');
  await rc.deleteCheckpointFromTinkerPath(pExtra);

  await mark('delete_checkpoint');
  // Python: RestClient.delete_checkpoint(run, checkpoint_id); ours has only the path form,
  // which sends the same request (see NOTES.md).
  await rc.deleteCheckpointFromTinkerPath(`tinker://${tc.modelId}/external_weights/${names.external}`);

  const sid = sc.sessionState().sessionId;
  await mark('list_sessions_default');
  await rc.listSessionsPage();

  for (const off of [0, 1]) {
    await mark(`list_sessions_${off}`);
    await rc.listSessionsPage({ limit: 1, offset: off });
  }

  await mark('get_session');
  RESULTS.session_runs = (await rc.getSession(sid)).training_run_ids.length;

  await mark('get_sampler');
  RESULTS.sampler_base_model = (await rc.getSampler(s.samplingSessionId)).base_model;

  await mark('assign_session_project');
  await rc.assignSessionProject(sid, { project_id: S.assign_project });

  await mark('search_sessions');
  const req = { limit: 1 };
  const page = await rc.searchSessionsPage(req);
  if (page.nextCursor == null) throw new Error('the scenario needs a second page');

  await mark('search_sessions_next');
  await rc.searchSessionsPage(req, page.nextCursor);

  await mark('search_sessions_filters');
  const found = await rc.searchSessionsPage({ display_name: 'differential', user_metadata: { suite: 'differential' }, project_ids: [S.assign_project] });
  RESULTS.search_found = found.items.length;

  await mark('search_sessions_statuses');
  await rc.searchSessionsPage({ session_id: sid, statuses: [{ type: 'client_finished', reasons: ['success'] }], limit: 5 });

  await mark('export_session_trace');
  await rc.exportSessionTrace(sid);

  await mark('audit_log');
  await rc.getAuditLog();

  await mark('audit_log_filtered');
  await rc.getAuditLog({ event_type: 'checkpoints', day: S.audit_day });

  await mark('billing_usage');
  await rc.getBillingUsage({ starting_on: S.billing.starting_on, ending_before: S.billing.ending_before });

  await mark('storage_usage');
  await rc.getCurrentCheckpointStorageUsage();

  await mark('storage_usage_project');
  await rc.getCurrentCheckpointStorageUsage({ project_id: S.copy_project });

  if (process.env.DIFF_HEARTBEATS) {
    await mark('heartbeats');
    await awaitHeartbeats(Number(process.env.DIFF_HEARTBEATS));
  }

  await mark('close');
  await sc.close({ status: 'success' });

  await mark('end');
  writeFileSync(OUT, JSON.stringify(RESULTS));
}

// A failed call rejects at once and its telemetry is flushed in the background (Python's
// call waits for that flush): a script that dies at once loses it, so on failure this one
// closes its client first, as a careful program does (tests/differential/NOTES.md).
// Each step sends its optim_step before awaiting its forward_backward, as Python's driver
// does. When the forward_backward fails, the script ends with that error (Python drops the
// other future); the optim_step's promise is marked handled, so that its own rejection
// (ClientClosedError, once the script closes its client on the way out) cannot end the
// process first: under load it did, and the fault suite saw ClientClosedError where Python
// raised the DecodeError's ValueError. Awaiting it still throws.
const handled = (p) => (p.catch(() => {}), p);

let CLIENT;
await main().catch(async (e) => {
  await CLIENT?.close().catch(() => {});
  throw e;
});
