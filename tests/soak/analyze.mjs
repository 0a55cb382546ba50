// Checks a tinker-sim request log (`--request-log`, one JSON line per request) against the
// SDK's retry policy (crates/core/src/client/retry.rs, crates/core/src/client/future.rs, crates/core/src/client/sampling.rs, the Python SDK 0.38's):
//
//   HTTP layer     per X-Idempotency-Key: x-stainless-retry-count 0, 1, 2, … with no gap or
//                  repeat; at most maxRetries retries (0 for the calls that set retries(0));
//                  a retry only after a retryable outcome (no response, 408/409/429/5xx);
//                  never after a delivered 2xx; waits at least Retry-After / retry-after-ms,
//                  else 0.75 · min(0.5 · 2ⁿ, 10) s.
//   holder layer   per logical submission (training: model_id + seq_id; sampling: sampling
//                  session + seq_id): a new idempotency key only after the previous one
//                  ended in a retryable failure, at least min(2ᵏ, 30) s later (training), or
//                  at least 1 s later (asample: 429 backpressure and the holder retry alike);
//                  within the 300 s window.
//   polling        per future: X-Tinker-Request-Iteration 0, 1, 2, … without gaps; after a
//                  429 or no response, at least min(2ᶜ, 30) s before the next poll; a 410 is
//                  the last poll; every polled future is polled until it answers (200) or
//                  expires (410).
//   sampling       one sample() call = one (session, body without seq_id); it submits a new
//                  seq_id only after a 410, so new seq ids = expired sampling futures,
//                  exactly; and waits at least 0.75 · 0.5 s before resubmitting.
import { readFileSync } from 'node:fs';

const TOL_S = 0.005; // timestamps are µs; tolerate clock granularity only

// Calls made with retries(0) (HTTP layer): polls, heartbeats, config refresh, asample,
// cancels, and the three saves (as the Python SDK).
const ZERO_RETRY = new Set([
  '/api/v1/retrieve_future',
  '/api/v1/retrieve_futures',
  '/api/v1/asample',
  '/api/v1/session_heartbeat',
  '/api/v1/client/dynamic_config',
  '/api/v1/cancel_future',
  '/api/v1/save_weights',
  '/api/v1/save_weights_for_sampler',
  '/api/v1/save_weights_external',
]);
const TRAINING_SUBMITS = new Set(['/api/v1/forward_backward', '/api/v1/forward', '/api/v1/optim_step', '/api/v1/save_weights', '/api/v1/save_weights_for_sampler', '/api/v1/save_weights_external', '/api/v1/load_weights']);

function parseTs(s) {
  // 2026-01-01T00:00:00.123456Z, to the microsecond (Date.parse stops at ms).
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(s);
  if (!m) throw new Error(`bad ts ${s}`);
  return Date.parse(`${m[1]}Z`) / 1000 + (m[2] ? Number(`0.${m[2]}`) : 0);
}

export function readLog(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line, i) => {
      const e = JSON.parse(line);
      e.i = i;
      e.end = parseTs(e.ts);
      e.start = e.end - e.duration_ms / 1000;
      e.retry = Number(e.headers?.['x-stainless-retry-count'] ?? 0);
      return e;
    });
}

/** Whether the client saw a retryable outcome (it got no response, or 408/409/429/5xx). */
const retryable = (e) => e.status === 0 || e.fault === 'lost' || [408, 409, 429].includes(e.status) || e.status >= 500;
const delivered2xx = (e) => e.status >= 200 && e.status < 300 && e.fault !== 'lost';

/** The HTTP layer's shortest wait after attempt `e` (retry count `e.retry`), from the fault spec. */
function minHttpDelay(e, params) {
  if (e.fault === '429') return params['429'] ?? 1;
  if (e.fault === '429ms') return (params['429ms'] ?? 100) / 1000;
  // An HTTP date of whole seconds, now + PARAM + 1 rounded down: more than PARAM s ahead.
  if (e.fault === '429date') return params['429date'] ?? 1;
  return 0.75 * Math.min(0.5 * 2 ** e.retry, 10);
}

function faultParams(spec) {
  const p = {};
  for (const item of (spec ?? '').split(',')) {
    const [kind, , param] = item.split('@')[0].split(':');
    if (param !== undefined && p[kind] === undefined) p[kind] = Number(param);
  }
  return p;
}

function groupBy(list, key) {
  const m = new Map();
  for (const e of list) {
    const k = key(e);
    if (k === undefined) continue;
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(e);
  }
  // Log order, not computed start times: a request's line is written before its response
  // is sent, so a client's next attempt (sent after that response) always comes later,
  // while start times derived from durations can be off by a fraction of a millisecond.
  for (const g of m.values()) g.sort((a, b) => a.i - b.i);
  return m;
}

export function analyzeLog(entries, { maxRetries = 10, sampleCalls, faults } = {}) {
  const params = faultParams(faults);
  const problems = [];
  const P = (m) => problems.length < 200 && problems.push(m);
  const api = entries.filter((e) => e.path.startsWith('/api/'));
  const fig = { apiRequests: api.length, faultedRequests: api.filter((e) => e.fault).length, httpRetries: 0, maxHttpRetries: 0, holderRetries: 0, maxHolderRetries: 0, polls: 0, maxPollsPerFuture: 0, sampleResubmissions: 0, expiredSampleFutures: 0, idempotencyKeys: 0, minGapRatio: null };
  const gap = (prev, next, min, what) => {
    const g = next.start - prev.end;
    if (g < min - TOL_S) P(`${what}: waited ${g.toFixed(3)} s after ${prev.status}${prev.fault ? ` (${prev.fault})` : ''}, policy says ≥ ${min.toFixed(3)} s`);
    if (min > 0) fig.minGapRatio = Math.min(fig.minGapRatio ?? Infinity, g / min);
  };

  // HTTP layer, per idempotency key.
  const byKey = groupBy(
    api.filter((e) => e.method !== 'GET'),
    (e) => e.headers?.['x-idempotency-key'],
  );
  fig.idempotencyKeys = byKey.size;
  for (const [key, g] of byKey) {
    const limit = ZERO_RETRY.has(g[0].path) ? 0 : maxRetries;
    const what = `${g[0].path} key ${key}`;
    g.forEach((e, k) => {
      if (e.retry !== k) P(`${what}: attempt ${k + 1} says x-stainless-retry-count ${e.retry}`);
      if (e.path !== g[0].path) P(`${what}: one key on two paths`);
      if (k > 0) {
        const prev = g[k - 1];
        if (!retryable(prev)) P(`${what}: retried after status ${prev.status}${delivered2xx(prev) ? ' (a delivered success)' : ''}`);
        gap(prev, e, minHttpDelay(prev, params), what);
      }
    });
    if (g.length - 1 > limit) P(`${what}: ${g.length - 1} retries, the policy allows ${limit}`);
    fig.httpRetries += g.length - 1;
    fig.maxHttpRetries = Math.max(fig.maxHttpRetries, g.length - 1);
  }
  // GETs carry no idempotency key: per URL, no more retries numbered k than retryable
  // outcomes numbered k − 1, and never more than maxRetries.
  const gets = groupBy(
    api.filter((e) => e.method === 'GET'),
    (e) => `${e.path}?${e.query}`,
  );
  for (const [url, g] of gets) {
    const at = (k) => g.filter((e) => e.retry === k);
    for (const e of g) if (e.retry > maxRetries) P(`GET ${url}: retry count ${e.retry} > ${maxRetries}`);
    for (let k = 1; k <= maxRetries; k++) {
      const n = at(k).length;
      const allowed = at(k - 1).filter(retryable).length;
      if (n > allowed) P(`GET ${url}: ${n} retries numbered ${k} after only ${allowed} retryable outcomes`);
      fig.httpRetries += n;
      if (n) fig.maxHttpRetries = Math.max(fig.maxHttpRetries, k);
    }
  }

  // Holder layer, training submissions: one (model_id, seq_id) may span several keys.
  const trainingKey = (e) => (TRAINING_SUBMITS.has(e.path) && e.body?.model_id !== undefined ? `${e.path} ${e.body.model_id} ${e.body.seq_id}` : undefined);
  const holderChains = (g, what, minWait) => {
    const keys = [];
    for (const e of g) {
      const k = e.headers?.['x-idempotency-key'];
      if (!keys.length || keys.at(-1).key !== k) keys.push({ key: k, list: [e] });
      else keys.at(-1).list.push(e);
    }
    if (new Set(keys.map((k) => k.key)).size !== keys.length) P(`${what}: idempotency keys interleave`);
    for (let k = 1; k < keys.length; k++) {
      const prev = keys[k - 1].list.at(-1);
      if (!retryable(prev)) P(`${what}: resubmitted after status ${prev.status}`);
      gap(prev, keys[k].list[0], minWait(k - 1), `${what} (submission ${k + 1})`);
    }
    if (g.at(-1).start - g[0].start > 300 + TOL_S) P(`${what}: retried for ${(g.at(-1).start - g[0].start).toFixed(1)} s, past the 300 s window`);
    fig.holderRetries += keys.length - 1;
    fig.maxHolderRetries = Math.max(fig.maxHolderRetries, keys.length - 1);
  };
  for (const [k, g] of groupBy(api, trainingKey)) {
    // One body per seq_id, except that an unnamed save_weights_for_sampler takes a fresh
    // sampling_session_seq_id on each holder submission (as Python's _send_request does), and
    // keeps it across the HTTP retries of that submission.
    const { sampling_session_seq_id: _, ...first } = g[0].body;
    const same = g.every(({ body: { sampling_session_seq_id: _s, ...rest } }) => JSON.stringify(rest) === JSON.stringify(first));
    if (!same) P(`${k}: one seq_id sent with different bodies`);
    const sessionSeqs = groupBy(g, (e) => e.headers?.['x-idempotency-key']);
    const perKey = [...sessionSeqs.values()].map((list) => new Set(list.map((e) => e.body.sampling_session_seq_id)));
    if (perKey.some((s) => s.size !== 1)) P(`${k}: sampling_session_seq_id changed within one submission`);
    const seqsAcross = perKey.map((s) => [...s][0]).filter((v) => v !== undefined);
    if (new Set(seqsAcross).size !== seqsAcross.length) P(`${k}: two submissions reused one sampling_session_seq_id`);
    holderChains(g, k, (attempt) => Math.min(2 ** attempt, 30));
  }

  // Sampling: per (session, seq_id) holder chains; per call (body without seq_id) seq ids.
  const samples = api.filter((e) => e.path === '/api/v1/asample');
  for (const [k, g] of groupBy(samples, (e) => `${e.body.sampling_session_id} ${e.body.seq_id}`)) holderChains(g, `asample ${k}`, () => 1);
  const calls = groupBy(samples, (e) => {
    const { seq_id, ...rest } = e.body;
    return JSON.stringify(rest);
  });
  for (const [, g] of calls) {
    const seqs = [...new Set(g.map((e) => e.body.seq_id))];
    fig.sampleResubmissions += seqs.length - 1;
    for (let s = 1; s < seqs.length; s++) {
      const last = g.filter((e) => e.body.seq_id === seqs[s - 1]).at(-1);
      const first = g.find((e) => e.body.seq_id === seqs[s]);
      gap(last, first, 0.75 * 0.5, `sample resubmission ${seqs[s - 1]} → ${seqs[s]}`);
    }
  }
  if (sampleCalls !== undefined && calls.size !== sampleCalls) P(`${calls.size} distinct sample requests in the log, the workload made ${sampleCalls} sample() calls`);

  // Polling, per future.
  const polls = api.filter((e) => e.path === '/api/v1/retrieve_future');
  fig.polls = polls.length;
  for (const [rid, g] of groupBy(polls, (e) => e.body?.request_id)) {
    fig.maxPollsPerFuture = Math.max(fig.maxPollsPerFuture, g.length);
    let consecutive = 0;
    g.forEach((e, k) => {
      const it = Number(e.headers?.['x-tinker-request-iteration']);
      if (it !== k) P(`future ${rid}: poll ${k + 1} says iteration ${it}`);
      if (k > 0) {
        const prev = g[k - 1];
        if (prev.status === 429 || prev.status === 0) {
          gap(prev, e, Math.min(2 ** consecutive, 30), `future ${rid} poll ${k + 1}`);
          consecutive++;
        } else consecutive = 0;
        if (prev.status === 410) P(`future ${rid}: polled again after 410`);
      }
    });
    const last = g.at(-1);
    if (!(last.status === 410 || (last.status === 200 && !last.fault))) P(`future ${rid}: polling ended on ${last.status}${last.fault ? ` (${last.fault})` : ''}, not an answer`);
    if (last.status === 410 && last.headers?.['x-tinker-request-type'] === 'Sample') fig.expiredSampleFutures++;
    if (last.status === 410 && last.headers?.['x-tinker-request-type'] !== 'Sample') P(`future ${rid} (${last.headers?.['x-tinker-request-type']}) expired`);
  }
  if (fig.sampleResubmissions !== fig.expiredSampleFutures) P(`${fig.sampleResubmissions} sample resubmissions, but ${fig.expiredSampleFutures} sampling futures expired (each expiry, and nothing else, must cause exactly one)`);

  const summary = `${fig.apiRequests} API requests, ${fig.httpRetries} HTTP retries (max ${fig.maxHttpRetries} per request), ${fig.holderRetries} resubmissions (max ${fig.maxHolderRetries}), ${fig.polls} polls (max ${fig.maxPollsPerFuture} per future), ${fig.sampleResubmissions} sample resubmissions = ${fig.expiredSampleFutures} expired sampling futures; shortest wait / policy minimum ${fig.minGapRatio === null ? '-' : fig.minGapRatio.toFixed(2)}`;
  return { problems, figures: fig, summary };
}
