"""Runs tinker-cookbook 0.6.1's own preference.train_dpo.main offline against a local
tinker-sim: the cookbook side of tests/cookbook/sft_differential.py's DPO configurations.

    tests/conformance/.venv/bin/python tests/cookbook/run_dpo.py --base-url http://127.0.0.1:PORT ...

Offline as run_sft.py is: the tokenizer registered from a local folder, no pricing download.
"""

from __future__ import annotations

import argparse
import os
import sys

import offline

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TINKER_API_KEY", "tml-local")
os.environ.setdefault("GIT_OPTIONAL_LOCKS", "0")
os.environ.setdefault("WANDB_MODE", "disabled")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True)
    p.add_argument("--log-path", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--test", default=None)
    p.add_argument("--model", default="Qwen/Qwen3-8B")
    p.add_argument("--renderer", default="qwen3")
    p.add_argument("--tokenizer-dir", required=True)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr-schedule", default="linear", choices=["linear", "cosine", "constant"])
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--dpo-beta", type=float, default=0.1)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--rolling-save-every", type=int, default=0)
    p.add_argument("--max-length", type=int, default=None)
    p.add_argument("--max-steps", type=int, default=None)
    return p.parse_args()


def main() -> int:
    args = parse_args()
    os.environ["TINKER_BASE_URL"] = args.base_url

    from tinker_cookbook.preference import train_dpo
    from tinker_cookbook.preference.dpo_datasets import DPODatasetBuilderFromComparisons
    from tinker_cookbook.preference.preference_datasets import ComparisonBuilderFromJsonl
    from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig

    offline.setup(args.model, args.tokenizer_dir)

    common = ChatDatasetBuilderCommonConfig(
        model_name_for_tokenizer=args.model,
        renderer_name=args.renderer,
        max_length=args.max_length,
        batch_size=args.batch_size,
    )
    builder = DPODatasetBuilderFromComparisons(
        common_config=common,
        comparison_builder=ComparisonBuilderFromJsonl(train_path=args.train, test_path=args.test),
    )
    config = train_dpo.Config(
        log_path=args.log_path,
        model_name=args.model,
        recipe_name="cbdpo_local",
        renderer_name=args.renderer,
        dataset_builder=builder,
        learning_rate=args.learning_rate,
        lr_schedule=args.lr_schedule,
        num_epochs=args.epochs,
        dpo_beta=args.dpo_beta,
        base_url=args.base_url,
        eval_every=args.eval_every,
        save_every=args.save_every,
        rolling_save_every=args.rolling_save_every,
        max_steps=args.max_steps,
        wandb_project=None,
        wandb_name=None,
    )
    train_dpo.main(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
