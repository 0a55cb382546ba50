"""Runs tinker-cookbook 0.6.1's own rl.train.main (synchronous mode) offline against a local
tinker-sim with its arithmetic environment (recipes/math_rl): the cookbook side of the RL
configurations of tests/cookbook/sft_differential.py. Same offline measures as run_sft.py."""
from __future__ import annotations
import argparse, asyncio, json, os, sys, time
import offline
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TINKER_API_KEY", "tml-local")
os.environ.setdefault("GIT_OPTIONAL_LOCKS", "0")
os.environ.setdefault("WANDB_MODE", "disabled")

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--log-path", required=True)
    p.add_argument("--tokenizer-dir", required=True)
    p.add_argument("--model", default="Qwen/Qwen3-8B")
    p.add_argument("--renderer", default="qwen3")
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--group-size", type=int, default=3)
    p.add_argument("--n-batches", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=5)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--num-substeps", type=int, default=1)
    p.add_argument("--loss-fn", default="importance_sampling")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--remove-constant-reward-groups", action="store_true")
    p.add_argument("--kl-penalty-coef", type=float, default=0.0)
    p.add_argument("--kl-discount-factor", type=float, default=0.0)
    p.add_argument("--kl-reference-model", default=None)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--async-off-policy", type=int, default=None, help="async_config.max_steps_off_policy (async mode)")
    p.add_argument("--async-groups", type=int, default=2, help="async_config.groups_per_batch")
    p.add_argument("--async-loss", default="stable_reinforce")
    p.add_argument("--test-batches", type=int, default=0, help="a test set of this many batches of arithmetic problems (RLTestSetEvaluator)")
    p.add_argument("--fail-mod", type=int, default=0, help="an answer whose first token id is even to x + y with (x + y) % N == 0 fails its step (RuntimeError)")
    p.add_argument("--group-fail-mod", type=int, default=0, help="a group with (x + y) % N == 1 fails its grading (ValueError)")
    p.add_argument("--rolling-save-every", type=int, default=0)
    p.add_argument("--compute-post-kl", action="store_true")
    p.add_argument("--tolerance", choices=["none", "true", "minviable"], default="none")
    p.add_argument("--cpu-report", action="store_true", help="print the client CPU between the first and last step (make bench)")
    a = p.parse_args()
    os.environ["TINKER_BASE_URL"] = a.base_url
    from tinker_cookbook.rl import train
    from tinker_cookbook.recipes.math_rl.arithmetic_env import ArithmeticDatasetBuilder
    offline.setup(a.model, a.tokenizer_dir, share_content_tokenizer=not a.cpu_report)
    from tinker_cookbook.recipes.math_rl import arithmetic_env
    from tinker_cookbook.rl.problem_env import ProblemGroupBuilder
    if a.fail_mod:
        step = arithmetic_env.ArithmeticEnv.step

        async def failing_step(self, action, *, extra=None):
            if (self.x + self.y) % a.fail_mod == 0 and action[0] % 2 == 0:
                raise RuntimeError(f"the grader of {self.x} + {self.y} is down")
            return await step(self, action, extra=extra)
        arithmetic_env.ArithmeticEnv.step = failing_step
    if a.group_fail_mod:
        rewards = ProblemGroupBuilder.compute_group_rewards

        async def failing_rewards(self, trajectory_group, env_group):
            e = env_group[0]
            if (e.x + e.y) % a.group_fail_mod == 1:
                raise ValueError("no group reward")
            return await rewards(self, trajectory_group, env_group)
        ProblemGroupBuilder.compute_group_rewards = failing_rewards
    from tinker_cookbook.rl.rollout_strategy import MinViableGroup
    tolerance = {"none": None, "true": True, "minviable": MinViableGroup(min_successful=1, max_retries=0)}[a.tolerance]
    builder = ArithmeticDatasetBuilder(batch_size=a.batch_size, model_name_for_tokenizer=a.model,
        renderer_name=a.renderer, n_batches=a.n_batches, group_size=a.group_size)
    if a.test_batches:
        import chz
        from tinker_cookbook.recipes.math_rl.arithmetic_env import ArithmeticDataset
        from tinker_cookbook.rl.types import RLDatasetBuilder

        @chz.chz
        class WithTest(RLDatasetBuilder):
            inner: ArithmeticDatasetBuilder

            async def __call__(self):
                train, _ = await self.inner()
                return train, ArithmeticDataset(batch_size=2, renderer=train.renderer, group_size=2, n_batches=a.test_batches)
        builder = WithTest(inner=builder)
    config = train.Config(learning_rate=1e-4, dataset_builder=builder, model_name=a.model,
        recipe_name="rl_local", max_tokens=a.max_tokens, log_path=a.log_path, renderer_name=a.renderer,
        base_url=a.base_url, save_every=a.save_every, eval_every=a.eval_every, rollout_error_tolerance=tolerance, rolling_save_every=a.rolling_save_every, compute_post_kl=a.compute_post_kl,
        async_config=train.AsyncConfig(max_steps_off_policy=a.async_off_policy, groups_per_batch=a.async_groups, loss_fn=a.async_loss)
        if a.async_off_policy is not None else None, num_substeps=a.num_substeps, loss_fn=a.loss_fn,
        max_steps=a.max_steps, remove_constant_reward_groups=a.remove_constant_reward_groups,
        kl_penalty_coef=a.kl_penalty_coef, kl_discount_factor=a.kl_discount_factor,
        kl_reference_config=train.KLReferenceConfig(base_model=a.kl_reference_model) if a.kl_reference_model else None)
    marks: list[float] = []
    if a.cpu_report:
        from tinker_cookbook.utils import ml_log
        setup = ml_log.setup_logging

        def setup_logging(*args, **kw):
            logger = setup(*args, **kw)
            log_metrics = logger.log_metrics

            def wrapped(metrics, step=None, *rest, **k):
                if "progress/batch" in metrics:  # a step's line, not the final totals
                    marks.append(time.process_time())
                return log_metrics(metrics, step, *rest, **k)
            logger.log_metrics = wrapped
            return logger
        ml_log.setup_logging = setup_logging
    asyncio.run(train.main(config))
    if a.cpu_report:
        print(json.dumps({"steps": len(marks), "cpu_s": marks[-1] - marks[0] if len(marks) > 1 else None}))

if __name__ == "__main__":
    main()
