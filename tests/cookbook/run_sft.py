"""Runs tinker-cookbook 0.6.1's own supervised.train.main offline against a local tinker-sim:
the cookbook side of tests/cookbook/sft_differential.py.

    tests/conformance/.venv/bin/python tests/cookbook/run_sft.py --base-url http://127.0.0.1:PORT ...

Offline measures (offline.py; no monkeypatching of cookbook code paths that affect training):
  * the model's tokenizer is registered via tokenizer_utils.register_tokenizer from a local dir;
  * the pricing download (utils/cost_estimation.load_model_pricing, an HTTPS GET to the
    Tinker docs site) is pre-marked as "already attempted" so no network is touched; the
    cookbook then behaves exactly as when that download fails (no cost/* metrics);
  * one copy of Qwen3's content tokenizer per tokenizer instead of one per renderer.
"""

from __future__ import annotations

import argparse
import asyncio
import offline
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TINKER_API_KEY", "tml-local")
# code.diff is produced with `git diff HEAD`; never take optional index locks in someone's repo.
os.environ.setdefault("GIT_OPTIONAL_LOCKS", "0")
os.environ.setdefault("WANDB_MODE", "disabled")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True)
    p.add_argument("--log-path", required=True)
    p.add_argument("--jsonl", required=True)
    p.add_argument("--model", default="Qwen/Qwen3-8B")
    p.add_argument("--renderer", default="qwen3")
    p.add_argument("--tokenizer-dir", required=True)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr-schedule", default="linear", choices=["linear", "cosine", "constant"])
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--submit-ahead", type=int, default=1)
    p.add_argument("--test-size", type=int, default=0)
    p.add_argument("--shuffle-seed", type=int, default=0)
    p.add_argument("--max-length", type=int, default=None, help="omit for None (no truncation)")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--lora-rank", type=int, default=32)
    p.add_argument("--rolling-save-every", type=int, default=0)
    p.add_argument("--async-periodic-saves", action="store_true")
    p.add_argument("--cpu-report", action="store_true", help="print the client CPU between the first and last step (make bench)")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    os.environ["TINKER_BASE_URL"] = args.base_url

    from tinker_cookbook.supervised import train
    from tinker_cookbook.supervised.data import FromConversationFileBuilder
    from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig

    offline.setup(args.model, args.tokenizer_dir, share_content_tokenizer=not args.cpu_report)

    common = ChatDatasetBuilderCommonConfig(
        model_name_for_tokenizer=args.model,
        renderer_name=args.renderer,
        max_length=args.max_length,
        batch_size=args.batch_size,
    )
    builder = FromConversationFileBuilder(
        common_config=common,
        file_path=args.jsonl,
        test_size=args.test_size,
        shuffle_seed=args.shuffle_seed,
    )
    config = train.Config(
        log_path=args.log_path,
        model_name=args.model,
        recipe_name="cbsft_local",
        renderer_name=args.renderer,
        dataset_builder=builder,
        learning_rate=args.learning_rate,
        lr_schedule=args.lr_schedule,
        num_epochs=args.epochs,
        lora_rank=args.lora_rank,
        base_url=args.base_url,
        eval_every=args.eval_every,
        save_every=args.save_every,
        rolling_save_every=args.rolling_save_every,
        async_periodic_saves=args.async_periodic_saves,
        submit_ahead=args.submit_ahead,
        max_steps=args.max_steps,
        wandb_project=None,
        wandb_name=None,
    )
    if args.cpu_report:
        _report_cpu_per_step()
    t0 = time.perf_counter()
    asyncio.run(train.main(config))
    print(f"run_sft: train.main finished in {time.perf_counter() - t0:.2f}s", file=sys.stderr)
    if args.cpu_report:
        marks = CPU_MARKS
        print(json.dumps({"steps": len(marks), "cpu_s": marks[-1] - marks[0] if len(marks) > 1 else None}))
    return 0


CPU_MARKS: list[float] = []


def _report_cpu_per_step() -> None:
    """`--cpu-report` (make bench): the process's CPU time at each step's metrics line, so
    that the client CPU of the steps between the first and the last can be reported."""
    from tinker_cookbook.utils import ml_log

    setup = ml_log.setup_logging

    def setup_logging(*a, **k):
        logger = setup(*a, **k)
        log_metrics = logger.log_metrics

        def wrapped(metrics, step=None, *rest, **kw):
            CPU_MARKS.append(time.process_time())
            return log_metrics(metrics, step, *rest, **kw)

        logger.log_metrics = wrapped
        return logger

    ml_log.setup_logging = setup_logging


if __name__ == "__main__":
    sys.exit(main())
