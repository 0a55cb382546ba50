// The RL panel: reinforcement learning with tinker-cookbook's rl.train
// (tinker-wasm/cookbook), its reward a function written in the page. Each step samples a
// group of answers per prompt on the current weights, scores each answer with the
// function, and trains on the answers' advantage over their group's mean; the chart shows
// the mean reward per step, and the last step's groups show what was sampled and scored.
import { $, isAbort, ms, num, setStatus, showError } from './ui.js';
import { rl } from 'tinker-wasm/cookbook';
import { familyName, isLoaded, modelInfo, tokenizerFor } from './tokenizers.js';
import { lossChart } from './chart.js';
import { parseModelKey } from './connection.js';
import { fillModelSelect, fillRendererSelect, modelSummary } from './pickers.js';

export const DEFAULT_REWARD = `// The reward of one answer: a finite number. Better than its group's mean is reinforced.
// Here: answers that mention the sea, short ones a little more.
const sea = /sea|ocean|wave|ship/i.test(answer) ? 1 : 0;
return sea + (answer.length < 80 ? 0.2 : 0);`;

export const DEFAULT_PROMPTS = ['Tell me about your day.', 'Describe a city you like.', 'What should I cook tonight?', 'Write one line of a song.'].join('\n');

/**
 * The page's reward function from its code (the body of `(prompt, answer) => number`);
 * throws a TypeError naming the problem when it does not compile.
 */
export function compileReward(code) {
  let f;
  try {
    f = new Function('prompt', 'answer', code);
  } catch (e) {
    throw Object.assign(new TypeError(`the reward function does not compile: ${e.message}`), { field: 'reward' });
  }
  return (prompt, answer) => {
    const r = f(prompt, answer);
    if (typeof r !== 'number' || !Number.isFinite(r)) throw new TypeError(`the reward function returned ${typeof r === 'number' ? r : JSON.stringify(r) ?? typeof r} for the answer ${JSON.stringify(answer.slice(0, 60))}: it must return a finite number`);
    return r;
  };
}

/** One prompt, one answer; the group scores the answers with the page's function. */
class PromptEnv extends rl.Env {
  constructor(prompt, renderer) {
    super();
    [this.prompt, this.renderer] = [prompt, renderer];
  }

  async initialObservation() {
    return [this.renderer.buildGenerationPrompt([{ role: 'user', content: this.prompt }]), this.renderer.stopSequences];
  }

  async step(action) {
    const { message } = this.renderer.parseResponse(action);
    this.answer = typeof message.content === 'string' ? message.content : message.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
    return { reward: 0, episode_done: true, metrics: {} };
  }
}

class ScoredGroup extends rl.EnvGroupBuilder {
  constructor(prompt, renderer, size, reward, seen) {
    super();
    Object.assign(this, { prompt, renderer, size, reward, seen });
  }

  async makeEnvs() {
    return Array.from({ length: this.size }, () => new PromptEnv(this.prompt, this.renderer));
  }

  async computeGroupRewards(_trajectories, envs) {
    const rewards = envs.map((e) => this.reward(this.prompt, e.answer));
    this.seen.push({ prompt: this.prompt, answers: envs.map((e, i) => ({ text: e.answer, reward: rewards[i] })) });
    return rewards.map((r) => [r, {}]);
  }
}

export function rlPanel(app) {
  const el = {
    form: $('#rl-form'), model: $('#rl-model'), renderer: $('#rl-renderer'), info: $('#rl-model-info'), prompts: $('#rl-prompts'), reward: $('#rl-reward'),
    steps: $('#rl-steps'), groups: $('#rl-groups'), groupSize: $('#rl-group-size'), maxTokens: $('#rl-max-tokens'), lr: $('#rl-lr'), temperature: $('#rl-temperature'),
    run: $('#rl-run'), cancel: $('#rl-cancel'), progress: $('#rl-progress'), status: $('#rl-status'), error: $('#rl-error'), chart: $('#rl-chart'), sampled: $('#rl-sampled'),
  };
  const chart = lossChart(el.chart, { name: 'Reward', unit: 'mean reward' });
  let op = null;

  function pickModel() {
    if (!el.model.value) return;
    const baseModel = parseModelKey(el.model.value).id;
    fillRendererSelect(el.renderer, baseModel, { raw: false });
    el.info.textContent = modelSummary(baseModel);
  }

  function busy(on) {
    el.run.disabled = on || !app.conn;
    el.cancel.disabled = !on;
    el.form.setAttribute('aria-busy', String(on));
  }

  /** The groups of a step: each prompt, its answers and their rewards (the best first). */
  function showGroups(step, groups) {
    el.sampled.dataset.step = String(step);
    el.sampled.replaceChildren(
      ...groups.map((g) => {
        const sec = document.createElement('section');
        sec.className = 'group';
        const h = document.createElement('h4');
        h.textContent = g.prompt;
        const ol = document.createElement('ol');
        for (const a of [...g.answers].sort((x, y) => y.reward - x.reward)) {
          const li = document.createElement('li');
          li.dataset.reward = String(a.reward);
          const r = document.createElement('span');
          r.className = 'reward';
          r.textContent = a.reward.toFixed(2);
          li.append(r, ' ', a.text || '(empty)');
          ol.append(li);
        }
        sec.append(h, ol);
        return sec;
      }),
    );
  }

  /** The form as rl.train's config (throws, naming the field, on bad input). */
  function readConfig(seen) {
    const prompts = el.prompts.value.split('\n').map((p) => p.trim()).filter(Boolean);
    if (!prompts.length) throw Object.assign(new TypeError('write at least one prompt'), { field: 'prompts' });
    const reward = compileReward(el.reward.value);
    const [steps, groups, size] = [num(el.steps, { integer: true }), num(el.groups, { integer: true }), num(el.groupSize, { integer: true })];
    if (size < 2) throw Object.assign(new RangeError('answers per prompt: at least 2 (a reward counts against its group)'), { field: 'group size' });
    const baseModel = parseModelKey(el.model.value).id;
    return {
      model_name: baseModel,
      renderer_name: el.renderer.value,
      learning_rate: num(el.lr),
      max_tokens: num(el.maxTokens, { integer: true }),
      temperature: num(el.temperature),
      save_every: 0,
      lora_rank: 8,
      dataset_builder: async ({ renderer }) => [
        {
          length: steps,
          getBatch: (i) => Array.from({ length: groups }, (_, k) => new ScoredGroup(prompts[(i * groups + k) % prompts.length], renderer, size, reward, seen)),
        },
      ],
    };
  }

  async function train() {
    if (op?.active || !app.conn) return;
    showError(el.error, null);
    const seen = [];
    let config;
    try {
      config = readConfig(seen);
    } catch (e) {
      showError(el.error, e);
      setStatus(el.status, 'failed', 'Check the inputs.');
      return;
    }
    const steps = num(el.steps, { integer: true });
    const current = app.activity.start({ title: `RL · ${config.model_name} · ${steps} steps`, kinds: ['CreateModel', 'Sample', 'ForwardBackward', 'OptimStep', 'SaveWeightsForSampler'] });
    op = current;
    app.panelOps.set('panel-rl', current);
    busy(true);
    chart.reset(steps);
    el.sampled.replaceChildren();
    el.progress.max = steps;
    el.progress.value = 0;
    const say = (state, text) => {
      setStatus(el.status, state, text);
      current.setPhase(text);
    };
    current.onChange((o) => {
      if (o.state === 'cancelling') setStatus(el.status, 'cancelling', 'Stopping after the step in flight…');
    });
    const t0 = performance.now();
    let done = 0;
    try {
      const { family } = modelInfo(config.model_name);
      if (family && !isLoaded(family)) say('running', `Loading the ${familyName(family)} tokenizer…`);
      await tokenizerFor(config.model_name);
      current.check();
      say('running', `Creating a LoRA run on ${config.model_name}…`);
      const result = await rl.train(config, {
        service: app.conn.svc,
        signal: current.signal,
        onMetrics: (m) => {
          done += 1;
          const reward = m['env/all/reward/total'];
          chart.add(reward);
          showGroups(m.step, seen.splice(0));
          el.progress.value = done;
          say('running', `Step ${m.step + 1} of ${steps} · mean reward ${reward.toFixed(3)}`);
        },
      });
      if (result.stopped) {
        current.fail(Object.assign(new Error('stopped'), { name: 'AbortError' }));
        chart.stop(done ? null : 'Cancelled before the first step');
        setStatus(el.status, 'cancelled', `Cancelled after ${done} step${done === 1 ? '' : 's'} of ${steps}.`);
        return;
      }
      const r = chart.losses;
      current.finish(r.length ? `reward ${r[0].toFixed(2)} → ${r.at(-1).toFixed(2)}` : 'finished');
      setStatus(el.status, 'done', `Trained ${done} step${done === 1 ? '' : 's'} in ${ms(performance.now() - t0)}: mean reward ${r[0].toFixed(3)} → ${r.at(-1).toFixed(3)}.`);
    } catch (e) {
      current.fail(e);
      chart.stop(done ? null : current.state === 'cancelled' ? 'Cancelled before the first step' : 'Failed before the first step');
      if (current.state === 'cancelled') {
        setStatus(el.status, 'cancelled', 'Cancelled.');
        if (!isAbort(e)) showError(el.error, e);
      } else {
        setStatus(el.status, 'failed', `Training failed after ${done} step${done === 1 ? '' : 's'}.`);
        showError(el.error, e);
      }
    } finally {
      busy(false);
    }
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
  el.model.addEventListener('change', () => pickModel());
  if (!el.reward.value.trim()) el.reward.value = DEFAULT_REWARD;
  if (!el.prompts.value.trim()) el.prompts.value = DEFAULT_PROMPTS;
  busy(false);

  return {
    el,
    chart,
    busy,
    setModels(models) {
      fillModelSelect(el.model, models, { checkpoints: false, trainableOnly: true, prefer: app.config.defaultModel });
      pickModel();
    },
  };
}
