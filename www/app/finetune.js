// The Fine-tune panel: chat examples trained with tinker-cookbook's supervised.train
// (tinker-wasm/cookbook): a schedule, a held-out split evaluated every few steps, periodic
// checkpoints, the run's files in IndexedDB (training again under the same name resumes
// it, after a reload too), a live chart of the training and held-out losses, the run's
// checkpoints, then a sampling client on the final weights.
import { $, isAbort, ms, num, setStatus, showError } from './ui.js';
import { supervised, checkpoints, indexedDbStore } from 'tinker-wasm/cookbook';
import { familyName, isLoaded, modelInfo, rendererFor, tokenizerFor } from './tokenizers.js';
import { lossChart } from './chart.js';
import { resultColumn } from './render.js';
import { modelKey, parseModelKey } from './connection.js';
import { modelLabel } from './sample.js';
import { fillModelSelect, fillRendererSelect, modelSummary } from './pickers.js';

/** The IndexedDB database of a run's files (checkpoints.jsonl, metrics.jsonl). */
const runStore = (name) => indexedDbStore(`tinker-playground-run:${name}`);
/** The last run's name, to resume it after a reload. */
const LAST_RUN = 'tinker-playground:last-run';

/**
 * Parses chat examples: JSONL (one `{"messages": […]}` or `[…]` per line) or one JSON
 * array of those. Returns `{ examples, errors }`; errors name the line.
 */
export function parseExamples(text) {
  const examples = [];
  const errors = [];
  const t = text.trim();
  if (!t) return { examples, errors: ['no examples'] };
  let items;
  if (t.startsWith('[') && !t.includes('\n{')) {
    try {
      const v = JSON.parse(t);
      items = (Array.isArray(v[0]) || v[0]?.messages ? v : [v]).map((x, i) => [`item ${i + 1}`, x]);
    } catch {
      items = null;
    }
  }
  items ??= t.split('\n').map((line, i) => [`line ${i + 1}`, line]).filter(([, l]) => l.trim()).map(([where, line]) => {
    try {
      return [where, JSON.parse(line)];
    } catch (e) {
      errors.push(`${where}: not JSON (${e.message})`);
      return null;
    }
  }).filter(Boolean);
  for (const [where, v] of items) {
    const messages = Array.isArray(v) ? v : v?.messages;
    if (!Array.isArray(messages) || !messages.length) {
      errors.push(`${where}: expected {"messages": [...]}`);
      continue;
    }
    const bad = messages.findIndex((m) => typeof m?.role !== 'string' || typeof m?.content !== 'string');
    if (bad >= 0) {
      errors.push(`${where}: message ${bad + 1} needs a string role and content`);
      continue;
    }
    if (!messages.some((m) => m.role === 'assistant')) {
      errors.push(`${where}: no assistant message to learn from`);
      continue;
    }
    examples.push(messages.map(({ role, content }) => ({ role, content })));
  }
  return { examples, errors };
}

export function finetunePanel(app) {
  const el = {
    form: $('#ft-form'), model: $('#ft-model'), rank: $('#ft-rank'), renderer: $('#ft-renderer'), info: $('#ft-model-info'), examples: $('#ft-examples'),
    file: $('#ft-file'), reset: $('#ft-reset'), parse: $('#ft-parse'), epochs: $('#ft-epochs'), batch: $('#ft-batch'), test: $('#ft-test'), lr: $('#ft-lr'),
    schedule: $('#ft-schedule'), evalEvery: $('#ft-eval-every'), saveEvery: $('#ft-save-every'), runNote: $('#ft-run-note'),
    files: $('#ft-run-files'), checkpoints: $('#ft-checkpoints'),
    trainOn: $('#ft-train-on'), name: $('#ft-name'), run: $('#ft-run'), cancel: $('#ft-cancel'), progress: $('#ft-progress'),
    status: $('#ft-status'), error: $('#ft-error'), chart: $('#ft-chart'), after: $('#ft-after'), path: $('#ft-path'),
    tryForm: $('#ft-try'), tryPrompt: $('#ft-try-prompt'), tryRun: $('#ft-try-run'), compare: $('#ft-compare'),
    tryStatus: $('#ft-try-status'), tryError: $('#ft-try-error'), tryResults: $('#ft-try-results'),
  };
  const chart = lossChart(el.chart);
  let op = null;
  let trained = null; // { path, baseModel, renderer, tok, firstPrompt }
  let exampleSet = '';

  function checkExamples() {
    const { examples, errors } = parseExamples(el.examples.value);
    el.parse.textContent = errors.length ? `${examples.length} valid · ${errors.slice(0, 3).join('; ')}` : `${examples.length} example${examples.length === 1 ? '' : 's'}`;
    el.parse.dataset.examples = String(examples.length);
    el.parse.dataset.errors = String(errors.length);
    return { examples, errors };
  }

  /** The base model changed: its renderers (no raw text: training needs a chat template) and its description. */
  function pickModel() {
    if (!el.model.value) return;
    const baseModel = parseModelKey(el.model.value).id;
    fillRendererSelect(el.renderer, baseModel, { raw: false });
    el.info.textContent = modelSummary(baseModel);
    el.info.dataset.model = baseModel;
  }

  function busy(on) {
    el.run.disabled = on || !app.conn;
    el.cancel.disabled = !on;
    el.form.setAttribute('aria-busy', String(on));
  }

  /** The run's checkpoints (its checkpoints.jsonl), newest last. */
  async function showCheckpoints(store) {
    const text = (await store.read('checkpoints.jsonl')) ?? '';
    const records = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    el.checkpoints.replaceChildren(
      ...records.map((r) => {
        const li = document.createElement('li');
        li.dataset.name = r.name;
        li.dataset.samplerPath = r.sampler_path ?? '';
        const where = r.name === 'final' ? 'final' : `before epoch ${r.epoch + 1}, batch ${r.batch + 1}`;
        const code = document.createElement('code');
        code.textContent = r.sampler_path ?? r.state_path;
        li.append(`${r.name} (${where}): `, code);
        return li;
      }),
    );
    el.files.hidden = records.length === 0;
    return records;
  }

  /** The metrics a run logged so far (a resumed run's chart starts with them). */
  async function history(store) {
    const text = (await store.read('metrics.jsonl')) ?? '';
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  /** Plots a step's metrics line. */
  function plot(m) {
    if (m['test/nll'] !== undefined) chart.addEval(m.step, m['test/nll']);
    chart.add(m.train_mean_nll);
  }

  /** What the run name's files say, under the name: a resume, or a finished run. */
  async function describeRun() {
    const name = el.name.value;
    if (!name || !/^[A-Za-z0-9._-]+$/.test(name) || typeof indexedDB === 'undefined') return;
    const last = await checkpoints.getLastCheckpoint(runStore(name)).catch(() => null);
    if (name !== el.name.value) return;
    el.runNote.dataset.resume = last && last.name !== 'final' ? last.name : '';
    el.runNote.textContent = !last
      ? 'The run keeps its files in this browser (IndexedDB): training again under the same name resumes it, after a reload too.'
      : last.name === 'final'
        ? `Run ${name} has finished (its final checkpoint is ${last.sampler_path}); pick another name to train again.`
        : `Run ${name} stopped at its checkpoint ${last.name}: Train resumes it there.`;
  }

  /** The form as supervised.train's config (throws, naming the field, on bad input). */
  function readConfig() {
    const epochs = num(el.epochs, { integer: true });
    const batch = num(el.batch, { integer: true });
    const heldOut = num(el.test, { integer: true });
    const parsed = checkExamples();
    if (parsed.errors.length) throw Object.assign(new TypeError(`fix the examples first: ${parsed.errors.join('; ')}`), { field: 'examples' });
    if (el.name.value && !/^[A-Za-z0-9._-]+$/.test(el.name.value)) throw Object.assign(new TypeError('the run name may use letters, digits, . _ and -'), { field: 'name' });
    const examples = parsed.examples;
    return {
      examples,
      config: {
        model_name: parseModelKey(el.model.value).id,
        renderer_name: el.renderer.value,
        dataset_builder: new supervised.FromConversationFileBuilder({
          conversations: examples.map((messages) => ({ messages })),
          test_size: heldOut,
          common_config: { renderer_name: el.renderer.value, batch_size: batch || Math.max(1, examples.length - heldOut), train_on_what: el.trainOn.value },
        }),
        learning_rate: num(el.lr),
        lr_schedule: el.schedule.value,
        num_epochs: epochs,
        lora_rank: Number(el.rank.value),
        eval_every: num(el.evalEvery, { integer: true }),
        save_every: num(el.saveEvery, { integer: true }),
      },
    };
  }

  async function train() {
    if (op?.active || !app.conn) return;
    showError(el.error, null);
    let config;
    let examples;
    try {
      ({ config, examples } = readConfig());
    } catch (e) {
      showError(el.error, e);
      setStatus(el.status, 'failed', 'Check the inputs.');
      return;
    }
    const baseModel = config.model_name;
    const name = el.name.value || `playground-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-')}`;
    el.name.value = name;
    localStorage.setItem(LAST_RUN, name);
    const store = runStore(name);
    const current = app.activity.start({ title: `Fine-tune · ${baseModel} · ${config.num_epochs} epochs`, kinds: ['CreateModel', 'ForwardBackward', 'OptimStep', 'SaveWeights', 'SaveWeightsForSampler'] });
    op = current;
    app.panelOps.set('panel-finetune', current);
    busy(true);
    el.after.hidden = true;
    chart.reset(0);
    el.progress.max = 1;
    el.progress.value = 0;
    const say = (state, text) => {
      setStatus(el.status, state, text);
      current.setPhase(text);
    };
    current.onChange((o) => {
      if (o.state === 'cancelling') setStatus(el.status, 'cancelling', 'Stopping after the steps in flight…');
    });
    const t0 = performance.now();
    let done = 0;
    let total = 0;
    try {
      const { family } = modelInfo(baseModel);
      if (family && !isLoaded(family)) say('running', `Loading the ${familyName(family)} tokenizer…`);
      const tok = await tokenizerFor(baseModel);
      current.check();
      const renderer = rendererFor(baseModel, tok, el.renderer.value);
      // A resumed run: its chart starts with the steps it logged.
      (await history(store)).forEach(plot);
      const resumed = await checkpoints.getLastCheckpoint(store);
      say('running', resumed ? `Resuming run ${name} from its checkpoint ${resumed.name}…` : `Creating a rank-${config.lora_rank} LoRA run on ${baseModel}…`);
      const result = await supervised.train(config, {
        service: app.conn.svc,
        store,
        signal: current.signal,
        onMetrics: (m) => {
          plot(m);
          done += 1;
          // The cookbook's progress is (step + 1) / the run's steps.
          total = Math.round((m.step + 1) / m.progress);
          el.progress.value = m.progress;
          say('running', `Step ${m.step + 1} of ${total} · epoch ${m.epoch + 1} · loss ${m.train_mean_nll.toFixed(3)}${m['test/nll'] === undefined ? '' : ` · held-out ${m['test/nll'].toFixed(3)}`}`);
          void showCheckpoints(store);
        },
      });
      const records = await showCheckpoints(store);
      const last = records.at(-1);
      if (result.stopped) {
        // Stopped by Cancel: the steps in flight finished and the run saved where it stopped.
        current.fail(Object.assign(new Error('stopped'), { name: 'AbortError' }));
        chart.stop(done ? null : 'Cancelled before the first step');
        await describeRun();
        const saved = last && last.name !== 'final' ? `; saved before step ${result.stopped_at_step + 1} (checkpoint ${last.name}): Train resumes it` : '';
        setStatus(el.status, 'cancelled', `Cancelled after ${done} step${done === 1 ? '' : 's'}${total ? ` of ${total}` : ''}${saved}.`);
        return;
      }
      if (!last?.sampler_path) throw new Error(`run ${name} has no sampler checkpoint`);
      const path = last.sampler_path;
      say('running', 'Creating a sampler on the final weights…');
      const sampler = await app.conn.svc.createSamplingClient({ model_path: path }, { signal: current.signal });
      const key = modelKey('ckpt', path);
      app.conn.adoptSampler(key, sampler, baseModel);
      const prompt = examples[0].filter((m) => m.role !== 'assistant');
      trained = { key, path, baseModel, renderer, rendererName: el.renderer.value, tok, messages: prompt, examples };
      el.path.textContent = path;
      el.tryPrompt.value = prompt.filter((m) => m.role === 'user').at(-1)?.content ?? '';
      el.after.hidden = false;
      el.after.dataset.path = path;
      const losses = chart.losses;
      const text = done
        ? `Trained ${done} step${done === 1 ? '' : 's'} in ${ms(performance.now() - t0)}: loss ${losses[0].toFixed(3)} → ${losses.at(-1).toFixed(3)} per token. Run ${name}, checkpoint ${last.name}.`
        : `Run ${name} had already finished: checkpoint ${last.name}.`;
      current.finish(losses.length ? `loss ${losses[0].toFixed(2)} → ${losses.at(-1).toFixed(2)}` : 'finished');
      setStatus(el.status, 'done', text);
      await describeRun();
      app.refreshModels();
    } catch (e) {
      current.fail(e);
      chart.stop(current.state === 'cancelled' ? 'Cancelled before the first step' : 'Failed before the first step');
      if (current.state === 'cancelled') {
        setStatus(el.status, 'cancelled', 'Cancelled before the first step.');
        if (!isAbort(e)) showError(el.error, e);
      } else {
        setStatus(el.status, 'failed', `Training failed after ${done} step${done === 1 ? '' : 's'}.`);
        showError(el.error, e);
      }
    } finally {
      busy(false);
    }
  }

  async function trySample() {
    if (!trained || op?.active) return;
    showError(el.tryError, null);
    const current = app.activity.start({ title: `Sample · ${modelLabel(trained.key)}`, kinds: ['Sample'] });
    op = current;
    app.panelOps.set('panel-finetune', current);
    el.tryRun.disabled = true;
    setStatus(el.tryStatus, 'running', 'Sampling…');
    const t0 = performance.now();
    try {
      const messages = [...trained.messages.filter((m) => m.role === 'system'), { role: 'user', content: el.tryPrompt.value }];
      const prompt = trained.renderer.buildGenerationPrompt(messages);
      const ids = Uint32Array.from(prompt.chunks.flatMap((c) => [...c.tokens]));
      const sampler = await app.conn.samplingClient(trained.key, { signal: current.signal });
      const p = app.samplingParams();
      const res = await sampler.sample({ prompt: ids, num_samples: p.numSamples, sampling_params: { ...p.samplingParams, stop: p.stop ?? trained.renderer.stopSequences }, topk_sample_logprobs: p.alternatives || undefined }, { signal: current.signal });
      el.tryResults.replaceChildren(resultColumn({ key: trained.key, title: modelLabel(trained.key), subtitle: `fine-tuned ${trained.baseModel} · ${trained.rendererName}`, tok: trained.tok, promptIds: ids, res }));
      current.finish(`${res.sequences.length} samples`);
      setStatus(el.tryStatus, 'done', `Sampled in ${ms(performance.now() - t0)}.`);
    } catch (e) {
      current.fail(e);
      setStatus(el.tryStatus, current.state, current.state === 'cancelled' ? 'Cancelled.' : 'Sampling failed.');
      if (current.state !== 'cancelled') showError(el.tryError, e);
    } finally {
      el.tryRun.disabled = false;
    }
  }

  async function loadFile(file) {
    el.examples.value = await file.text();
    checkExamples();
  }

  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    train();
  });
  el.form.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      train();
    }
  });
  el.cancel.addEventListener('click', () => op?.cancel());
  el.name.addEventListener('input', () => void describeRun());
  el.examples.addEventListener('input', checkExamples);
  el.model.addEventListener('change', () => pickModel());
  el.file.addEventListener('change', () => el.file.files[0] && loadFile(el.file.files[0]));
  el.reset.addEventListener('click', () => {
    el.examples.value = exampleSet;
    checkExamples();
  });
  el.tryForm.addEventListener('submit', (e) => {
    e.preventDefault();
    trySample();
  });
  el.compare.addEventListener('click', async () => {
    if (!trained) return;
    await app.refreshModels();
    app.selectTab('tab-sample');
    // If the prompt is one of the training examples', score its answer too.
    const example = trained.examples.find((m) => m.filter((x) => x.role === 'user').at(-1)?.content === el.tryPrompt.value);
    app.sample.compareWith({
      a: modelKey('base', trained.baseModel),
      b: trained.key,
      user: el.tryPrompt.value,
      system: (example ?? trained.messages).find((m) => m.role === 'system')?.content ?? '',
      answer: example?.filter((m) => m.role === 'assistant').at(-1)?.content ?? '',
      renderer: trained.rendererName,
    });
  });
  busy(false);

  return {
    el,
    chart,
    busy,
    setModels(models) {
      fillModelSelect(el.model, models, { checkpoints: false, trainableOnly: true, prefer: app.config.defaultModel });
      pickModel();
    },
    setExampleSet(text) {
      exampleSet = text;
      if (!el.examples.value.trim()) el.examples.value = text;
      checkExamples();
    },
    setDefaults({ learningRate, epochs } = {}) {
      if (learningRate !== undefined) el.lr.value = String(learningRate);
      if (epochs !== undefined) el.epochs.value = String(epochs);
    },
    /** After a reload: the last run, when it can be resumed, under its name. */
    async restoreLastRun() {
      const name = localStorage.getItem(LAST_RUN);
      if (!name || el.name.value) return;
      const last = await checkpoints.getLastCheckpoint(runStore(name)).catch(() => null);
      if (last && last.name !== 'final') {
        el.name.value = name;
        await describeRun();
      }
    },
  };
}
