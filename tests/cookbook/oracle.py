"""The cookbook oracle: what tinker-cookbook 0.6.1 (and numpy, which orders its data)
computes for the inputs crates/cookbook ports, written as JSON for
crates/cookbook/examples/parity.rs (`make test-cookbook`).

    python tests/cookbook/oracle.py OUT.json
"""

import ast
import inspect
import json
import sys
import textwrap

import numpy as np
from tinker_cookbook import hyperparam_utils, model_info
from tinker_cookbook.utils import lr_scheduling


def permutations():
    seeds = [0, 1, 2, 7, 42, 1234, 2**31 - 1, 2**32 - 1, 2**32, 2**32 + 5, 2**63 + 12345, 2**64 - 1]
    sizes = [0, 1, 2, 3, 10, 97, 1000, 65537]
    return [
        {"seed": str(s), "n": n, "perm": np.random.default_rng(s).permutation(n).tolist()}
        for s in seeds
        for n in sizes
    ]


def schedules():
    out = []
    for name in ["linear", "cosine", "constant", "exponential"]:
        for total in [0, 1, 2, 3, 7, 10, 100, 997, 12345]:
            steps = sorted({0, 1, total // 3, total // 2, max(total - 1, 0), total})
            if total > 100:
                steps = sorted(set(steps) | set(range(0, total + 1, max(total // 97, 1))))
            for step in steps:
                row = {"schedule": name, "step": step, "total_steps": total}
                try:
                    row["value"] = lr_scheduling.compute_schedule_lr_multiplier(name, step, total)
                except Exception as e:  # noqa: BLE001 - the error is the answer
                    row["error"] = type(e).__name__
                out.append(row)
    return out


def known_hidden_sizes():
    src = textwrap.dedent(inspect.getsource(hyperparam_utils._get_hidden_size))
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_KNOWN_HIDDEN_SIZES":
            return ast.literal_eval(node.value)
    raise SystemExit("_KNOWN_HIDDEN_SIZES not found in hyperparam_utils._get_hidden_size")


def learning_rates(hidden):
    names = sorted(set(hidden) | set(_lineup()))
    # Variant suffixes, and names the cookbook does not know.
    names += ["Qwen/Qwen3-8B:peft:131072", "zai-org/GLM-5.3:peft:262144", "acme/Other-7B", "thinkingmachines/Inkling-9"]
    out = []
    for name in names:
        for is_lora in [True, False]:
            row = {"model": name, "is_lora": is_lora}
            try:
                row["value"] = hyperparam_utils.get_lr(name, is_lora=is_lora)
            except NotImplementedError:
                row["error"] = "NotImplementedError"
            except Exception as e:  # noqa: BLE001 - ConfigurationError, or the Hub lookup failing offline
                row["error"] = type(e).__name__ if name in hidden or type(e).__name__ == "ConfigurationError" else "NeedsHub"
            out.append(row)
    return out


def _lineup():
    """Every model of model_info.py's get_<org>_info tables, as `org/name`."""
    names = []
    for fname, fn in vars(model_info).items():
        if fname.startswith("get_") and fname.endswith("_info") and callable(fn):
            names += [f"{attrs.organization}/{name}" for name, attrs in fn().items()]
    return names


def data_orders():
    """FromConversationFileBuilder's own split and epoch orders (the real `datasets`): each
    row's messages carry its line index, read back from the builder's datasets without
    rendering (the renderer only runs in get_batch's map_fn)."""
    import tempfile

    from tinker_cookbook.supervised.data import FromConversationFileBuilder
    from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows, test_size, seed, batch_size in [
            (10, 2, 0, 3), (12, 2, 0, 4), (1, 0, 0, 1), (7, 7, 3, 2), (7, 6, 3, 1), (50, 5, 42, 8), (300, 0, 1234, 16),
        ]:
            path = f"{tmp}/rows-{rows}.jsonl"
            with open(path, "w") as f:
                for i in range(rows):
                    f.write(json.dumps({"messages": [{"role": "user", "content": str(i)}]}) + "\n")
            common = ChatDatasetBuilderCommonConfig(
                model_name_for_tokenizer="Qwen/Qwen3-8B", renderer_name="qwen3", max_length=None, batch_size=batch_size
            )
            train, test = FromConversationFileBuilder(
                common_config=common, file_path=path, test_size=test_size, shuffle_seed=seed
            )()
            ids = lambda ds: [int(m[0]["content"]) for m in ds["messages"]]  # noqa: E731
            epochs = []
            for epoch in range(3):
                train.set_epoch(seed=epoch)
                epochs.append(ids(train.shuffle_dataset))
            out.append({
                "rows": rows, "test_size": test_size, "shuffle_seed": seed, "batch_size": batch_size,
                "test": ids(test.hf_dataset) if test is not None else [],
                "train": ids(train.hf_dataset), "epochs": epochs, "batches_per_epoch": len(train),
            })
    return out


def dump_datum(d):
    """A datum as JSON: its input tokens, loss inputs (dtype, shape, data) and spans."""

    def span(s):
        kind = "prompt_tokens" if type(s).__name__ == "PromptProvenanceSpan" else "sampled_tokens"
        return {"type": kind, "sequence_id": s.sequence_id, "offset": s.offset, "length": s.length}

    out = {
        "tokens": [t for c in d.model_input.chunks for t in c.tokens],
        "chunks": len(d.model_input.chunks),
        "loss_fn_inputs": {k: {"dtype": v.dtype, "shape": v.shape, "data": v.data} for k, v in d.loss_fn_inputs.items()},
    }
    if d.model_input_spans is not None:
        out["model_input_spans"] = [span(s) for s in d.model_input_spans]
        out["loss_fn_input_spans"] = [span(s) for s in d.loss_fn_input_spans]
    return out


def rl_data():
    """RL's data processing (rl/data_processing.py) over random trajectory groups: multi-turn
    episodes whose observations extend the sequence or start a new one, actions with and
    without sequence ids, masked turns, group sizes across torch's summation paths (1-7,
    8-15, 16+), rewards exact and not; each case's groups, and what compute_advantages,
    assemble_training_data (with and without provenance) and remove_constant_reward_groups
    make of them."""
    import random

    import tinker

    from tinker_cookbook.completers import TokensWithLogprobs
    from tinker_cookbook.rl import data_processing as dp
    from tinker_cookbook.rl import metric_util
    from tinker_cookbook.rl import metrics as rl_metrics
    from tinker_cookbook.rl.types import Trajectory, TrajectoryGroup, Transition

    rng = random.Random(33)
    toks = lambda n: [rng.randrange(1, 1000) for _ in range(n)]  # noqa: E731

    def trajectory(seq):
        turns, seen = [], []
        for t in range(rng.choice([1, 1, 2, 3])):
            ob = seen + toks(rng.randrange(0, 4)) if seen and rng.random() < 0.7 else toks(rng.randrange(2, 6))
            ac = toks(rng.randrange(0 if t else 1, 4))
            sid = None if rng.random() < 0.15 else f"seq-{seq}-{t}"
            lps = [rng.uniform(-5, 0) for _ in ac]
            reward = rng.choice([0.0, 1.0, -0.1, 0.9, 0.5, rng.uniform(-2, 2)])
            metrics = {}
            if rng.random() < 0.1:
                metrics["parse_error_masked"] = 1.0
            for k in rng.sample(["format", "correct", "turns", "score"], rng.randrange(0, 4)):
                metrics[k] = rng.choice([0.0, 1.0, None, rng.randrange(0, 5), rng.uniform(-1, 1)])
            cached = rng.randrange(0, len(ob) + 1)
            turns.append({"ob": ob, "ac": ac, "logprobs": lps, "sequence_id": sid, "reward": reward, "metrics": metrics, "cached": cached})
            seen = ob + ac
        return turns

    cases = []
    for case in range(60):
        groups = []
        for g in range(rng.choice([1, 2, 3])):
            size = rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 33])
            trajs = [trajectory(f"{case}-{g}-{i}") for i in range(size)]
            finals = [rng.choice([0.0, 0.0, 1.0, rng.uniform(-1, 1)]) for _ in trajs]
            if rng.random() < 0.2:  # a constant-reward group
                for t in trajs:
                    for x in t:
                        x["reward"] = 0.0
                finals = [1.0] * size
            group_metrics = [{"group_score": rng.uniform(0, 1)} if rng.random() < 0.5 else {} for _ in trajs]
            tags = rng.choice([["problems"], ["a"], ["b"], ["a", "b"], []])
            groups.append({"trajectories": trajs, "final_rewards": finals, "metrics": group_metrics, "tags": tags})

        def py_groups():
            return [
                TrajectoryGroup(
                    trajectories_G=[
                        Trajectory(
                            transitions=[
                                Transition(
                                    ob=tinker.ModelInput.from_ints(x["ob"]),
                                    ac=TokensWithLogprobs(tokens=x["ac"], maybe_logprobs=x["logprobs"], sequence_id=x["sequence_id"], prompt_cache_hit_tokens=x["cached"]),
                                    reward=x["reward"],
                                    episode_done=False,
                                    metrics=x["metrics"],
                                )
                                for x in t
                            ],
                            final_ob=tinker.ModelInput.empty(),
                        )
                        for t in grp["trajectories"]
                    ],
                    final_rewards_G=grp["final_rewards"],
                    metrics_G=grp["metrics"],
                )
                for grp in groups
            ]

        pg = py_groups()
        adv = dp.compute_advantages(pg)
        out = {"groups": groups, "advantages": [a.tolist() for a in adv]}
        for prov in [True, False]:
            data, meta = dp.assemble_training_data(pg, adv, include_provenance=prov)
            out[f"data_provenance_{str(prov).lower()}"] = [dump_datum(d) for d in data]
            out["from"] = [[m["group_idx"], m["traj_idx"]] for m in meta]
        kept = dp.remove_constant_reward_groups(pg)
        out["kept_groups"] = [pg.index(g) for g in kept]
        out["trajectory_metrics"] = list(metric_util.compute_trajectory_metrics(pg, [g["tags"] for g in groups]).items())
        data, _ = dp.assemble_training_data(pg, adv)
        import torch

        training = [[rng.uniform(-6, 0) for _ in range(len(d.loss_fn_inputs["target_tokens"].data))] for d in data]
        out["training_logprobs"] = training
        if any(m > 0 for d in data for m in d.loss_fn_inputs["mask"].data):
            out["kl_sample_train"] = list(rl_metrics.compute_kl_sample_train(data, [torch.tensor(t) for t in training]).items())
        kl_cases(rng, pg, adv, out)
        cases.append(out)
    return cases


def kl_cases(rng, pg, adv, out):
    """The KL terms on a case's datums: rl/metrics.py's incorporate_kl_penalty against a
    reference and distillation's against teachers (one per dataset), each through a stand-in
    sampler that records the sequences it is asked to score and answers random logprobs."""
    import asyncio
    import types

    from tinker_cookbook.distillation import train_on_policy
    from tinker_cookbook.rl import data_processing as dp
    from tinker_cookbook.rl import metrics as rl_metrics

    class Scorer:
        def __init__(self):
            self.asked, self.given = [], []

        def answer(self, prompt):
            self.asked.append([list(c.tokens) for c in prompt.chunks])
            lps = [None] + [rng.uniform(-6, 0) for _ in range(prompt.length - 1)]
            self.given.append(lps[1:])
            return lps

        def sample(self, prompt, num_samples, sampling_params, include_prompt_logprobs):
            lps = self.answer(prompt)
            r = types.SimpleNamespace(prompt_logprobs=lps, prompt_cache_hit_tokens=0, sequences=[])
            return types.SimpleNamespace(coroutine=lambda: asyncio.sleep(0, r))

        def compute_logprobs(self, prompt):
            lps = self.answer(prompt)
            return types.SimpleNamespace(coroutine=lambda: asyncio.sleep(0, lps))

    data, meta = dp.assemble_training_data(pg, adv)
    if not any(m > 0 for d in data for m in d.loss_fn_inputs["mask"].data):
        return
    coef, discount = rng.choice([0.1, 1.0, 0.37, 2.5]), rng.choice([0.0, 0.0, 0.9, 0.37])
    ref = Scorer()
    metrics, _ = asyncio.run(rl_metrics.incorporate_kl_penalty(data, ref, coef, discount))
    out["kl_penalty"] = {"coef": coef, "discount": discount, "sequences": ref.asked, "scores": ref.given,
                         "metrics": list(metrics.items()), "data": [dump_datum(d) for d in data]}
    data, meta = dp.assemble_training_data(pg, adv)
    datasets = [rng.randrange(0, 3) for _ in pg]
    teacher = Scorer()
    coef, discount = rng.choice([0.1, 1.0, 0.37]), rng.choice([0.0, 0.0, 0.9])
    indices = [datasets[m["group_idx"]] for m in meta]
    metrics = asyncio.run(train_on_policy.incorporate_kl_penalty(data, [teacher] * len(data), indices, coef, discount))
    out["teacher_kl"] = {"coef": coef, "discount": discount, "datasets": indices, "scores": teacher.given,
                         "metrics": list(metrics.items()), "data": [dump_datum(d) for d in data]}


def truncations():
    """TrainingRunStore.truncate_metrics(from_step) on metrics.jsonl texts with rows it keeps and
    drops for every reason: integer steps before and after, booleans (Python's ints), negative,
    float and huge steps, NaN and Infinity metrics (json.loads reads them), rows without a step,
    a list and a line that is not JSON."""
    import tempfile
    from tinker_cookbook.stores.storage import LocalStorage
    from tinker_cookbook.stores.training_store import TrainingRunStore

    rows = ['{"step": 0, "loss": 1.5}', '{"step": 1, "loss": NaN}', '{"step": 2, "loss": Infinity}',
            '{"step": 3, "x": -Infinity}', '{"step": true}', '{"step": false}', '{"step": -4}',
            '{"step": 2.0}', '{"step": "3"}', '{"loss": 1}', '[1, 2]', 'not json',
            '{"step": 123456789012345678901234567890}', '{"step": 5, "step": 1}', '{"step": 4}']
    cases = []
    for from_step in (0, 1, 2, 3, 5, 6):
        text = "\n".join(rows) + "\n"
        with tempfile.TemporaryDirectory() as d:
            store = TrainingRunStore(LocalStorage(d))
            with open(f"{d}/metrics.jsonl", "w") as f:
                f.write(text)
            dropped = store.truncate_metrics(from_step)
            with open(f"{d}/metrics.jsonl") as f:
                kept = f.read()
        cases.append({"text": text, "from_step": from_step, "dropped": dropped, "kept": kept})
    return cases


def main():
    hidden = known_hidden_sizes()
    out = {
        "data_orders": data_orders(),
        "permutations": permutations(),
        "schedules": schedules(),
        "hidden_sizes": hidden,
        "get_lr": learning_rates(hidden),
        "rl_data": rl_data(),
        "truncations": truncations(),
    }
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)
    print(
        f"cookbook oracle: {len(out['data_orders'])} data orders, {len(out['permutations'])} permutations, {len(out['schedules'])} schedule points, "
        f"{len(hidden)} hidden sizes, {len(out['get_lr'])} learning rates, {len(out['rl_data'])} RL data cases, {len(out['truncations'])} metrics truncations -> {sys.argv[1]}"
    )


if __name__ == "__main__":
    main()
