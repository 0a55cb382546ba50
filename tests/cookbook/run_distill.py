"""Runs tinker-cookbook 0.6.1's own distillation.train_on_policy.main offline against a
local tinker-sim: two prompt-only datasets (PromptOnlyDataset, the second's prompts cut to
--max-prompt-tokens), the first distilled from a teacher checkpoint (--teacher-path, made by
make_teacher.py), the second from the base model. The cookbook side of the distill-*
configurations of tests/cookbook/sft_differential.py; run_distill.mjs is ours."""
from __future__ import annotations
import argparse, asyncio, os
import offline
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TINKER_API_KEY", "tml-local")
os.environ.setdefault("GIT_OPTIONAL_LOCKS", "0")
os.environ.setdefault("WANDB_MODE", "disabled")

PROMPTS = [
    ["What is 4 + 5?", "Name a prime number.", "What colour is the sky?", "Say hello in French.",
     "What is the capital of Italy?", "Count to three."],
    ["Write one sentence about the sea and the ships that sail on it at night.",
     "Describe a cat in a few words, then describe a dog in a few more.",
     "Explain what a function is in programming to someone who has never coded.",
     "List three fruits that are red and one that is not."],
]

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--log-path", required=True)
    p.add_argument("--tokenizer-dir", required=True)
    p.add_argument("--teacher-path", required=True)
    p.add_argument("--model", default="Qwen/Qwen3-8B")
    p.add_argument("--renderer", default="qwen3")
    p.add_argument("--groups-per-batch", type=int, default=2)
    p.add_argument("--group-size", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument("--max-prompt-tokens", type=int, default=9)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--kl-penalty-coef", type=float, default=1.0)
    p.add_argument("--kl-discount-factor", type=float, default=0.0)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--compute-post-kl", action="store_true")
    p.add_argument("--test", action="store_true", help="the first dataset has a test set (its first two prompts, one sample each)")
    a = p.parse_args()
    os.environ["TINKER_BASE_URL"] = a.base_url
    import chz
    from tinker_cookbook import renderers, tokenizer_utils
    from tinker_cookbook.distillation import train_on_policy
    from tinker_cookbook.distillation.datasets import DistillationDatasetConfig, PromptOnlyDataset, TeacherConfig
    from tinker_cookbook.rl.types import RLDatasetBuilder

    offline.setup(a.model, a.tokenizer_dir)

    @chz.chz
    class Prompts(RLDatasetBuilder):
        index: int
        max_prompt_tokens: int | None

        async def __call__(self):
            tok = tokenizer_utils.get_tokenizer(a.model)
            r = renderers.get_renderer(a.renderer, tokenizer=tok)
            test = PromptOnlyDataset(prompts=PROMPTS[self.index][:2], batch_size=a.groups_per_batch, group_size=1, renderer=r,
                                     tokenizer=tok, max_prompt_tokens=self.max_prompt_tokens,
                                     dataset_name=f"prompts{self.index}_test") if a.test and self.index == 0 else None
            return PromptOnlyDataset(prompts=PROMPTS[self.index], batch_size=a.groups_per_batch, group_size=a.group_size,
                                     renderer=r, tokenizer=tok, max_prompt_tokens=self.max_prompt_tokens,
                                     dataset_name=f"prompts{self.index}"), test

    configs = [
        DistillationDatasetConfig(dataset_builder=Prompts(index=0, max_prompt_tokens=None),
                                  teacher_config=TeacherConfig(base_model=a.model, load_checkpoint_path=a.teacher_path),
                                  groups_per_batch=a.groups_per_batch),
        DistillationDatasetConfig(dataset_builder=Prompts(index=1, max_prompt_tokens=a.max_prompt_tokens),
                                  teacher_config=TeacherConfig(base_model=a.model), groups_per_batch=a.groups_per_batch),
    ]
    config = train_on_policy.Config(learning_rate=1e-3, dataset_configs=configs, model_name=a.model,
        recipe_name="distill_local", renderer_name=a.renderer, max_tokens=a.max_tokens, log_path=a.log_path,
        base_url=a.base_url, save_every=a.save_every, kl_penalty_coef=a.kl_penalty_coef,
        kl_discount_factor=a.kl_discount_factor, max_steps=a.max_steps, eval_every=a.eval_every, compute_post_kl=a.compute_post_kl)
    asyncio.run(train_on_policy.main(config))

if __name__ == "__main__":
    main()
