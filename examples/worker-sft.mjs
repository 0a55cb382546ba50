// A Cloudflare Worker that fine-tunes with tinker-cookbook's supervised.train, its run's
// files (checkpoints.jsonl, metrics.jsonl) in a Workers KV namespace. A request trains at
// most STEPS_PER_REQUEST steps, then stops the run (which saves where it stopped); the next
// request resumes it from that checkpoint, so a long run fits in many short invocations (a
// scheduled handler calling `train` would do the same on a timer).
//
//   POST /train?run=NAME    trains or resumes run NAME; answers how far it got
//   GET  /runs/NAME         the run's checkpoints.jsonl
//
// Bindings: RUNS (a KV namespace), TINKER_API_KEY (a secret), and optionally
// TINKER_BASE_URL, TOKENIZER_URL (a folder with the model's tokenizer.json and
// tokenizer_config.json; without it the SDK's default loader is used) and
// STEPS_PER_REQUEST (default 4). tests/examples runs it in workerd (miniflare) against
// tinker-sim.
import { ServiceClient, Tokenizer, supervised, checkpoints } from 'tinker-wasm/cookbook';

/** A run store over a KV namespace: the run's files under `NAME/`. */
export function kvStore(kv, run) {
  const key = (name) => `${run}/${name}`;
  return {
    read: async (name) => (await kv.get(key(name))) ?? undefined,
    write: (name, text) => kv.put(key(name), text),
    append: async (name, text) => kv.put(key(name), ((await kv.get(key(name))) ?? '') + text),
  };
}

/** The data: a few chat rows in the cookbook's format (a real Worker would read R2 or KV). */
const conversations = ['Paris', 'Rome', 'Madrid', 'Berlin', 'Lisbon', 'Vienna'].map((city) => ({
  messages: [
    { role: 'user', content: 'Name a European capital.' },
    { role: 'assistant', content: city },
  ],
}));

/** Trains (or resumes) `run` for at most `budget` steps. */
async function train(env, run, budget) {
  const base = env.TOKENIZER_URL;
  const service = new ServiceClient({
    apiKey: env.TINKER_API_KEY,
    ...(env.TINKER_BASE_URL ? { baseURL: env.TINKER_BASE_URL } : {}),
    ...(base ? { tokenizerLoader: () => Tokenizer.fromURL(`${base}/tokenizer.json`, { config_url: `${base}/tokenizer_config.json` }) } : {}),
  });
  const stop = new AbortController();
  let steps = 0;
  try {
    const result = await supervised.train(
      {
        model_name: 'Qwen/Qwen3-8B',
        dataset_builder: new supervised.FromConversationFileBuilder({ conversations, common_config: { renderer_name: 'qwen3', batch_size: 2 } }),
        learning_rate: 1e-4,
        num_epochs: 3,
        save_every: 0,
        eval_every: 0,
      },
      {
        service,
        store: kvStore(env.RUNS, run),
        signal: stop.signal,
        onMetrics: () => ++steps >= budget && stop.abort(),
      },
    );
    return { run, steps, ...result, last_checkpoint: (await checkpoints.getLastCheckpoint(kvStore(env.RUNS, run)))?.name ?? null };
  } finally {
    await service.close();
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const run = url.searchParams.get('run') ?? url.pathname.split('/')[2];
    if (!run || !/^[\w.-]+$/.test(run)) return Response.json({ error: 'name the run: ?run=NAME' }, { status: 400 });
    if (request.method === 'POST' && url.pathname === '/train') {
      return Response.json(await train(env, run, Number(env.STEPS_PER_REQUEST ?? 4)));
    }
    if (request.method === 'GET' && url.pathname.startsWith('/runs/')) {
      return new Response((await env.RUNS.get(`${run}/checkpoints.jsonl`)) ?? '', { headers: { 'content-type': 'application/jsonl' } });
    }
    return new Response('not found', { status: 404 });
  },
};
