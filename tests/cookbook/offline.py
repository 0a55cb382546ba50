"""What every tinker-cookbook run of these tests sets up first (run_sft/dpo/rl/distill.py):
the model's tokenizer from a local directory through
`tokenizer_utils.register_tokenizer` (no hub), no pricing download, and one speed-up that
changes nothing the cookbook sends or writes.

The speed-up: the cookbook builds a renderer per datum (`ChatDatasetBuilder.renderer` is a
property), and `Qwen3Renderer.__init__` deep-copies the backend tokenizer each time
(`renderers/qwen3.py` `_content_tokenizer`, 0.5 s for Qwen3's vocabulary: 17 of a 24 s SFT
run). Its docstring says the copy is configured once and afterwards only read, so one copy
per tokenizer serves every renderer built on it. Not with `--cpu-report` (make bench): the
benchmark measures the cookbook's client CPU as the cookbook spends it."""
from __future__ import annotations

import functools


@functools.cache
def load_tokenizer(tokenizer_dir: str):
    """The HF tokenizer in `tokenizer_dir`, once per process (prefork.py loads it before
    forking the runs)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir)


def setup(model: str, tokenizer_dir: str, share_content_tokenizer: bool = True) -> None:
    from tinker_cookbook import tokenizer_utils
    from tinker_cookbook.renderers import qwen3
    from tinker_cookbook.utils import cost_estimation

    tokenizer_utils.register_tokenizer(model, lambda: load_tokenizer(str(tokenizer_dir)))
    # No pricing download: behave as if it had been tried and failed (returns None).
    cost_estimation._pricing_fetched = True
    cost_estimation._pricing_entries = None

    if not share_content_tokenizer:
        return
    copies: dict[int, tuple[object, object]] = {}
    original = qwen3._content_tokenizer

    def content_tokenizer(tokenizer):
        hit = copies.get(id(tokenizer))
        if hit is None or hit[0] is not tokenizer:
            hit = copies[id(tokenizer)] = (tokenizer, original(tokenizer))
        return hit[1]

    qwen3._content_tokenizer = content_tokenizer
