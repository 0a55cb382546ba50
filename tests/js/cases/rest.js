// The REST surface end to end against tinker-sim, in Node, Chromium and workerd.
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const options = (ctx, extra = {}) => ({ apiKey: 'tml-js-tests', baseURL: ctx.env.SIM_URL, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false, ...extra });

export default {
  async 'concurrent requests settle to their own callers in any order; a fetch that throws synchronously is retried'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx, { projectId: 'proj-js-order' }));
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push((await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: i })).modelId);
    const ids = Array.from({ length: 24 }, (_, i) => (i % 6 < 4 ? runs[i % 6] : `no-such-run-${i}`));
    // Holds every training_runs response until all have arrived, then settles them in
    // reverse order; the very first one throws synchronously instead (a connection error).
    let threw = 0;
    const held = [];
    const holding = (url, init) => {
      if (!/\/training_runs\/[^/]+$/.test(String(url))) return fetch(url, init);
      if (threw++ === 0) throw new TypeError('fetch failed synchronously');
      return new Promise((resolve, reject) => {
        held.push({ p: fetch(url, init), resolve, reject });
        if (held.length === ids.length) {
          Promise.all(held.map((h) => h.p.then((r) => ({ r }), (e) => ({ e })))).then((done) => {
            for (let i = done.length - 1; i >= 0; i--) (done[i].e ? held[i].reject(done[i].e) : held[i].resolve(done[i].r));
          });
        }
      });
    };
    const rest = new tinker.RestClient(options(ctx, { fetch: holding }));
    const results = await Promise.allSettled(ids.map((id) => rest.getTrainingRun(id)));
    assert.equal(held.length, ids.length, 'every call was answered once (one after a retry)');
    results.forEach((r, i) => {
      if (ids[i].startsWith('no-such-run')) {
        assert.ok(r.status === 'rejected' && r.reason instanceof tinker.NotFoundError && r.reason.message.includes(ids[i]), `call ${i}: ${r.reason}`);
      } else {
        assert.equal(r.status, 'fulfilled', `call ${i}: ${r.reason}`);
        assert.equal(r.value.training_run_id, ids[i], `call ${i}`);
      }
    });
    await svc.close();
  },

  async 'lists page across more than two pages, and iterate with for await'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx, { projectId: 'proj-js' }));
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: i })).modelId);
    const rest = svc.restClient();
    let page = await rest.listTrainingRuns({ limit: 2 });
    let pages = 1;
    const seen = [...page.items.map((r) => r.training_run_id)];
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      pages++;
      seen.push(...page.items.map((r) => r.training_run_id));
    }
    assert.ok(pages >= 3, `pages: ${pages}`);
    // A page promise is a thenable: `.then` on it gives the first page.
    const firstIds = await rest.listTrainingRuns({ limit: 2 }).then((p) => p.items.map((r) => r.training_run_id));
    assert.deepEqual(firstIds, seen.slice(0, 2));
    const iterated = [];
    for await (const run of rest.listTrainingRuns({ limit: 2 })) iterated.push(run.training_run_id);
    assert.deepEqual(iterated, seen);
    for (const id of ids) assert.ok(seen.includes(id), id);
    const sessions = [];
    for await (const s of rest.listSessions({ limit: 1 })) sessions.push(s);
    assert.ok(sessions.includes(svc.sessionState().sessionId));
    await svc.close();
  },

  async 'checkpoints: save, list, publish, ttl, info, copy, delete'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx, { projectId: 'proj-js' }));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 1 });
    const rest = svc.restClient();
    const { path } = await tc.saveState('c1');
    const sw = await tc.saveWeightsForSampler('s1');
    const list = await rest.listCheckpoints(tc.modelId);
    const ckptIds = list.checkpoints.map((c) => c.checkpoint_id);
    assert.ok(ckptIds.includes('weights/c1') && ckptIds.includes('sampler_weights/s1'), ckptIds.join());
    await rest.publishCheckpointFromTinkerPath(path);
    await assert.rejects(rest.publishCheckpointFromTinkerPath(path), (e) => e instanceof tinker.ConflictError && e.status === 409);
    const c1 = async () => (await rest.listCheckpoints(tc.modelId)).checkpoints.find((c) => c.checkpoint_id === 'weights/c1');
    assert.equal((await c1()).public, true, 'publish makes it public');
    await rest.unpublishCheckpointFromTinkerPath(path);
    assert.equal((await c1()).public, false, 'unpublish makes it private again');
    await rest.setCheckpointTtlFromTinkerPath(path, { ttl_seconds: 7200 });
    const withTtl = await c1();
    const left = Date.parse(withTtl.expires_at) - Date.now();
    assert.ok(left > 7100_000 && left <= 7200_000, `ttl sets expires_at about 2 h ahead, got ${withTtl.expires_at}`);
    await rest.setCheckpointTtlFromTinkerPath(path, { ttl_seconds: null });
    assert.equal((await c1()).expires_at, null, 'a null ttl clears expires_at');
    assert.equal((await rest.getWeightsInfoByTinkerPath(path)).base_model, 'Qwen/Qwen3-8B');
    const run = await rest.getTrainingRunByTinkerPath(path);
    assert.equal(run.training_run_id, tc.modelId);
    const copy = await svc.copyWeights(sw.path);
    assert.match(copy, /^tinker:\/\/.+\/sampler_weights\//);
    const elsewhere = await rest.copyWeights(sw.path, { destination_project_id: 'proj-archive' });
    assert.match(elsewhere, /^tinker:\/\/.+\/sampler_weights\//);
    assert.notEqual(elsewhere, copy, 'each copy is a checkpoint of its own');
    await rest.deleteCheckpointFromTinkerPath(path);
    await assert.rejects(rest.deleteCheckpointFromTinkerPath(path), (e) => e instanceof tinker.NotFoundError && e.status === 404 && typeof e.headers === 'object');
    const mine = [];
    for await (const c of rest.listUserCheckpoints({ limit: 1 })) mine.push(c.tinker_path);
    assert.ok(mine.includes(sw.path) && !mine.includes(path));
    const caps = await rest.getServerCapabilities();
    assert.ok(caps.supported_models.some((m) => m.model_name === 'Qwen/Qwen3-8B'));
    const sampler = await tc.saveWeightsAndGetSamplingClient();
    assert.equal((await rest.getSampler(sampler.samplingSessionId)).base_model, 'Qwen/Qwen3-8B');
    const session = await rest.getSession(svc.sessionState().sessionId);
    assert.ok(session.training_run_ids.includes(tc.modelId));
    await svc.close();
  },

  async 'an exported checkpoint downloads with progress, and aborts'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 2 });
    const exported = await tc.saveWeightsExternal('export1');
    assert.match(exported.path, /\/external_weights\/export1$/);
    const rest = svc.restClient();
    const events = [];
    // A fetch whose bodies arrive in 16 KiB pieces, whatever the runtime buffered: progress
    // must come once per piece the stream delivers.
    const PIECE = 16 * 1024;
    let pieces = 0;
    const piecewise = async (url, init) => {
      const response = await fetch(url, init);
      const reader = response.body.getReader();
      let held = new Uint8Array(0);
      const body = new ReadableStream({
        async pull(controller) {
          while (held.byteLength === 0) {
            const { done, value } = await reader.read();
            if (done) return controller.close();
            held = value;
          }
          controller.enqueue(held.slice(0, PIECE));
          held = held.subarray(PIECE);
          pieces++;
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const { files, bytes } = await rest.downloadCheckpoint(exported.path, { on_progress: (p) => events.push(p) }, { fetch: piecewise });
    assert.ok(files.length >= 2, files.map((f) => f.path).join());
    assert.ok(bytes > 100_000, `bytes: ${bytes}`);
    assert.equal(files.reduce((a, f) => a + f.bytes, 0), bytes);
    assert.ok(pieces >= Math.ceil(bytes / PIECE), `pieces: ${pieces}`);
    assert.equal(events.length, pieces, 'progress arrives per chunk');
    for (let i = 1; i < events.length; i++) assert.ok(events[i].bytes > events[i - 1].bytes);
    assert.equal(events.at(-1).bytes, bytes);
    const config = files.find((f) => f.path.endsWith('.json'));
    assert.ok(config.blob instanceof Blob);
    const adapter = JSON.parse(await config.blob.text());
    assert.equal(adapter.peft_type, 'LORA');
    assert.equal(adapter.r, 8, 'the exported adapter is the rank-8 run');
    assert.equal(adapter.base_model_name_or_path, 'Qwen/Qwen3-8B');
    // Streaming access, file by file.
    let streamed = 0;
    for await (const f of rest.openCheckpointFiles(exported.path)) {
      const reader = f.stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        streamed += value.byteLength;
      }
    }
    assert.equal(streamed, bytes);
    if (ctx.node) {
      // In Node, stream to a directory.
      const { fs, os, path } = ctx.node;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tinker-dl-'));
      try {
        const onDisk = await rest.downloadCheckpoint(exported.path, { directory: dir });
        for (const f of onDisk.files) assert.equal(fs.statSync(f.localPath).size, f.bytes);
        assert.equal(onDisk.bytes, bytes);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    } else {
      await assert.rejects(rest.downloadCheckpoint(exported.path, { directory: '/tmp/x' }), (e) => e instanceof TypeError && e.field === 'directory');
    }
    // Abort after the first chunk.
    const ac = new AbortController();
    await assert.rejects(rest.downloadCheckpoint(exported.path, { on_progress: () => ac.abort() }, { signal: ac.signal }), tinker.APIUserAbortError);
    await assert.rejects(rest.downloadCheckpoint('tinker://run/weights/x'), (e) => e instanceof TypeError && e.field === 'path');
    // Its parameters and options as declared (pkg/params.js): a misspelt key or a wrong type is refused.
    await assert.rejects(rest.downloadCheckpoint(exported.path, { dir: '/tmp/x' }), (e) => e instanceof TypeError && e.field === 'dir' && /expected one of: directory, on_progress/.test(e.message));
    await assert.rejects(rest.downloadCheckpoint(exported.path, { on_progress: true }), (e) => e instanceof TypeError && e.field === 'on_progress');
    await assert.rejects(rest.downloadCheckpoint(exported.path, {}, { signal: 'x' }), (e) => e instanceof TypeError && e.field === 'signal');
    assert.throws(() => rest.openCheckpointFiles(exported.path, { timeout: 5 }), (e) => e instanceof TypeError && e.field === 'timeout');
    await svc.close();
  },

  async 'AdminClient: billing usage, checkpoint storage and the audit log; bad input is refused before sending'(ctx) {
    const svc = new tinker.ServiceClient(options(ctx, { projectId: 'proj-js-admin' }));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 7 });
    await tc.forwardBackward([tinker.datumFromTokens([5, 6, 7, 8], { prompt_length: 2 })], 'cross_entropy');
    const { path } = await tc.saveState('admin-js');
    let sent = 0;
    const counting = (url, init) => (sent++, fetch(url, init));
    const admin = new tinker.AdminClient(options(ctx, { fetch: counting }));
    assert.ok(admin instanceof tinker.AdminClient);

    const all = await admin.getAuditLog();
    assert.ok(all.entries.some((e) => e.event === 'checkpoint_created' && e.tinker_path === path), JSON.stringify(all.entries.slice(-3)));
    assert.ok(all.entries.every((e) => typeof e.timestamp === 'string' && typeof e.event === 'string'));
    // A Date means its UTC day; only checkpoint events with eventType 'checkpoints'.
    const today = await admin.getAuditLog({ event_type: 'checkpoints', day: new Date() });
    assert.ok(today.entries.length > 0 && today.entries.every((e) => e.event.startsWith('checkpoint_')));
    assert.deepEqual((await admin.getAuditLog({ day: '2000-01-15' })).entries, []);

    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
    const usage = await admin.getBillingUsage({ starting_on: new Date(hour.getTime() - 3_600_000), ending_before: new Date(hour.getTime() + 3_600_000).toISOString() });
    const kinds = new Set(usage.data.map((e) => e.event_info.type));
    assert.ok(kinds.has('training') && kinds.has('checkpoint'), [...kinds].join());
    assert.ok(usage.data.every((e) => typeof e.bucket_start === 'string'));
    const storage = await admin.getCurrentCheckpointStorageUsage();
    assert.ok(Array.isArray(storage.data) && storage.data.some((d) => d.checkpoint_count >= 1), JSON.stringify(storage));
    // Same answers as the RestClient's admin methods (kept, as in Python).
    assert.deepEqual(await svc.restClient().getAuditLog({ day: '2000-01-15' }), { entries: [] });

    const before = sent;
    await assert.rejects(admin.getAuditLog({ day: '2026-1-5' }), (e) => e instanceof RangeError && e.field === 'day' && e.message.includes('2026-1-5'));
    await assert.rejects(admin.getAuditLog({ day: 20260105 }), (e) => e instanceof TypeError && e.field === 'day');
    await assert.rejects(admin.getAuditLog({ event_type: 'users' }), (e) => e instanceof RangeError && e.field === 'event_type');
    await assert.rejects(admin.getAuditLog({ days: 1 }), (e) => e instanceof TypeError && e.message.includes('days'));
    await assert.rejects(admin.getBillingUsage({ starting_on: 3, ending_before: hour }), (e) => e instanceof TypeError && e.field === 'starting_on');
    assert.equal(sent, before, 'bad input sends nothing');
    await assert.rejects(admin.getBillingUsage({ starting_on: '2026-01-01T00:30:00Z', ending_before: '2026-01-01T02:00:00Z' }), (e) => e instanceof tinker.BadRequestError);
    await admin.close();
    await svc.close();
  },
  async 'request options per call: signal, timeout, maxRetries and headers go on that call\'s own requests only'(ctx) {
    // A fetch that records each request's path and headers, answers 500 to any request
    // carrying `x-fail`, and 500 to the first request carrying a new `x-fail-once` value.
    const log = [];
    const failedOnce = new Set();
    let abortOnArrival = null; // an AbortController the next request carrying `x-abort` aborts
    const recording = (url, init) => {
      const headers = new Headers(init?.headers);
      log.push({ path: new URL(String(url)).pathname, headers });
      if (headers.get('x-abort')) abortOnArrival?.abort();
      const once = headers.get('x-fail-once');
      const fail = headers.get('x-fail') || (once && !failedOnce.has(once) && failedOnce.add(once));
      if (fail) return Promise.resolve(new Response('{"detail":"injected"}', { status: 500, headers: { 'content-type': 'application/json' } }));
      return fetch(url, init);
    };
    const svc = new tinker.ServiceClient(options(ctx, { fetch: recording, defaultHeaders: { 'x-team': 'blue' } }));
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 1 });
    const rest = svc.restClient();
    await rest.getServerCapabilities(); // connected: later calls send only their own requests
    const since = () => { const n = log.length; return () => log.slice(n); };

    // headers: on the call's request, after the client's; not on the next call.
    let sent = since();
    const run = await rest.getTrainingRun(tc.modelId, {}, { headers: { 'x-trace': 'call-1' } });
    assert.equal(run.training_run_id, tc.modelId);
    let mine = sent();
    assert.equal(mine.length, 1, mine.map((r) => r.path).join());
    assert.equal(mine[0].headers.get('x-trace'), 'call-1');
    assert.equal(mine[0].headers.get('x-team'), 'blue');
    sent = since();
    await rest.getTrainingRun(tc.modelId);
    assert.equal(sent()[0].headers.get('x-trace'), null);

    // A training call: the header is on its submission, not on the shared result polls.
    sent = since();
    await tc.optimStep({ learning_rate: 1e-4 }, { headers: { 'x-trace': 'step-1' } });
    mine = sent();
    const submit = mine.filter((r) => r.path.endsWith('/optim_step'));
    assert.equal(submit.length, 1, mine.map((r) => r.path).join());
    assert.equal(submit[0].headers.get('x-trace'), 'step-1');
    const polls = mine.filter((r) => r.path.includes('retrieve_future'));
    assert.ok(polls.length >= 1 && polls.every((r) => r.headers.get('x-trace') === null), mine.map((r) => r.path).join());

    // A sample: on its asample submission.
    const sc = await tc.saveWeightsAndGetSamplingClient();
    sent = since();
    await sc.sample({ prompt: { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] }, num_samples: 1, sampling_params: { max_tokens: 2 } }, { headers: { 'x-trace': 'sample-1' } });
    assert.equal(sent().filter((r) => r.path.endsWith('/asample'))[0]?.headers.get('x-trace'), 'sample-1');

    // maxRetries: the HTTP-layer retries of this call (x-stainless-retry-count counts them).
    // A 500 once: with maxRetries 1 the HTTP layer resends it (count 1); with 0 it gives up
    // and the 300 s holder window (Python's, unchanged) sends it anew (count 0 again).
    for (const [maxRetries, counts] of [[1, ['0', '1']], [0, ['0', '0']]]) {
      sent = since();
      const r = await rest.getTrainingRun(tc.modelId, {}, { maxRetries, headers: { 'x-fail-once': `m${maxRetries}` } });
      assert.equal(r.training_run_id, tc.modelId);
      assert.deepEqual(sent().map((q) => q.headers.get('x-stainless-retry-count')), counts, `maxRetries ${maxRetries}`);
    }
    // signal: an aborted signal sends nothing; an abort in flight rejects the call.
    sent = since();
    await assert.rejects(rest.getTrainingRun(tc.modelId, {}, { signal: AbortSignal.abort() }), (e) => e instanceof tinker.APIUserAbortError);
    assert.equal(sent().length, 0);
    // In flight: the request reaches the (recording) fetch, which aborts the call's signal.
    const ac = new AbortController();
    abortOnArrival = ac;
    sent = since();
    const inFlight = rest.getTrainingRun(tc.modelId, {}, { signal: ac.signal, maxRetries: 100, headers: { 'x-fail': '1', 'x-abort': '1' } });
    await assert.rejects(inFlight, (e) => e instanceof tinker.APIUserAbortError);
    assert.equal(sent().length, 1, 'the call was aborted with its request in flight, and not resent');
    // timeout: a call still retrying after 300 ms rejects with APITimeoutError.
    await assert.rejects(rest.getTrainingRun(tc.modelId, {}, { timeout: 300, maxRetries: 100, headers: { 'x-fail': '1' } }), (e) => e instanceof tinker.APITimeoutError);
    // The list iterators pass them on to every page.
    sent = since();
    const page = await rest.listTrainingRuns({ limit: 1 }, { headers: { 'x-trace': 'list' } });
    assert.equal(page.items.length, 1);
    assert.equal(sent()[0].headers.get('x-trace'), 'list');

    // Bad options: an error naming the field and value; nothing sent.
    sent = since();
    await assert.rejects(rest.getTrainingRun(tc.modelId, {}, { maxRetries: 101 }), (e) => e instanceof RangeError && e.field === 'maxRetries' && e.message.includes('101'));
    await assert.rejects(rest.getTrainingRun(tc.modelId, {}, { maxRetries: -1 }), (e) => e instanceof RangeError && e.field === 'maxRetries');
    await assert.rejects(rest.getTrainingRun(tc.modelId, {}, { headers: { 'x bad': '1' } }), (e) => e instanceof TypeError && e.field === 'headers.x bad');
    await assert.rejects(rest.getTrainingRun(tc.modelId, {}, { headers: { 'x-ok': 'a\nb' } }), (e) => e instanceof TypeError && e.field === 'headers.x-ok');
    await assert.rejects(tc.optimStep({ learning_rate: 1e-4 }, { retries: 1 }), (e) => e instanceof TypeError && e.field === 'retries' && e.message.includes('maxRetries'));
    assert.equal(sent().length, 0, 'bad options send nothing');
    await svc.close();
  },
};
