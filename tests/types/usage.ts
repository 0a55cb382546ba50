// Type-level usage of the published package, checked with `tsc --strict` in `make test`.
// It imports by package name, so it exercises package.json "exports" and "types".
import { version, normalizeAdamParams, sleep } from 'tinker-wasm';
import * as lite from 'tinker-wasm/lite';

const v: string = version();
const l: string = lite.version();
const done: Promise<void> = sleep(1);
normalizeAdamParams({ learning_rate: 1e-3 });
export { v, l, done };

// Tokenizer (issue 6).
import { Tokenizer, Renderer, resolveTokenizerId, conversationToDatum, datumFromModelInputWeights, getRecommendedRendererNames, getModelAttributes, listModels, registerRenderer, getRenderer, unregisterRenderer, isRendererRegistered, getRegisteredRendererNames } from 'tinker-wasm';
import { tokenizerRevision } from 'tinker-wasm';
import type { ChatMessage, ParsedResponse, SupervisedExample, RenderedModelInput, TrainOnWhat, RendererName, ModelAttributes, RendererLike } from 'tinker-wasm';

async function tokenizerUsage(json: Uint8Array, config: string): Promise<void> {
  const loaded: Promise<void> = Tokenizer.loadGeneralEngine();
  await loaded;
  const tok: Tokenizer = Tokenizer.fromJSON(json, { config });
  const fromUrl: Tokenizer = await Tokenizer.fromURL('https://example.com/tokenizer.json', {
    config_url: new URL('https://example.com/tokenizer_config.json'),
    cache: true,
    fetch: (input, init) => fetch(input, init),
  });
  const ids: Uint32Array = tok.encode('Hello world', { add_special_tokens: false });
  const batch: Uint32Array[] = tok.encodeBatch(['a', 'b']);
  const splitIds: Uint32Array = tok.encode('<|im_end|>', { split_special_tokens: true });
  const tiktoken: Tokenizer = Tokenizer.fromTiktoken(new Uint8Array(), { pattern: '\\s+|\\S+', special_tokens: { '<|end|>': 256 }, nfc: true, eos_token: '<|end|>', config: { chat_template: '' } });
  const revision: string | undefined = tokenizerRevision(resolveTokenizerId('moonshotai/Kimi-K2.5'));
  void [splitIds, tiktoken, revision];
  const text: string = tok.decode(ids, { skip_special_tokens: true });
  const fromArray: string = tok.decode([1, 2, 3]);
  const id: number | undefined = tok.tokenToId('<|im_end|>');
  const token: string | undefined = tok.idToToken(42);
  const size: number = tok.vocabSize;
  const engine: 'fast' | 'general' = fromUrl.engine;
  const eos: string | undefined = tok.eosToken;
  const eosId: number | undefined = tok.eosTokenId;
  const messages: ChatMessage[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'text', text: 'Hello' }] },
  ];
  const prompt: string = tok.applyChatTemplate(messages, {
    add_generation_prompt: true,
    tools: [{ type: 'function', function: { name: 'f' } }],
    template_kwargs: { enable_thinking: false },
  });
  const chatIds: Uint32Array = tok.encodeChat(messages, { add_generation_prompt: true });
  const r = new Renderer('qwen3', tok);
  const trainOn: TrainOnWhat = 'all_assistant_messages';
  const ex: SupervisedExample = r.buildSupervisedExample(messages, { train_on_what: trainOn });
  const weights: Float32Array = ex.weights;
  const exs: SupervisedExample[] = r.buildSupervisedExamples(messages);
  const datum: Datum = conversationToDatum(messages, r, { max_length: 2048, train_on_what: 'last_assistant_turn', reduction: 'none' });
  const shifted: Datum = datumFromModelInputWeights(ex.model_input, ex.weights, { max_length: 16 });
  const input: RenderedModelInput = Renderer.forModel('meta-llama/Llama-3.1-8B', tok).buildGenerationPrompt(messages, { prefill: 'Sure' });
  const gpt = new Renderer('gpt_oss_medium_reasoning', tok, { current_date: '2026-01-15' });
  const stop: number[] | string[] = r.stopSequences;
  const extends_: boolean = gpt.hasExtensionProperty;
  const parsed: ParsedResponse = r.parseResponse(ids);
  const done: boolean = parsed.termination === 'stop_sequence' || parsed.termination === 'eos';
  const names: RendererName[] = getRecommendedRendererNames('Qwen/Qwen3-8B');
  const attrs: ModelAttributes = getModelAttributes('Qwen/Qwen3.5-4B');
  const all: string[] = listModels();
  const prefix: ChatMessage[] = r.createConversationPrefixWithTools([{ name: 'f', description: 'd', parameters: {} }], 'Be brief.');
  registerRenderer('acme/chat', (t) => new Renderer('role_colon', t));
  const custom: Renderer | RendererLike = getRenderer('acme/chat', tok);
  const registered: boolean = isRendererRegistered('acme/chat') && getRegisteredRendererNames().length > 0 && unregisterRenderer('acme/chat');
  void [parsed, done, exs, datum, shifted, extends_, names, attrs, all, prefix, custom, registered];
  const resolved: string = resolveTokenizerId('Qwen/Qwen3-8B', null);
  tok.free();
  void [batch, text, fromArray, id, token, size, engine, eos, eosId, prompt, chatIds, weights, input, stop, resolved];
}
export { tokenizerUsage };

// ---- Clients (issue 4/5): every call's types, options and results.
import {
  ServiceClient, TrainingClient, SamplingClient, RestClient, ModelInput, TensorData, datumFromTokens,
  APIStatusError, NotFoundError, RequestFailedError, APIUserAbortError,
  type Datum, type ForwardBackwardOutput, type SampleResponse, type TrainingRun, type NavigablePage,
  type BillingUsageResponse, type AuditLogResponse, type CurrentCheckpointStorageUsageResponse,
} from 'tinker-wasm';

async function clientUsage(): Promise<void> {
  const service = new ServiceClient({ apiKey: 'tml-x', baseURL: 'http://127.0.0.1:8000', maxRetries: 3, timeout: 30_000, heartbeat: false });
  const ac = new AbortController();
  const training: TrainingClient = await service.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 16, seed: 1 }, { signal: ac.signal });
  const datum: Datum = datumFromTokens([1, 2, 3, 4], { prompt_length: 2 });
  const custom: Datum = {
    model_input: ModelInput.fromInts(new Uint32Array([1, 2, 3])),
    loss_fn_inputs: { target_tokens: TensorData.fromArray([2, 3, 4], { dtype: 'int64' }), weights: new Float32Array([0, 1, 1]) },
  };
  const fb: Promise<ForwardBackwardOutput> = training.forwardBackward([datum, custom], 'cross_entropy');
  const step = training.optimStep({ learning_rate: 1e-4 });
  const [out] = await Promise.all([fb, step]);
  const loss: number = out.metrics['loss:sum'];
  const lp = out.loss_fn_outputs[0].logprobs.data;
  await training.forward([datum], 'ppo', { loss_fn_config: { clip_low_threshold: 0.8 } }, { timeout: 5_000 });
  await training.forwardBackwardCustom([datum], (data, logprobs) => ({ loss: 0, gradients: logprobs.map((l) => new Float32Array(l.length)) }));
  const { path } = await training.saveState('ckpt', { ttl_seconds: 3600 });
  const restored: TrainingClient = await service.createTrainingClientFromStateWithOptimizer(path);
  const sampler: SamplingClient = await training.saveWeightsAndGetSamplingClient();
  const res: SampleResponse = await sampler.sample({ prompt: [1, 2], num_samples: 2, sampling_params: { max_tokens: 8, temperature: 0.7, stop: ['\n'] } });
  const tokens: Int32Array = res.sequences[0].tokens;
  // One convention (openai-node's): parameters under the wire's names, request options last.
  // @ts-expect-error parameters have the wire's (snake_case) names
  await sampler.sample({ prompt: [1, 2], numSamples: 2 });
  // @ts-expect-error request options go in the last argument, not among the parameters
  await training.forward([datum], 'ppo', { signal: ac.signal });
  await sampler.sample({ prompt: [1, 2], num_samples: 1 }, { signal: ac.signal, timeout: 1_000 });
  await training.optimStep({ learning_rate: 1e-4 }, { signal: ac.signal });
  await service.restClient().getTrainingRun('run-1', { access_scope: 'accessible' });
  // @ts-expect-error access_scope is 'owned' or 'accessible'
  await service.restClient().listTrainingRunsPage({ access_scope: 'everyone' });
  const plp: (number | null)[] = await sampler.computeLogprobs([1, 2, 3]);
  // Sampler handles: a string to rebuild the client elsewhere (Python's format).
  const handle: string = sampler.getSamplerHandle();
  const elsewhere: SamplingClient = SamplingClient.fromSamplerHandle(handle, { apiKey: 'tml-x', heartbeat: false });
  await elsewhere.close();
  // @ts-expect-error the server comes from the handle
  SamplingClient.fromSamplerHandle(handle, { baseURL: 'http://elsewhere' });
  const rest: RestClient = service.restClient();
  for await (const run of rest.listTrainingRuns({ limit: 10 })) {
    const id: string = run.training_run_id;
  }
  const page: NavigablePage<TrainingRun> = await rest.listTrainingRuns();
  if (page.hasNextPage()) await page.getNextPage();
  try {
    await rest.getTrainingRun('missing');
  } catch (e) {
    if (e instanceof NotFoundError) { const s: number = e.status; }
    if (e instanceof APIStatusError) { const h: Record<string, string> = e.headers; }
    if (e instanceof RequestFailedError) { const c: 'user' | 'server' | 'unknown' = e.category; }
    if (e instanceof APIUserAbortError) { /* aborted */ }
  }
  // Ids and paths are strings (not `any`); the admin calls have typed results.
  // @ts-expect-error a training run id is a string
  await rest.getTrainingRun(42);
  // @ts-expect-error a tinker path is a string
  await rest.getWeightsInfoByTinkerPath({ path });
  const usage: BillingUsageResponse = await rest.getBillingUsage({ starting_on: new Date('2026-01-01'), ending_before: '2026-01-02T00:00:00Z' });
  for (const ev of usage.data) {
    const n: number = ev.event_info.type === 'storage' ? ev.event_info.gigabyte_hours : ev.event_info.type === 'checkpoint' ? ev.event_info.count : ev.event_info.token_count;
    void n;
  }
  const audit: AuditLogResponse = await rest.getAuditLog({ event_type: 'checkpoints' });
  const when: string = audit.entries[0].timestamp;
  const storage: CurrentCheckpointStorageUsageResponse = await rest.getCurrentCheckpointStorageUsage({});
  const bytes: number = storage.data[0].size_bytes;
  await service.close({ status: 'success' });
  void [loss, lp, restored, tokens, plp, when, bytes];
}
export { clientUsage };

// tinker-wasm/cookbook (issue 33): the cookbook's names and defaults, options last.
// The entry is the whole SDK too (on its own build of the module).
import { ServiceClient as CookbookService, supervised, preference, rl, distillation, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } from 'tinker-wasm/cookbook';
import type { SupervisedConfig, DpoConfig, LabeledComparison, RLConfig, RLDataset, TrainResult, CheckpointRecord, RunStore } from 'tinker-wasm/cookbook';

class Probe extends evaluators.SamplingClientEvaluator {
  async evaluate(sampler: import('tinker-wasm').SamplingClient) {
    return { 'probe/calls': (await sampler.computeLogprobs([1, 2, 3])).length };
  }
}

async function cookbookUsage(service: CookbookService, signal: AbortSignal, prompt: import('tinker-wasm').ModelInput): Promise<void> {
  const config: SupervisedConfig = {
    model_name: 'Qwen/Qwen3-8B',
    log_path: '/tmp/run',
    dataset_builder: new supervised.FromConversationFileBuilder({
      file_path: 'conversations.jsonl',
      test_size: 10,
      common_config: { renderer_name: 'qwen3', batch_size: 8, max_length: 2048 },
    }),
    learning_rate: hyperparams.getLr('Qwen/Qwen3-8B'),
    lr_schedule: 'cosine',
    num_epochs: 2,
    ttl_seconds: null,
    evaluator_builders: [() => new Probe()],
  };
  const store: RunStore = memoryStore();
  const result: TrainResult = await supervised.train(config, { service, signal, store, onMetrics: (m) => void m.train_mean_nll });
  const stoppedAt: number | null = result.stopped_at_step;
  const last: CheckpointRecord | null = await checkpoints.getLastCheckpoint(store);
  const browserStore: RunStore = indexedDbStore('run');
  // @ts-expect-error lr_schedule is one of the cookbook's three
  await supervised.train({ ...config, lr_schedule: 'step' }, { service });
  // @ts-expect-error the service is required
  await supervised.train(config, {});
  const sampler = await service.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const tc = new completers.TinkerTokenCompleter({ sampling_client: sampler, max_tokens: 64, context_window: 4096 });
  const toks: number[] = (await tc.complete(prompt, [])).tokens;
  class Mine extends completers.MessageCompleter {
    async complete() {
      return { role: 'assistant', content: 'ok' };
    }
  }
  const row: LabeledComparison = {
    comparison: { prompt_conversation: [{ role: 'user', content: 'q' }], completion_A: [{ role: 'assistant', content: 'a' }], completion_B: [{ role: 'assistant', content: 'b' }] },
    label: 'A',
  };
  const dpo: DpoConfig = {
    model_name: 'Qwen/Qwen3-8B',
    dataset_builder: new preference.DPODatasetBuilderFromComparisons({
      comparison_builder: new preference.ComparisonBuilderFromJsonl({ train_comparisons: [row], test_path: 'test.jsonl' }),
      common_config: { renderer_name: 'qwen3', batch_size: 8 },
    }),
    dpo_beta: 0.1,
  };
  const dpoResult: TrainResult = await preference.trainDpo(dpo, { service, signal, onMetrics: (m) => void m.dpo_loss });
  // @ts-expect-error submit_ahead is supervised.train's, not train_dpo's
  await preference.trainDpo({ ...dpo, submit_ahead: 1 }, { service });
  // @ts-expect-error a label is A, B or Tie
  const badRow: LabeledComparison = { ...row, label: 'C' };
  class Sum extends rl.ProblemEnv {
    getQuestion() {
      return 'What is 2 + 2?';
    }
    checkAnswer(text: string) {
      return text.includes('4');
    }
    checkFormat() {
      return true;
    }
    getReferenceAnswer() {
      return '4';
    }
  }
  const rlConfig: RLConfig = {
    learning_rate: 1e-4,
    model_name: 'Qwen/Qwen3-8B',
    max_tokens: 16,
    dataset_builder: async ({ renderer }) => {
      const train: RLDataset = { length: 2, getBatch: () => [new rl.ProblemGroupBuilder({ env_thunk: () => new Sum(renderer), num_envs: 4 })] };
      return [train];
    },
  };
  const rlResult: TrainResult = await rl.train(rlConfig, { service, signal, onMetrics: (m) => void m['env/all/reward/total'] });
  // @ts-expect-error max_tokens is required
  await rl.train({ ...rlConfig, max_tokens: undefined }, { service });
  await rl.train({ ...rlConfig, kl_penalty_coef: 0.1, kl_reference_config: { base_model: 'Qwen/Qwen3-8B' } }, { service });
  await rl.train({ ...rlConfig, async_config: { max_steps_off_policy: 2, groups_per_batch: 8, loss_fn: 'ppo' } }, { service });
  await rl.train({ ...rlConfig, rollout_error_tolerance: new rl.MinViableGroup({ min_successful: 3, per_rollout_timeout: 60 }) }, { service });
  // @ts-expect-error a strategy or a boolean
  await rl.train({ ...rlConfig, rollout_error_tolerance: 'retry' }, { service });
  // @ts-expect-error async_config needs groups_per_batch
  await rl.train({ ...rlConfig, async_config: { max_steps_off_policy: 2 } }, { service });
  // @ts-expect-error the reference needs its base_model
  await rl.train({ ...rlConfig, kl_penalty_coef: 0.1, kl_reference_config: {} }, { service });
  class Chat extends rl.MessageEnv {
    async initialObservation() {
      return [{ role: 'user' as const, content: 'Hi' }];
    }
    async step() {
      return { reward: 1, episode_done: true, next_messages: [] };
    }
  }
  const envFromMessages = (renderer: import('tinker-wasm').Renderer) => new rl.EnvFromMessageEnv({ renderer, message_env: new Chat(), terminate_on_length: false });
  const distilled: TrainResult = await distillation.trainOnPolicy(
    {
      learning_rate: 1e-4,
      model_name: 'Qwen/Qwen3-8B',
      max_tokens: 16,
      dataset_configs: [
        {
          dataset_builder: ({ renderer, tokenizer }) => [new distillation.PromptOnlyDataset({ prompts: ['Hi'], batch_size: 1, group_size: 2, renderer, tokenizer })],
          teacher_config: { base_model: 'Qwen/Qwen3-32B' },
          groups_per_batch: 1,
        },
      ],
    },
    { service, signal },
  );
  // @ts-expect-error a dataset config names its teacher
  await distillation.trainOnPolicy({ learning_rate: 1e-4, model_name: 'm', max_tokens: 1, dataset_configs: [{ dataset_builder: async () => [], groups_per_batch: 1 }] }, { service });
  void [stoppedAt, last, browserStore, toks, Mine, dpoResult, badRow, rlResult, envFromMessages, distilled];
}
export { cookbookUsage };

// The OpenAI-compatible handler (issue 35): fetch's signature.
import { openaiFetch, ServiceClient as FullService } from 'tinker-wasm';
async function openaiUsage(service: FullService): Promise<Response> {
  const f = openaiFetch(service, { renderer: 'qwen3' });
  // @ts-expect-error a ServiceClient, not options
  openaiFetch({ baseURL: 'x' });
  return f('http://tinker.local/v1/models', { signal: AbortSignal.timeout(1000) });
}
export { openaiUsage };
