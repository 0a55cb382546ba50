// tinker-wasm/cookbook: tinker-cookbook's training methods over the cookbook build of the
// module (the full module and crates/cookbook; the entries next to this file). The
// logic (schedules, shuffling, batching, datums, metrics, checkpoint records, resume, the
// order of the calls) is the Rust crate's state machine (crates/cookbook's sft::Sft,
// through the skin's __CookbookSft); this file sends what it says, in the order it says,
// and holds what a user passes in: the dataset's source, the run's store, the signal and
// the metrics callback.
import { CookbookRunOptions, PolicyRunOptions, TokensWithLogprobsParams, CompleteParams, TinkerTokenCompleterParams, TinkerMessageCompleterParams } from './params.js';

/**
 * A run's files (`checkpoints.jsonl`, `metrics.jsonl`): a folder in Node, any object with
 * these three methods elsewhere.
 * @typedef {{
 *   read(name: string): Promise<string | undefined> | string | undefined,
 *   append(name: string, text: string): Promise<void> | void,
 *   write(name: string, text: string): Promise<void> | void,
 * }} RunStore
 */

/** A store in memory (the default when a run has no `log_path`). @returns {RunStore & { files: Map<string, string> }} */
export function memoryStore() {
  /** @type {Map<string, string>} */
  const files = new Map();
  return {
    files,
    read: (name) => files.get(name),
    append: (name, text) => void files.set(name, (files.get(name) ?? '') + text),
    write: (name, text) => void files.set(name, text),
  };
}

/**
 * A store in a browser's IndexedDB: one object store of file texts in the database `name`.
 * @param {string} name
 * @returns {RunStore}
 */
export function indexedDbStore(name) {
  if (typeof indexedDB === 'undefined') throw new TypeError('indexedDbStore: this runtime has no indexedDB');
  /** @type {Promise<IDBDatabase>} */
  const db = new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore('files');
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  /** @param {IDBTransactionMode} mode @param {(s: IDBObjectStore) => IDBRequest} f */
  const run = async (mode, f) => {
    const tx = (await db).transaction('files', mode);
    const req = f(tx.objectStore('files'));
    return new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = tx.onabort = () => reject(tx.error);
    });
  };
  /** @type {RunStore} */
  const store = {
    read: (file) => run('readonly', (s) => s.get(file)),
    write: async (file, text) => void (await run('readwrite', (s) => s.put(text, file))),
    append: async (file, text) => store.write(file, ((await store.read(file)) ?? '') + text),
  };
  return store;
}

/**
 * A store over a folder (Node, Bun, Deno).
 * @param {string} dir
 * @param {any} fs node:fs
 * @param {any} path node:path
 * @returns {RunStore}
 */
export function folderStore(dir, fs, path) {
  const at = (/** @type {string} */ name) => path.join(dir, name);
  return {
    read: async (name) => {
      try {
        return await fs.promises.readFile(at(name), 'utf8');
      } catch (e) {
        if (/** @type {any} */ (e).code === 'ENOENT') return undefined;
        throw e;
      }
    },
    append: async (name, text) => {
      await fs.promises.mkdir(dir, { recursive: true });
      await fs.promises.appendFile(at(name), text);
    },
    write: async (name, text) => {
      await fs.promises.mkdir(dir, { recursive: true });
      await fs.promises.writeFile(at(name), text);
    },
  };
}

/** `supervised.FromConversationFileBuilder`: the cookbook's conversation JSONL. */
export class FromConversationFileBuilder {
  /** @param {Record<string, unknown>} params */
  constructor(params) {
    if (params === null || typeof params !== 'object') {
      throw new TypeError(`${new.target.name}: params must be an object, got ${params === null ? 'null' : typeof params}`);
    }
    Object.assign(this, params);
  }
}

/** `preference.ComparisonBuilderFromJsonl`: comparison files (`{"comparison", "label"}` per line). */
export class ComparisonBuilderFromJsonl extends FromConversationFileBuilder {}

/** `preference.DPODatasetBuilderFromComparisons`: each comparison a chosen and a rejected datum. */
export class DPODatasetBuilderFromComparisons extends FromConversationFileBuilder {}

/**
 * The dataset's JSONL text: the file (a path needs `fs`), its text or bytes, or the
 * conversations themselves.
 * @param {any} b the builder
 * @param {any} fs
 */
async function datasetText(b, fs, at = 'dataset_builder', [file, text, rows] = ['file_path', 'text', 'conversations'], optional = false) {
  if (b === null || typeof b !== 'object') {
    throw new TypeError(`${at}: must be a ${at === 'dataset_builder' ? 'supervised.FromConversationFileBuilder' : 'preference.ComparisonBuilderFromJsonl'}, got ${b === null ? 'null' : typeof b}`);
  }
  const given = [file, text, rows].filter((k) => b[k] !== undefined && b[k] !== null);
  if (given.length === 0 && optional) return '';
  if (given.length !== 1) {
    throw new TypeError(`${at}: give exactly one of ${file}, ${text} and ${rows}, got ${given.length ? given.join(', ') : 'none'}`);
  }
  if (given[0] === text) {
    if (typeof b[text] === 'string') return b[text];
    if (b[text] instanceof Uint8Array) return new TextDecoder().decode(b[text]);
    throw new TypeError(`${at}.${text}: must be a string or a Uint8Array, got ${typeof b[text]}`);
  }
  if (given[0] === file) {
    if (!fs) throw new TypeError(`${at}.${file}: this runtime has no file system; give ${text} or ${rows}`);
    return fs.promises.readFile(b[file], 'utf8');
  }
  const lines = [];
  for await (const c of b[rows]) lines.push(JSON.stringify(c));
  return lines.join('\n');
}

/**
 * A DPO run's comparison files: `[train text, test text]`.
 * @param {any} d the dataset builder
 * @param {any} fs
 */
async function comparisonTexts(d, fs) {
  const at = 'dataset_builder.comparison_builder';
  const c = d?.comparison_builder;
  const keys = (/** @type {string} */ p) => /** @type {[string, string, string]} */ ([`${p}_path`, `${p}_text`, `${p}_comparisons`]);
  return [await datasetText(c, fs, at, keys('train')), await datasetText(c, fs, at, keys('test'), true)];
}

/**
 * `TokensWithLogprobs`: a sampled sequence, its logprobs (when the sampler returned them)
 * and why it stopped.
 */
export class TokensWithLogprobs {
  /** @param {import('../gen/cookbook-params.js').TokensWithLogprobsParams} fields */
  constructor(fields) {
    const { tokens, maybe_logprobs, stop_reason = 'stop', sequence_id = null, prompt_cache_hit_tokens = 0 } = TokensWithLogprobsParams.read(fields);
    this.tokens = tokens;
    this.maybe_logprobs = maybe_logprobs;
    this.stop_reason = stop_reason;
    this.sequence_id = sequence_id;
    this.prompt_cache_hit_tokens = prompt_cache_hit_tokens;
  }

  /** The logprobs; throws when the sampler returned none. */
  get logprobs() {
    if (this.maybe_logprobs === null || this.maybe_logprobs === undefined) throw new Error('Logprobs are not available');
    return this.maybe_logprobs;
  }
}

/** `TokenCompleter`: extend it and implement `complete(model_input, stop, { max_tokens })`. */
export class TokenCompleter {
  /**
   * @param {any} _modelInput the prompt (a ModelInput)
   * @param {string[] | number[]} _stop stop strings or token ids
   * @param {{ max_tokens?: number }} [_options]
   * @returns {Promise<TokensWithLogprobs>}
   */
  async complete(_modelInput, _stop, _options) {
    throw new Error(`${this.constructor.name}.complete is not implemented`);
  }
}

/** `MessageCompleter`: extend it and implement `complete(messages)`. */
export class MessageCompleter {
  /** @param {any[]} _messages @returns {Promise<any>} */
  async complete(_messages) {
    throw new Error(`${this.constructor.name}.complete is not implemented`);
  }
}

/** @param {unknown} v @param {string} what */
function samplingClient(v, what) {
  if (v === null || typeof v !== 'object' || typeof (/** @type {any} */ (v).sample) !== 'function') {
    throw new TypeError(`${what}.sampling_client: must be a SamplingClient, got ${v === null ? 'null' : typeof v}`);
  }
  return /** @type {any} */ (v);
}

/**
 * The completers over a runtime entry (their `max_tokens` rule is the crate's).
 * @param {any} tinker
 */
function completers(tinker) {
  /** `TinkerTokenCompleter({ sampling_client, max_tokens, temperature = 1, context_window })`. */
  class TinkerTokenCompleter extends TokenCompleter {
    /** @param {import('../gen/cookbook-params.js').TinkerTokenCompleterParams} params */
    constructor(params) {
      super();
      const { sampling_client, max_tokens, temperature = 1.0, context_window = null } = TinkerTokenCompleterParams.read(params);
      this.sampling_client = samplingClient(sampling_client, 'TinkerTokenCompleter');
      tinker.__cookbookCompleterMaxTokens(max_tokens, undefined, undefined, undefined);
      this.max_tokens = max_tokens;
      this.temperature = temperature;
      this.context_window = context_window;
      /** @type {AbortSignal | undefined} the run's, to cancel rollouts it no longer needs */
      this.signal = undefined;
    }

    /** @param {any} modelInput @param {string[] | number[]} stop @param {import('../gen/cookbook-params.js').CompleteParams} [params] */
    async complete(modelInput, stop, params) {
      const max_tokens = tinker.__cookbookCompleterMaxTokens(this.max_tokens, CompleteParams.read(params).max_tokens, this.context_window ?? undefined, modelInput);
      const r = await this.sampling_client.sample({ prompt: modelInput, num_samples: 1, sampling_params: { stop, max_tokens, temperature: this.temperature } }, this.signal ? { signal: this.signal } : undefined);
      const seq = r.sequences[0];
      if (!seq.logprobs) throw new Error('TinkerTokenCompleter: the sampler returned no logprobs');
      return new TokensWithLogprobs({
        tokens: Array.from(seq.tokens),
        maybe_logprobs: Array.from(seq.logprobs),
        stop_reason: seq.stop_reason,
        sequence_id: seq.sequence_id ?? null,
        prompt_cache_hit_tokens: r.prompt_cache_hit_tokens ?? 0,
      });
    }
  }

  /** `TinkerMessageCompleter({ sampling_client, renderer, max_tokens, stop_condition, temperature = 1 })`. */
  class TinkerMessageCompleter extends MessageCompleter {
    /** @param {import('../gen/cookbook-params.js').TinkerMessageCompleterParams} params */
    constructor(params) {
      super();
      const { sampling_client, renderer, max_tokens, stop_condition = null, temperature = 1.0 } = TinkerMessageCompleterParams.read(params);
      this.sampling_client = samplingClient(sampling_client, 'TinkerMessageCompleter');
      if (renderer === null || typeof renderer !== 'object' || typeof renderer.buildGenerationPrompt !== 'function') {
        throw new TypeError('TinkerMessageCompleter.renderer: must be a Renderer');
      }
      tinker.__cookbookCompleterMaxTokens(max_tokens, undefined, undefined, undefined);
      this.renderer = renderer;
      this.max_tokens = max_tokens;
      this.stop_condition = stop_condition ?? renderer.stopSequences;
      this.temperature = temperature;
    }

    /** The assistant's message (`content`, and `tool_calls` when it made some). @param {any[]} messages */
    async complete(messages) {
      const prompt = this.renderer.buildGenerationPrompt(messages);
      const r = await this.sampling_client.sample({ prompt, num_samples: 1, sampling_params: { temperature: this.temperature, max_tokens: this.max_tokens, stop: this.stop_condition } });
      const { message } = this.renderer.parseResponse(r.sequences[0].tokens);
      /** @type {any} */
      const out = { role: 'assistant', content: message.content };
      if (message.tool_calls !== undefined) out.tool_calls = message.tool_calls;
      return out;
    }
  }
  return { TinkerTokenCompleter, TinkerMessageCompleter };
}

/** `TrainingClientEvaluator`: extend it and implement `evaluate(training_client)` → metrics. */
export class TrainingClientEvaluator {
  /** @param {any} _trainingClient @returns {Promise<Record<string, number>>} */
  async evaluate(_trainingClient) {
    throw new Error(`${this.constructor.name}.evaluate is not implemented`);
  }
}

/** `SamplingClientEvaluator`: extend it and implement `evaluate(sampling_client)` → metrics. */
export class SamplingClientEvaluator {
  /** @param {any} _samplingClient @returns {Promise<Record<string, number>>} */
  async evaluate(_samplingClient) {
    throw new Error(`${this.constructor.name}.evaluate is not implemented`);
  }
}

/** A sampler's prompt logprobs (`(number | null)[]`) as float32s, null as NaN. @param {(number | null)[]} l */
const floats = (l) => Float32Array.from(l, (x) => x ?? NaN);

import { Env, EnvGroupBuilder, ProblemEnv, ProblemGroupBuilder, PromptOnlyEnv, PromptOnlyDataset, MessageEnv, EnvFromMessageEnv, InitialObservationOverflow, FailFast, RetryOnFailure, MinViableGroup, rolloutStrategy, rolloutGroup } from './rl.js';

/** The held-out NLL evaluator's place in the list. */
const NLL = Symbol('SamplerNLLEvaluator');

/**
 * The evaluators a config's `evaluator_builders` (or `infrequent_evaluator_builders`) build.
 * @param {any} config @param {string} key
 */
function buildEvaluators(config, key) {
  const builders = config[key] ?? [];
  if (!Array.isArray(builders)) throw new TypeError(`${key}: must be an array of functions that build evaluators, got ${typeof builders}`);
  return builders.map((b, i) => {
    if (typeof b !== 'function') throw new TypeError(`${key}[${i}]: must be a function that builds an evaluator, got ${b === null ? 'null' : typeof b}`);
    const e = b();
    if (!(e instanceof TrainingClientEvaluator || e instanceof SamplingClientEvaluator)) {
      throw new TypeError(`${key}[${i}]: must build a TrainingClientEvaluator or a SamplingClientEvaluator`);
    }
    return e;
  });
}

/** The dataset builder's params without its source (the skin reads those). @param {any} b */
function builderParams(b) {
  const { text: _t, conversations: _c, ...rest } = b;
  return rest;
}

/**
 * The cookbook namespaces over an entry's exports.
 * @param {any} tinker the runtime entry (`tinker-wasm` for that runtime)
 * @param {{ fs?: any, path?: any, progress?: () => { step(m: any): void, finish(): void } }} [host]
 *   node:fs and node:path where the runtime has them; a terminal's progress line (Node)
 */
export function cookbook(tinker, host = {}) {
  const { TinkerTokenCompleter, TinkerMessageCompleter } = completers(tinker);
  const { fs, path } = host;

  /**
   * `supervised.train(config, { service, signal, onMetrics, store })`.
   * @param {any} config
   * @param {{ service?: any, signal?: AbortSignal, onMetrics?: (m: Record<string, unknown>) => void, store?: RunStore, progress?: boolean }} [options]
   */
  async function train(config, options = {}) {
    return run('supervised.train', config, options, async (cfg, json, checkpoints, now) => {
      const text = await datasetText(config.dataset_builder, fs);
      return new tinker.__CookbookSft(json({ ...cfg, dataset_builder: builderParams(config.dataset_builder) }), text, undefined, checkpoints, now);
    });
  }

  /**
   * `preference.trainDpo(config, { service, signal, onMetrics, store })`: `train_dpo.main`.
   * @param {any} config
   * @param {{ service?: any, signal?: AbortSignal, onMetrics?: (m: Record<string, unknown>) => void, store?: RunStore, progress?: boolean }} [options]
   */
  async function trainDpo(config, options = {}) {
    return run('preference.trainDpo', config, options, async (cfg, json, checkpoints, now) => {
      const [train, test] = await comparisonTexts(config.dataset_builder, fs);
      const { comparison_builder: _c, ...builder } = config.dataset_builder;
      return new tinker.__CookbookSft(json({ ...cfg, dataset_builder: { ...builder, comparison_builder: {} } }), train, test, checkpoints, now);
    });
  }

  /**
   * A method's run: the options checked, the state machine made by `make` (from the
   * config without the user's evaluators), the client created, then the loop.
   * @param {string} what @param {any} config @param {any} options
   * @param {(cfg: any, json: (v: any) => string, checkpoints: string, now: number) => Promise<any>} make
   */
  async function run(what, config, options, make) {
    if (config === null || typeof config !== 'object') {
      throw new TypeError(`${what} config: must be an object, got ${config === null ? 'null' : typeof config}`);
    }
    const { service, signal, onMetrics: userMetrics, store, progress } = CookbookRunOptions.read(options);
    if (!(service instanceof tinker.ServiceClient)) {
      throw new TypeError(`${what} options.service: must be a ServiceClient of tinker-wasm/cookbook (the cookbook runs on its own build of the module: take ServiceClient from that entry, not from tinker-wasm)`);
    }
    if (userMetrics !== undefined && typeof userMetrics !== 'function') {
      throw new TypeError(`${what} options.onMetrics: must be a function, got ${typeof userMetrics}`);
    }
    const bar = progress !== false && host.progress ? host.progress() : null;
    const onMetrics = bar ? (/** @type {any} */ m) => (bar.step(m), userMetrics?.(m)) : userMetrics;
    const files = store ?? runStore(config.log_path);
    const builtEvaluators = { frequent: buildEvaluators(config, 'evaluator_builders'), infrequent: buildEvaluators(config, 'infrequent_evaluator_builders') };
    const { evaluator_builders: _e, infrequent_evaluator_builders: _i, ...cfg } = config;
    const now = () => Date.now() / 1000;
    // The crate reads the config (its defaults, its errors): as JSON, non-finite numbers
    // kept as their names so that they are refused rather than read as null.
    const json = (/** @type {any} */ v) => JSON.stringify(v, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x));
    const sm = await make(cfg, json, (await files.read('checkpoints.jsonl')) ?? '', now());
    try {
      // The tokenizer first (no request): bad rows or a renderer that does not fit the
      // model are refused before anything is sent.
      const tokenizerModel = cfg.dataset_builder?.common_config?.model_name_for_tokenizer ?? cfg.model_name;
      sm.setTokenizer(await service.getTokenizer(tokenizerModel));
      warnIfRendererNotRecommended(cfg.model_name, cfg.renderer_name ?? cfg.dataset_builder?.common_config?.renderer_name);
      const start = sm.start();
      if (start.path !== undefined) await checkRendererName(service, start.path, start.user_metadata.renderer_name);
      const tc = await createClient(service, start, signal);
      const metricsText = (await files.read('metrics.jsonl')) ?? '';
      const cut = sm.truncateMetrics(metricsText);
      if (cut) {
        await files.write(cut[0], metricsText);
        await files.write('metrics.jsonl', cut[1]);
      }
      const dpo = what === 'preference.trainDpo';
      // train_dpo: the reference is a sampler on the starting weights.
      const reference = dpo ? await tc.saveWeightsAndGetSamplingClient() : null;
      try {
        await loop(sm, tc, files, { signal, onMetrics, now, evaluators: builtEvaluators, service, reference });
      } finally {
        bar?.finish();
      }
      return { stopped: sm.stoppedAt !== undefined, stopped_at_step: sm.stoppedAt ?? null };
    } finally {
      sm.free();
    }
  }

  /**
   * `model_info.warn_if_renderer_not_recommended`: a renderer the cookbook does not
   * recommend for a model it knows is worth a warning.
   * @param {string} model @param {string | undefined} renderer
   */
  function warnIfRendererNotRecommended(model, renderer) {
    let recommended;
    try {
      recommended = tinker.getRecommendedRendererNames(model);
    } catch {
      return; // a model the cookbook does not know
    }
    if (renderer !== undefined && !recommended.includes(renderer)) {
      console.warn(`tinker-wasm/cookbook: renderer ${JSON.stringify(renderer)} is not recommended for model ${JSON.stringify(model)}; recommended: ${recommended.map((r) => JSON.stringify(r)).join(', ')}`);
    }
  }

  /**
   * `check_renderer_name_for_checkpoint_async`: the checkpoint's training run says which
   * renderer trained it; a different one than this run's is worth a warning (a failed
   * lookup too), as the cookbook logs it.
   * @param {any} service @param {string} path @param {string} expected
   */
  async function checkRendererName(service, path, expected) {
    try {
      const trainingRun = await service.restClient().getTrainingRunByTinkerPath(path);
      const used = trainingRun?.user_metadata?.renderer_name;
      if (used !== undefined && used !== null && used !== expected) {
        console.warn(`tinker-wasm/cookbook: renderer mismatch for checkpoint ${path}: checkpoint=${used} current=${expected}`);
      }
    } catch (e) {
      console.warn(`tinker-wasm/cookbook: could not fetch renderer metadata for checkpoint ${path}: ${/** @type {any} */ (e)?.message ?? e}`);
    }
  }

  /** The training client the run starts from. @param {any} service @param {any} s @param {AbortSignal | undefined} signal */
  function createClient(service, s, signal) {
    // The signal cancels the creation itself: before the run has a client there is nothing
    // to finish or save.
    const o = { signal };
    return s.base_model !== undefined
      ? service.createLoraTrainingClient({ base_model: s.base_model, rank: s.rank, user_metadata: s.user_metadata }, o)
      : s.with_optimizer
        ? service.createTrainingClientFromStateWithOptimizer(s.path, { user_metadata: s.user_metadata }, o)
        : service.createTrainingClientFromState(s.path, { user_metadata: s.user_metadata }, o);
  }

  /**
   * The steps, as the cookbook sends them: each step's evaluation, then its
   * forward_backward and optim_step, the oldest finished once too many are in flight.
   * @param {any} run @param {any} tc @param {RunStore} files
   * @param {{ signal?: AbortSignal, onMetrics?: (m: any) => void, now: () => number, evaluators: { frequent: any[], infrequent: any[] }, service: any, reference: any }} o  (reference: a DPO run's sampler on its starting weights, else null)
   */
  async function loop(run, tc, files, { signal, onMetrics, now, evaluators, service, reference }) {
    const c = { run, tc, files, now, service, rolling: Promise.resolve(), periodic: Promise.resolve() };
    const inFlight = [];
    for (;;) {
      if (signal?.aborted) run.stop();
      const step = run.nextStep();
      if (step === undefined) break;
      // train_dpo's step: the due save (a rolling one too, in line), the evaluations,
      // the reference logprobs, the DPO loss, then the optimizer step.
      if (step.save !== undefined) await save(c, step.save);
      if (reference) {
        await evals(run, tc, step, evaluators);
        const ref = await Promise.all(run.testPrompts(true).map(async (/** @type {any} */ p) => floats(await reference.computeLogprobs(p))));
        const out = await tc.forwardBackwardCustom(step.data, (/** @type {any} */ _d, /** @type {Float32Array[]} */ lp) => {
          // The loss, then each datum's gradients, in one list.
          const flat = run.dpoLoss(ref, lp);
          let at = 1;
          return { loss: flat[0], gradients: lp.map((l) => flat.subarray(at, (at += l.length))) };
        });
        await tc.optimStep(step.adam);
        const [line, metrics] = run.finishEnd([], out.metrics);
        await files.append('metrics.jsonl', line);
        onMetrics?.(metrics);
        continue;
      }
      await evals(run, tc, step, evaluators);
      inFlight.push([tc.forwardBackward(step.data, 'cross_entropy'), tc.optimStep(step.adam)]);
      if (run.mustFinish) await finish(c, inFlight.shift(), onMetrics);
    }
    while (inFlight.length) await finish(c, inFlight.shift(), onMetrics);
    // `save_final_async`: the pending saves, the last save, then the last rolling
    // checkpoint deleted.
    await c.periodic;
    await c.rolling;
    const last = run.endSave();
    if (last !== undefined) await save(c, last);
    const leftover = run.finalize();
    if (leftover !== undefined) await deleteRolling(c, leftover);
  }

  /**
   * A step's evaluations: the frequent evaluators (the held-out NLL last), then the
   * infrequent ones.
   * @param {any} run @param {any} tc @param {any} step @param {{ frequent: any[], infrequent: any[] }} evaluators
   */
  async function evals(run, tc, step, evaluators) {
    if (step.eval) await runEvals(run, tc, step.step, [...evaluators.frequent, ...(run.hasTestData ? [NLL] : [])]);
    if (step.infrequent) await runEvals(run, tc, step.step, evaluators.infrequent);
  }

  /**
   * `run_evals`: the evaluators in order, sampling ones on one snapshot of the current
   * weights (taken when the first needs it); their metrics go into the step's line.
   * @param {any} run @param {any} tc @param {number} step @param {any[]} list
   */
  async function runEvals(run, tc, step, list) {
    /** @type {any} */
    let sampler = null;
    for (const e of list) {
      if (e === NLL || e instanceof SamplingClientEvaluator) sampler ??= await tc.saveWeightsAndGetSamplingClient();
      if (e === NLL) {
        const logprobs = await Promise.all(run.testPrompts(false).map((/** @type {any} */ p) => sampler.computeLogprobs(p)));
        run.recordEval(step, logprobs.map(floats));
      } else {
        run.recordMetrics(step, await e.evaluate(e instanceof SamplingClientEvaluator ? sampler : tc));
      }
    }
  }

  /** `finish_batch`: the due save, then the step's results and its metrics line. */
  async function finish(/** @type {any} */ c, /** @type {any[]} */ [fwd, opt], /** @type {any} */ onMetrics) {
    const { run, files, now } = c;
    // `maybe_save_async`: a periodic save in line (in the background with
    // async_periodic_saves, the previous one awaited first); then the pending rolling save
    // is awaited, and a due one starts in the background.
    const due = run.finishBegin(now());
    if (due?.background) {
      await c.periodic;
      c.periodic = save(c, due).catch((/** @type {any} */ e) => console.warn(`tinker-wasm/cookbook: background checkpoint ${due.name} failed: ${e?.message ?? e}`));
    } else if (due !== undefined && !due.rolling) await save(c, due);
    await c.rolling;
    if (due?.rolling) {
      c.rolling = save(c, due).catch((/** @type {any} */ e) => console.warn(`tinker-wasm/cookbook: rolling checkpoint ${due.name} failed: ${e?.message ?? e}`));
    }
    const out = await fwd;
    const optimized = await opt;
    const [line, metrics] = run.finishEnd(out.loss_fn_outputs.map((/** @type {any} */ o) => o.logprobs.data), optimized?.metrics ?? {});
    await files.append('metrics.jsonl', line);
    onMetrics?.(metrics);
  }

  /** A save: the state (and the sampler weights), its record, then the rolling checkpoint it replaces deleted. */
  async function save(/** @type {any} */ c, /** @type {any} */ order) {
    const { run, tc, files, now } = c;
    const params = order.ttl_seconds === undefined ? {} : { ttl_seconds: order.ttl_seconds };
    const state = tc.saveState(order.name, params);
    const sampler = order.both ? tc.saveWeightsForSampler(order.name, params) : undefined;
    const statePath = (await state).path;
    const samplerPath = sampler && (await sampler).path;
    const [line, replaced] = run.saved(order.name, statePath, samplerPath, now());
    await files.append('checkpoints.jsonl', line);
    if (replaced !== undefined) await deleteRolling(c, replaced);
  }

  /** Deletes a rolling checkpoint; a failure is only a warning (its TTL cleans up). */
  async function deleteRolling(/** @type {any} */ c, /** @type {string} */ path) {
    try {
      await c.service.restClient().deleteCheckpointFromTinkerPath(path);
    } catch (e) {
      console.warn(`tinker-wasm/cookbook: could not delete rolling checkpoint ${path} (its TTL will clean it up): ${/** @type {any} */ (e)?.message ?? e}`);
    }
  }

  /**
   * `rl.train(config, { service, signal, onMetrics, store })`: `rl.train.main` in its
   * synchronous mode. Each step rolls out a batch of groups from the dataset on a sampler of
   * the current weights, trains on their advantages, and saves every `save_every` steps.
   * @param {any} config
   * @param {{ service?: any, signal?: AbortSignal, onMetrics?: (m: Record<string, unknown>) => void, store?: RunStore }} [options]
   */
  async function rlTrain(config, options = {}) {
    if (config === null || typeof config !== 'object') throw new TypeError(`rl.train config: must be an object, got ${config === null ? 'null' : typeof config}`);
    const { dataset_builder: builder, evaluator_builders: _e, rollout_error_tolerance: tolerance, ...rest } = config;
    if (typeof builder !== 'function') throw new TypeError(`dataset_builder: must be an async function ({ tokenizer, renderer }) => [train, test?], got ${builder === null ? 'null' : typeof builder}`);
    const evaluators = samplingEvaluators(config);
    // The strategy stays here; the state machine learns whether it drops failed groups.
    const strategy = rolloutStrategy(tolerance, rest.model_name);
    const cfg = { ...rest, rollout_error_tolerance: strategy.catchesGroupErrors };
    return policyLoop(cfg, false, options, async (ctx, sm) => {
      const [train, test] = dataset(await builder(ctx), 'dataset_builder');
      if (test) evaluators.push({ test: await testBuilders(test) });
      // The reference of the KL penalty, once: `create_sampling_client(base_model, model_path)`.
      const scorers = [];
      for (const s of sm.scorers()) scorers.push(await ctx.service.createSamplingClient(s));
      return { length: train.length, batch: async (/** @type {number} */ i) => [await train.getBatch(i), undefined], scorers, evaluators, strategy };
    });
  }

  /**
   * `distillation.trainOnPolicy(config, { service, signal, onMetrics, store })`:
   * `distillation/train_on_policy.py`'s `main`. The student samples each dataset's prompts;
   * each datum's advantages are minus its reverse KL to its dataset's teacher (scored with
   * `computeLogprobs`); the rest is `rl.train`'s synchronous loop.
   * @param {any} config
   * @param {{ service?: any, signal?: AbortSignal, onMetrics?: (m: Record<string, unknown>) => void, store?: RunStore }} [options]
   */
  async function trainOnPolicy(config, options = {}) {
    if (config === null || typeof config !== 'object') throw new TypeError(`distillation.trainOnPolicy config: must be an object, got ${config === null ? 'null' : typeof config}`);
    const { dataset_configs: list, evaluator_builders: _e, ...rest } = config;
    if (!Array.isArray(list) || list.length === 0) throw new TypeError('dataset_configs: must be a list of one or more { dataset_builder, teacher_config, groups_per_batch }');
    list.forEach((d, i) => {
      if (typeof d?.dataset_builder !== 'function') throw new TypeError(`dataset_configs[${i}].dataset_builder: must be an async function ({ tokenizer, renderer }) => [train, test?], got ${typeof d?.dataset_builder}`);
    });
    const evaluators = samplingEvaluators(config);
    const cfg = { ...rest, dataset_configs: list.map(({ dataset_builder: _b, ...d }) => d) };
    return policyLoop(cfg, true, options, async (ctx, sm) => {
      // Per dataset, as `main` does it: its builder, then its teacher's sampler (a second one
      // on the checkpoint's weights when the teacher has one).
      const teachers = sm.scorers();
      const datasets = [];
      const scorers = [];
      for (const [i, d] of list.entries()) {
        const [train, test] = dataset(await d.dataset_builder(ctx), `dataset_configs[${i}].dataset_builder`);
        datasets.push(train);
        if (test) evaluators.push({ test: await testBuilders(test) });
        const t = teachers[i];
        let client = await ctx.service.createSamplingClient({ base_model: t.base_model });
        if (t.model_path !== undefined) client = await ctx.service.createSamplingClient(t);
        scorers.push(client);
      }
      // `CompositeDataset`: the shortest dataset's length; each step a batch of every dataset.
      const batch = async (/** @type {number} */ i) => {
        /** @type {any[]} */
        const builders = [];
        const indices = [];
        for (const [k, ds] of datasets.entries()) {
          const b = await ds.getBatch(i);
          builders.push(...b);
          indices.push(...b.map(() => k));
        }
        return /** @type {[any[], number[]]} */ ([builders, indices]);
      };
      return { length: Math.min(...datasets.map((d) => d.length)), batch, scorers, evaluators, strategy: new FailFast() };
    });
  }

  /**
   * The RL loops' `evaluator_builders`: functions that build SamplingClientEvaluators.
   * @param {any} config @returns {any[]}
   */
  function samplingEvaluators(config) {
    const built = buildEvaluators(config, 'evaluator_builders');
    built.forEach((e, i) => {
      if (!(e instanceof SamplingClientEvaluator)) throw new TypeError(`evaluator_builders[${i}]: must build a SamplingClientEvaluator (the RL loops evaluate samplers)`);
    });
    return built.map((e) => ({ sampling: e }));
  }

  /** `dataset_to_env_group_builders`: every batch's group builders, once. @param {any} test */
  async function testBuilders(test) {
    const out = [];
    for (let i = 0; i < test.length; i++) out.push(...(await test.getBatch(i)));
    return out;
  }

  /** A builder's `[train, test?]`. @param {any} built @param {string} field @returns {[any, any]} */
  function dataset(built, field) {
    const [train, test] = Array.isArray(built) ? built : [];
    for (const [k, d] of /** @type {[string, any][]} */ ([['train', train], ['test', test ?? {}]])) {
      if (d === null || typeof d !== 'object' || (k === 'train' || test) && (typeof d.getBatch !== 'function' || !Number.isInteger(d.length))) {
        throw new TypeError(`${field}: must return [train, test?], each an object with getBatch(index) and a whole-number length (the ${k} dataset is not)`);
      }
    }
    return [train, test ?? null];
  }

  /**
   * The evaluations before a step (and of the final weights), as `recordEval` takes them:
   * a user evaluator's metrics, or a test set's rollouts on `sampler` (`RLTestSetEvaluator`,
   * temperature 1). `rl.train` runs them concurrently, distillation one after another.
   * @param {any[]} evaluators @param {any} sampler @param {number} max_tokens @param {boolean} parallel @param {any} strategy
   */
  async function evaluate(evaluators, sampler, max_tokens, parallel, strategy) {
    const one = async (/** @type {any} */ e) => {
      if (e.sampling) return e.sampling.evaluate(sampler);
      const policy = new TinkerTokenCompleter({ sampling_client: sampler, max_tokens });
      return JSON.stringify(await Promise.all(e.test.map((/** @type {any} */ b) => rolloutGroup(b, policy, strategy))));
    };
    if (parallel) return Promise.all(evaluators.map(one));
    const out = [];
    for (const e of evaluators) out.push(await one(e));
    return out;
  }

  /**
   * The synchronous loop of `rl.train` and on-policy distillation (crates/cookbook's
   * rl_loop::Rl decides; this sends). `setup(ctx, sm)` builds the datasets and the
   * samplers the KL term scores on: `{ length, batch(i) → [builders, dataset indices?], scorers }`.
   * @param {any} cfg @param {boolean} distillation @param {any} options
   * @param {(ctx: any, sm: any) => Promise<{ length: number, batch: (i: number) => Promise<[any[], number[] | undefined]>, scorers: any[], evaluators: any[], strategy: any }>} setup
   */
  async function policyLoop(cfg, distillation, options, setup) {
    const { service, signal, onMetrics, store } = PolicyRunOptions.read(options);
    if (!(service instanceof tinker.ServiceClient)) {
      throw new TypeError(`options.service: must be a ServiceClient of tinker-wasm/cookbook (the cookbook runs on its own build of the module: take ServiceClient from that entry, not from tinker-wasm)`);
    }
    const files = store ?? runStore(cfg.log_path);
    const json = JSON.stringify(cfg, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x));
    const sm = new tinker.__CookbookRl(json, (await files.read('checkpoints.jsonl')) ?? '', distillation);
    try {
      const start = sm.start();
      if (start.path !== undefined && start.user_metadata.renderer_name !== undefined) await checkRendererName(service, start.path, start.user_metadata.renderer_name);
      const tc = await createClient(service, start, signal);
      const metricsText = (await files.read('metrics.jsonl')) ?? '';
      const cut = sm.truncateMetrics(metricsText);
      if (cut) {
        await files.write(cut[0], metricsText);
        await files.write('metrics.jsonl', cut[1]);
      }
      // The model's tokenizer by its name, as the cookbook's get_tokenizer(model_name).
      const tokenizer = await service.getTokenizer(cfg.model_name);
      const renderer = cfg.renderer_name ? new tinker.Renderer(cfg.renderer_name, tokenizer) : tinker.Renderer.forModel(cfg.model_name, tokenizer);
      const data = await setup({ tokenizer, renderer, service }, sm);
      sm.setBatches(data.length);
      sm.setEvaluators(data.evaluators.length > 0);
      const c = { tc, files, sm, service, scorers: data.scorers, stab: { record_stability_info: sm.recordsStabilityInfo }, rolling: Promise.resolve() };
      if (sm.isAsync) {
        const stopped = await asyncLoop(c, data, { cfg, signal, onMetrics });
        if (stopped) return stopped;
      } else {
        let sampler = await tc.saveWeightsAndGetSamplingClient(c.stab);
        const evals = () => evaluate(data.evaluators, sampler, cfg.max_tokens, !distillation, data.strategy);
        for (;;) {
          if (signal?.aborted) return await stop(c);
          const next = sm.nextStep();
          if (next === undefined) break;
          if (sm.evalDue(next[0])) sm.recordEval(await evals());
          const policy = new TinkerTokenCompleter({ sampling_client: sampler, max_tokens: cfg.max_tokens, temperature: cfg.temperature ?? 1.0 });
          const [builders, indices] = await data.batch(next[1]);
          const results = await Promise.all(builders.map((/** @type {any} */ b) => rolloutGroup(b, policy, data.strategy)));
          for (const g of results) sm.ingestRollout(g?.errors ?? [], g === null);
          // The groups the strategy kept (a dropped one's dataset index goes with it).
          const kept = results.flatMap((g, i) => (g === null ? [] : [[g, indices?.[i]]]));
          if (!kept.length) {
            // Every group dropped: a line without training, the same sampler.
            const [line, metrics] = sm.skipStep();
            await files.append('metrics.jsonl', line);
            onMetrics?.(metrics);
            continue;
          }
          const groups = kept.map(([g]) => g);
          let [line, metrics, due] = await trainPrepared(c, sm.prepare(JSON.stringify(groups), indices && kept.map(([, i]) => i)));
          sampler = await nextSampler(c, due);
          if (sm.computesPostKl) [line, metrics] = await postKl(c, sampler);
          await rolling(c, next[0] + 1);
          await files.append('metrics.jsonl', line);
          onMetrics?.(metrics);
        }
        // The final weights' evaluation (rl.train), then the token totals and the final save.
        if (sm.finalEvalDue()) await files.append('metrics.jsonl', sm.finalEvalLine(await evals()));
      }
      const [row, last] = sm.end();
      if (row) await files.append('metrics.jsonl', row);
      // `save_final_async` (or `finalize_async`): the pending rolling save, the final one,
      // then the last rolling checkpoint deleted.
      await c.rolling;
      if (last !== undefined) await rlSave(c, last);
      const leftover = sm.finalize();
      if (leftover !== undefined) await deleteRolling(c, leftover);
      return { stopped: false, stopped_at_step: null };
    } finally {
      sm.free();
    }
  }

  /** A run stopped by its signal: the save that lets it resume. @param {any} c */
  async function stop(c) {
    await c.rolling;
    const due = c.sm.stop();
    if (due !== undefined) await rlSave(c, due);
    return { stopped: true, stopped_at_step: c.sm.nextIndex };
  }

  /**
   * A prepared step trained: its KL scores, then every substep's forward_backward and
   * optim_step sent before any is awaited; `[line, metrics, save due]`.
   * @param {any} c @param {any[]} asked
   */
  async function trainPrepared(c, asked) {
    const { tc, sm } = c;
    const order = sm.train(await Promise.all(asked.map(([p, i]) => score(c.scorers[i], p))));
    const params = { loss_fn_config: order.loss_fn_config };
    const sent = order.substeps.map((/** @type {any} */ d) => [tc.forwardBackward(d, order.loss_fn, params), tc.optimStep(order.adam)]);
    const outs = await Promise.all(sent.map(([f]) => f));
    const optims = await Promise.all(sent.map(([, o]) => o));
    const training = outs.flatMap((o) => o.loss_fn_outputs.map((/** @type {any} */ x) => x.logprobs.data));
    return sm.finish(training, optims.at(-1)?.metrics ?? {});
  }

  /** `compute_post_kl`: the step's datums scored on the new weights; `[line, metrics]`. @param {any} c @param {any} sampler */
  async function postKl(c, sampler) {
    return c.sm.postKl(await Promise.all(c.sm.postKlSequences().map((/** @type {any} */ p) => score(sampler, p))));
  }

  /** The sampler of the new weights, or of the periodic save due. @param {any} c @param {any} due */
  async function nextSampler(c, due) {
    return due === undefined ? c.tc.saveWeightsAndGetSamplingClient(c.stab) : c.tc.createSamplingClient(await rlSave(c, due), c.stab);
  }

  /**
   * `do_async_training`: a dataloader feeding group builders through a queue of
   * `groups_per_batch`, one rollout worker per slot (a slot held from the rollout's start
   * until its group is trained), the training loop on the oldest completed groups, and
   * the evaluation loop on each new sampler; the state machine decides (rl_async).
   * Returns a stopped result, or null when the run finished.
   * @param {any} c @param {any} data @param {{ cfg: any, signal?: AbortSignal, onMetrics?: (m: any) => void }} o
   */
  async function asyncLoop(c, data, { cfg, signal, onMetrics }) {
    const { sm, tc, files } = c;
    const t0 = performance.now();
    const secs = () => (performance.now() - t0) / 1000;
    const first = sm.nextIndex;
    let sampler = await tc.createSamplingClient(await rlSave(c, sm.asyncStart()), c.stab);
    let samplerStep = first;
    let snapshotAt = secs();
    const cut = new AbortController();
    /** @type {Set<AbortController>} the rollouts in flight */
    const live = new Set();
    const slots = semaphore(sm.slots);
    const builders = channel(cfg.async_config.groups_per_batch);
    const wake = signalling();
    let workersDone = false;
    let trainingDone = false;
    /** @type {unknown} */
    let failure = null;
    const failed = (/** @type {unknown} */ e) => {
      if (!cut.signal.aborted) failure ??= e;
      wake.fire();
    };
    // Lines in arrival order, one append at a time (a store may read then write).
    let appended = Promise.resolve();
    const append = (/** @type {string} */ line) => (appended = appended.then(() => files.append('metrics.jsonl', line)));
    const dataloader = (async () => {
      for (let i = first; i < sm.endStep; i++) for (const b of (await data.batch(i % data.length))[0]) await builders.put(b);
      for (let w = 0; w < sm.slots; w++) await builders.put(null);
    })().catch(failed);
    const worker = async () => {
      for (let b; (b = await builders.get()) !== null; ) {
        await slots.acquire();
        if (cut.signal.aborted) return;
        const [s, step] = [sampler, samplerStep];
        const policy = new TinkerTokenCompleter({ sampling_client: s, max_tokens: cfg.max_tokens, temperature: cfg.temperature ?? 1.0 });
        // Its own controller (one listener per request in flight), aborted with the run's rollouts.
        const ctl = new AbortController();
        live.add(ctl);
        policy.signal = ctl.signal;
        try {
          const group = await rolloutGroup(b, policy, data.strategy);
          // Dropped by its strategy or for constant rewards: skipped, its slot freed.
          const kept = group !== null && sm.complete(JSON.stringify([group]), step);
          sm.ingestRollout(group?.errors ?? [], !kept);
          if (!kept) slots.release(1);
        } finally {
          live.delete(ctl);
        }
        wake.fire();
      }
    };
    const workers = Promise.all(Array.from({ length: sm.slots }, worker)).then(() => {
      workersDone = true;
      wake.fire();
    }, failed);
    // Evaluations on each new sampler (and the final weights), as event lines.
    let evalEnd = sm.stepsLeft ? sm.endStep : undefined;
    let lastEval = -1;
    const evaluationLoop = (async () => {
      if (!data.evaluators.length || !(cfg.eval_every ?? 20)) return;
      for (;;) {
        const shutting = trainingDone;
        const [s, step, at] = [sampler, samplerStep, snapshotAt];
        if (step !== lastEval && sm.evalDueAt(step, evalEnd)) {
          lastEval = step;
          const parts = await evaluate(data.evaluators, s, cfg.max_tokens, true, data.strategy);
          await append(sm.evalEventLine(step, parts, at, secs()));
        }
        if (shutting) return;
        await wake.next();
      }
    })().catch(failed);
    try {
      let i = first;
      while (sm.stepsLeft) {
        if (signal?.aborted) return await stop(c);
        while (!sm.batchReady(workersDone) && !workersDone && failure === null) await wake.next();
        if (failure !== null) throw failure;
        if (!sm.batchReady(workersDone)) break;
        const [step, asked, n] = sm.prepareAsync();
        let [line, metrics, due] = await trainPrepared(c, asked);
        const reuse = workersDone && due === undefined && sm.mayReuse(step + 1) && !sm.computesPostKl;
        if (!reuse) {
          sampler = await nextSampler(c, due);
          [samplerStep, snapshotAt] = [step + 1, secs()];
        }
        if (sm.computesPostKl) [line, metrics] = await postKl(c, sampler);
        slots.release(n);
        await rolling(c, step + 1);
        await append(line);
        onMetrics?.(metrics);
        wake.fire();
        i = step + 1;
      }
      // Sampling ran out early, or the final weights need a sampler for their evaluation.
      evalEnd = i > first ? i : undefined;
      if (samplerStep < i && sm.evalDueAt(i, evalEnd)) {
        sampler = await tc.saveWeightsAndGetSamplingClient(c.stab);
        [samplerStep, snapshotAt] = [i, secs()];
      }
      return null;
    } finally {
      trainingDone = true;
      cut.abort();
      for (const ctl of live) ctl.abort();
      builders.close();
      slots.release(sm.slots);
      wake.fire();
      await Promise.allSettled([dataloader, workers]);
      await evaluationLoop;
      await appended;
      if (failure !== null) throw failure;
    }
  }

  /** A counting semaphore (`asyncio.Semaphore`). @param {number} n */
  function semaphore(n) {
    /** @type {(() => void)[]} */
    const waiting = [];
    return {
      acquire: () => (n > 0 ? (n--, Promise.resolve()) : new Promise((r) => waiting.push(() => r(undefined)))),
      release: (/** @type {number} */ k) => {
        for (; k > 0; k--) {
          const w = waiting.shift();
          if (w) w();
          else n++;
        }
      },
    };
  }

  /** A bounded queue (`asyncio.Queue(maxsize)`); once closed, gets give null and puts return. @param {number} size */
  function channel(size) {
    /** @type {any[]} */
    const items = [];
    /** @type {((x: any) => void)[]} */
    const takers = [];
    /** @type {(() => void)[]} */
    const putters = [];
    let closed = false;
    return {
      async put(/** @type {any} */ x) {
        while (!closed && items.length >= size) await new Promise((r) => putters.push(() => r(undefined)));
        if (closed) return;
        const t = takers.shift();
        if (t) t(x);
        else items.push(x);
      },
      async get() {
        if (items.length) {
          const x = items.shift();
          putters.shift()?.();
          return x;
        }
        if (closed) return null;
        return new Promise((r) => takers.push(r));
      },
      close() {
        closed = true;
        for (const t of takers.splice(0)) t(null);
        for (const p of putters.splice(0)) p();
      },
    };
  }

  /** Wakes every waiter on each `fire()` (a condition without a lock). */
  function signalling() {
    /** @type {() => void} */
    let fire = () => {};
    let next = new Promise((r) => (fire = () => r(undefined)));
    return {
      next: () => next,
      fire() {
        const f = fire;
        next = new Promise((r) => (fire = () => r(undefined)));
        f();
      },
    };
  }

  /**
   * `score_sequences` / `compute_logprobs` of one sequence on `client`: `[its prompt
   * logprobs after the first position, prompt tokens cached, tokens sampled]`.
   * @param {any} client @param {any} prompt
   */
  async function score(client, prompt) {
    const r = await client.sample({ prompt, num_samples: 1, sampling_params: { max_tokens: 1 }, include_prompt_logprobs: true });
    const lps = Array.from(r.prompt_logprobs ?? []).slice(1);
    const at = lps.findIndex((x) => typeof x !== 'number');
    if (lps.length === 0 || at >= 0) throw new TypeError(`the scoring sampler returned no logprob at position ${at + 1} of a ${lps.length + 1}-token sequence`);
    const sampled = r.sequences.reduce((/** @type {number} */ n, /** @type {any} */ q) => n + q.tokens.length, 0);
    return [Float32Array.from(lps), r.prompt_cache_hit_tokens ?? 0, sampled];
  }

  /** An RL save (the state and the sampler weights) and its record; returns the sampler path. */
  async function rlSave(/** @type {any} */ c, /** @type {any} */ order) {
    const params = order.ttl_seconds === undefined ? {} : { ttl_seconds: order.ttl_seconds };
    const state = c.tc.saveState(order.name, params);
    // A rolling save is the state alone.
    const sampler = order.rolling ? undefined : c.tc.saveWeightsForSampler(order.name, params);
    const [s, w] = [(await state).path, sampler && (await sampler).path];
    const [line, replaced] = c.sm.saved(order.name, s, w);
    // Records in the order the saves finish, one append at a time (a store may read then write).
    await (c.records = (c.records ?? Promise.resolve()).then(() => c.files.append('checkpoints.jsonl', line)));
    if (replaced !== undefined) await deleteRolling(c, replaced);
    return w;
  }

  /**
   * `maybe_save_rolling_async` after the step completing `step`: the pending rolling save
   * awaited, then a due one started in the background.
   * @param {any} c @param {number} step
   */
  async function rolling(c, step) {
    await c.rolling;
    const due = c.sm.rollingDue(step);
    if (due !== undefined) c.rolling = rlSave(c, due).catch((/** @type {any} */ e) => console.warn(`tinker-wasm/cookbook: rolling checkpoint ${due.name} failed: ${e?.message ?? e}`));
  }

  /** @param {unknown} logPath @returns {RunStore} */
  function runStore(logPath) {
    if (logPath === undefined) return memoryStore();
    if (typeof logPath !== 'string' || logPath === '') {
      throw new TypeError(`log_path: must be a folder's path, got ${JSON.stringify(logPath)}`);
    }
    if (!fs) throw new TypeError('log_path: this runtime has no file system; pass { store } (e.g. indexedDbStore(name)) instead');
    return folderStore(logPath, fs, path);
  }

  /**
   * `checkpoint_utils.get_last_checkpoint(log_path, required_key)`: the last record of the
   * run's `checkpoints.jsonl` that has `required_key`, or null.
   * @param {string | RunStore} logPathOrStore
   * @param {string} [requiredKey]
   */
  async function getLastCheckpoint(logPathOrStore, requiredKey = 'state_path') {
    const s = typeof logPathOrStore === 'string' ? runStore(logPathOrStore) : logPathOrStore;
    const text = (await s.read('checkpoints.jsonl')) ?? '';
    const rec = tinker.__cookbookLastCheckpoint(text, requiredKey);
    return rec === undefined ? null : JSON.parse(rec);
  }

  return {
    supervised: { train, FromConversationFileBuilder },
    rl: { train: rlTrain, Env, EnvGroupBuilder, ProblemEnv, ProblemGroupBuilder, MessageEnv, EnvFromMessageEnv, InitialObservationOverflow, FailFast, RetryOnFailure, MinViableGroup },
    distillation: { trainOnPolicy, PromptOnlyEnv, PromptOnlyDataset },
    preference: { trainDpo, DPODatasetBuilderFromComparisons, ComparisonBuilderFromJsonl },
    hyperparams: {
      /** `hyperparam_utils.get_lr(model_name, is_lora=True)`. @param {string} modelName @param {boolean} [isLora] */
      getLr: (modelName, isLora = true) => tinker.__cookbookGetLr(modelName, isLora),
    },
    checkpoints: { getLastCheckpoint },
    completers: { TokenCompleter, MessageCompleter, TokensWithLogprobs, TinkerTokenCompleter, TinkerMessageCompleter },
    evaluators: { TrainingClientEvaluator, SamplingClientEvaluator },
    memoryStore,
    indexedDbStore,
  };
}
