"""The Python side of tests/bench/tokenizer.mjs: the exactness oracle and two native peers.

    python tokenizer_native.py SPEC_JSON CORPUS_JSON OUT_JSON

SPEC_JSON is a list of families, each {"name", "kind": "tokenizer.json" | "tiktoken",
"quicktok": encoding name or null} (the files are found as tests/tokenizer/oracle.py finds
them). For each family, OUT_JSON gets:

- "oracle_ids": the ids of every document from the reference implementation: PyPI
  `tokenizers` for a tokenizer.json (`encode(text, add_special_tokens=False)`), PyPI
  `tiktoken` for a ranks file (`encode(text, allowed_special="all")`, NFC first where the
  family normalises), the same implementations the parity suite uses;
- "native": PyPI `tokenizers` (Rust, one thread): load ms (median of 3, from the file) and
  encode MB/s cold (a fresh tokenizer, one call per document) and warm (best of 3 more);
  for a ranks file, PyPI `tiktoken`'s encode (no word cache, so cold = warm; no load);
- "files": where the family's files are, and a ranks file's pattern and special tokens;
- "quicktok": PyPI `quicktok-v1` (C++), where it has the encoding: `Tokenizer(name, "")`
  load ms, `encode_ordinary` MB/s cold and warm (it keeps no word cache: the two agree),
  and how many documents it encodes exactly as the oracle.

One call per document everywhere, as a user preparing a data set does.
"""

import json
import os
import sys
import time
import unicodedata
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/tokenizer"))

import oracle  # noqa: E402  (tests/tokenizer/oracle.py: where each family's files are)
from tokenizers import Tokenizer  # noqa: E402


def median(xs):
    return sorted(xs)[len(xs) // 2]


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return (time.perf_counter() - t0) * 1e3, r


def main() -> None:
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    texts = [d["text"] for d in json.load(open(sys.argv[2], encoding="utf-8"))]
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    mbps = lambda ms: nbytes / ms / 1e3  # noqa: E731
    tk = None
    out = {"versions": {}, "families": {}}
    import tokenizers

    out["versions"]["tokenizers"] = tokenizers.__version__
    for fam in spec:
        name, r = fam["name"], {}
        if fam["kind"] == "tokenizer.json":
            path = str(oracle.HF[name][0] / "tokenizer.json")
            loads = [timed(lambda: Tokenizer.from_file(path))[0] for _ in range(3)]
            tok = Tokenizer.from_file(path)

            def run(tok=tok):
                return [tok.encode(t, add_special_tokens=False).ids for t in texts]

            cold, ids = timed(run)
            warm = min(timed(run)[0] for _ in range(3))
            r["oracle_ids"] = ids
            r["native"] = {"load_ms": median(loads), "cold_mbps": mbps(cold), "warm_mbps": mbps(warm)}
            r["files"] = {"dir": str(oracle.HF[name][0])}
        else:
            if tk is None:
                tk = oracle.tiktoken_families()
            f = tk[name]
            norm = (lambda s: unicodedata.normalize("NFC", s)) if f["nfc"] else (lambda s: s)
            cold, ids = timed(lambda: [f["encode"](norm(t)) for t in texts])
            r["oracle_ids"] = ids
            # PyPI tiktoken (Rust, no word cache): encode only (its load here parses the
            # ranks in Python, not what tiktoken's own loader costs).
            r["native"] = {"load_ms": None, "cold_mbps": mbps(cold), "warm_mbps": mbps(cold)}
            r["files"] = {
                "ranks": str(f["ranks"]),
                "pattern": f["pattern"],
                "special_tokens": f["special_tokens"],
                "nfc": f["nfc"],
            }
        q = fam.get("quicktok")
        if q:
            import quicktok

            out["versions"]["quicktok"] = quicktok.__version__
            loads = [timed(lambda: quicktok.Tokenizer(q, ""))[0] for _ in range(3)]
            enc = quicktok.Tokenizer(q, "")

            def qrun(enc=enc):
                return [enc.encode_ordinary(t) for t in texts]

            cold, ids = timed(qrun)
            warm = min(timed(qrun)[0] for _ in range(3))
            exact = sum(1 for a, b in zip(ids, r["oracle_ids"]) if list(a) == list(b))
            r["quicktok"] = {
                "encoding": q,
                "load_ms": median(loads),
                "cold_mbps": mbps(cold),
                "warm_mbps": mbps(warm),
                "exact_docs": exact,
                "docs": len(texts),
            }
        out["families"][name] = r
        print(f"# native {name} done", file=sys.stderr, flush=True)
    json.dump(out, open(sys.argv[3], "w", encoding="utf-8"))


if __name__ == "__main__":
    main()
