// Runs tinker-wasm/cookbook's rl.train in Node with tinker-cookbook's arithmetic environment
// (recipes/math_rl/arithmetic_env.py) written in JS, with the same arguments as
// tests/cookbook/run_rl.py runs the cookbook's own rl.train.main, so that
// tests/cookbook/sft_differential.py can compare the two request logs.
import { ServiceClient, Tokenizer, rl } from '../../pkg/cookbook/index.js';
import { localService } from './local-service.mjs';
import { arithmetic, ArithmeticEnv } from '../../examples/rl-arithmetic.mjs';

const argv = process.argv.slice(2);
const postKl = argv.includes('--compute-post-kl');
if (postKl) argv.splice(argv.indexOf('--compute-post-kl'), 1);
// --cpu-report (make bench): the client CPU between the first and the last step's metrics.
const cpuReport = argv.includes('--cpu-report');
if (cpuReport) argv.splice(argv.indexOf('--cpu-report'), 1);
const cpuMarks = [];
const removeConstant = argv.includes('--remove-constant-reward-groups');
if (removeConstant) argv.splice(argv.indexOf('--remove-constant-reward-groups'), 1);
const a = new Map();
for (let i = 0; i < argv.length; i += 2) a.set(argv[i].replace(/^--/, ''), argv[i + 1]);
const num = (k, d) => (a.has(k) ? Number(a.get(k)) : d);
const tokDir = a.get('tokenizer-dir');
const model = a.get('model') ?? 'Qwen/Qwen3-8B';

// Failures as run_rl.py injects them: an answer's step (RuntimeError), a group's grading (ValueError).
const named = (name, message) => Object.assign(new Error(message), { name });
if (a.has('fail-mod')) {
  const step = ArithmeticEnv.prototype.step;
  ArithmeticEnv.prototype.step = async function (action) {
    if ((this.x + this.y) % num('fail-mod') === 0 && action[0] % 2 === 0) throw named('RuntimeError', `the grader of ${this.x} + ${this.y} is down`);
    return step.call(this, action);
  };
}
if (a.has('group-fail-mod')) {
  const rewards = rl.ProblemGroupBuilder.prototype.computeGroupRewards;
  rl.ProblemGroupBuilder.prototype.computeGroupRewards = async function (trajectories, envs) {
    if ((envs[0].x + envs[0].y) % num('group-fail-mod') === 1) throw named('ValueError', 'no group reward');
    return rewards.call(this, trajectories, envs);
  };
}
const tolerance = { none: undefined, true: true, minviable: new rl.MinViableGroup({ min_successful: 1, max_retries: 0 }) }[a.get('tolerance') ?? 'none'];
const service = localService({ ServiceClient, Tokenizer }, a.get('base-url'), tokDir);
try {
  await rl.train(
    {
      learning_rate: 1e-4,
      dataset_builder: arithmetic({ batch_size: num('batch-size', 2), group_size: num('group-size', 3), n_batches: num('n-batches', 3), test_batches: num('test-batches', 0) }),
      eval_every: num('eval-every', 20),
      ...(tolerance === undefined ? {} : { rollout_error_tolerance: tolerance }),
      rolling_save_every: num('rolling-save-every', 0),
      compute_post_kl: postKl,
      ...(a.has('async-off-policy') ? { async_config: { max_steps_off_policy: num('async-off-policy'), groups_per_batch: num('async-groups', 2), loss_fn: a.get('async-loss') ?? 'stable_reinforce' } } : {}),
      model_name: model,
      recipe_name: 'rl_local',
      max_tokens: num('max-tokens', 5),
      log_path: a.get('log-path'),
      renderer_name: a.get('renderer') ?? 'qwen3',
      save_every: num('save-every', 20),
      num_substeps: num('num-substeps', 1),
      loss_fn: a.get('loss-fn') ?? 'importance_sampling',
      remove_constant_reward_groups: removeConstant,
      kl_penalty_coef: num('kl-penalty-coef', 0),
      kl_discount_factor: num('kl-discount-factor', 0),
      ...(a.has('kl-reference-model') ? { kl_reference_config: { base_model: a.get('kl-reference-model') } } : {}),
      ...(a.has('max-steps') ? { max_steps: num('max-steps') } : {}),
    },
    {
      service,
      onMetrics: (m) => {
        if (cpuReport) {
          const u = process.cpuUsage();
          cpuMarks.push((u.user + u.system) / 1e6);
        }
        console.error(`step ${m.step}: reward ${m['env/all/reward/total']}`);
      },
    },
  );
  if (cpuReport) console.log(JSON.stringify({ steps: cpuMarks.length, cpu_s: cpuMarks.length > 1 ? cpuMarks.at(-1) - cpuMarks[0] : null }));
} finally {
  await service.close();
}
