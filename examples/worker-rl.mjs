// A Cloudflare Worker that trains with reinforcement learning on a timer: each scheduled
// run (a Cron Trigger) rolls out and trains at most STEPS_PER_RUN steps of
// tinker-cookbook's rl.train, then stops the run, which saves where it stopped; the next
// trigger resumes there from the run's files in a Workers KV namespace. The environment:
// name a European capital, rewarded when the answer is one (its grading is plain JS).
//
//   scheduled           trains or resumes the run named RUN (default "capitals-rl")
//   GET /runs/NAME      the run's metrics.jsonl
//
// Bindings: RUNS (a KV namespace), TINKER_API_KEY (a secret), and optionally
// TINKER_BASE_URL, TOKENIZER_URL (a folder with the model's tokenizer.json and
// tokenizer_config.json), RUN and STEPS_PER_RUN (default 2). tests/examples runs it in
// workerd (miniflare) against tinker-sim, firing its scheduled handler.
import { ServiceClient, Tokenizer, rl } from 'tinker-wasm/cookbook';
import { kvStore } from './worker-sft.mjs';

const CAPITALS = ['Paris', 'Rome', 'Madrid', 'Berlin', 'Lisbon', 'Vienna', 'Athens', 'Dublin'];

class CapitalEnv extends rl.ProblemEnv {
  getQuestion() {
    return 'Name a European capital. Answer with the city only.';
  }

  checkAnswer(text) {
    return CAPITALS.some((c) => text.includes(c));
  }

  checkFormat() {
    return true;
  }

  getReferenceAnswer() {
    return CAPITALS[0];
  }
}

/** Trains (or resumes) `run` for at most `budget` steps. */
export async function trainSome(env, run, budget) {
  const base = env.TOKENIZER_URL;
  const service = new ServiceClient({
    apiKey: env.TINKER_API_KEY,
    ...(env.TINKER_BASE_URL ? { baseURL: env.TINKER_BASE_URL } : {}),
    ...(base ? { tokenizerLoader: () => Tokenizer.fromURL(`${base}/tokenizer.json`, { config_url: `${base}/tokenizer_config.json` }) } : {}),
  });
  const stop = new AbortController();
  let steps = 0;
  try {
    const result = await rl.train(
      {
        model_name: 'Qwen/Qwen3-8B',
        renderer_name: 'qwen3_disable_thinking',
        learning_rate: 1e-4,
        max_tokens: 6,
        save_every: 0,
        dataset_builder: async ({ renderer }) => [
          { length: 5, getBatch: () => [1, 2].map(() => new rl.ProblemGroupBuilder({ env_thunk: () => new CapitalEnv(renderer), num_envs: 4, dataset_name: 'capitals' })) },
        ],
      },
      { service, store: kvStore(env.RUNS, run), signal: stop.signal, onMetrics: () => ++steps >= budget && stop.abort() },
    );
    return { run, steps, ...result };
  } finally {
    await service.close();
  }
}

export default {
  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(trainSome(env, env.RUN ?? 'capitals-rl', Number(env.STEPS_PER_RUN ?? 2)));
  },

  async fetch(request, env) {
    const url = new URL(request.url);
    const run = url.pathname.split('/')[2];
    if (request.method === 'GET' && url.pathname.startsWith('/runs/') && /^[\w.-]+$/.test(run ?? '')) {
      return new Response((await env.RUNS.get(`${run}/metrics.jsonl`)) ?? '', { headers: { 'content-type': 'application/jsonl' } });
    }
    return new Response('not found', { status: 404 });
  },
};
