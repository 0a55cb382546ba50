"""Makes a teacher for the distillation configurations of sft_differential.py: on the
simulator at --base-url, a LoRA of --model trained a few steps (the official SDK) towards
a fixed text, its sampler weights saved; prints their path. The simulator's base models of
a family share its language statistics, so a teacher that differs from the student has to
be a checkpoint. Both sides of a comparison run this same script first."""
from __future__ import annotations
import argparse, os
os.environ.setdefault("TINKER_API_KEY", "tml-local")

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", default="Qwen/Qwen3-8B")
    a = p.parse_args()
    import tinker
    sc = tinker.ServiceClient(base_url=a.base_url)
    tc = sc.create_lora_training_client(base_model=a.model, rank=8)
    tokens = [40, 1079, 264, 11079, 13, 576, 4226, 374, 220, 19, 13, 151645]
    datum = tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )
    for _ in range(3):
        tc.forward_backward([datum], "cross_entropy").result()
        tc.optim_step(tinker.AdamParams(learning_rate=0.05)).result()
    print(tc.save_weights_for_sampler("teacher").result().path)

if __name__ == "__main__":
    main()
