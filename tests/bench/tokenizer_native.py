"""Native PyPI `tokenizers` side of tests/bench/tokenizer.mjs (single thread).

    python tokenizer_native.py TOKENIZER_JSON CORPUS_JSON  ->  one JSON line
"""

import json
import os
import sys
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

from tokenizers import Tokenizer  # noqa: E402

path, corpus = sys.argv[1], sys.argv[2]
texts = [d["text"] for d in json.load(open(corpus, encoding="utf-8"))]
nbytes = sum(len(t.encode("utf-8")) for t in texts)

loads = []
for _ in range(3):
    t0 = time.perf_counter()
    tok = Tokenizer.from_file(path)
    loads.append((time.perf_counter() - t0) * 1000)


def run(tok):
    t0 = time.perf_counter()
    n = 0
    for t in texts:
        n += len(tok.encode(t, add_special_tokens=False).ids)
    return time.perf_counter() - t0, n


cold, n = run(Tokenizer.from_file(path))
warm = min(run(tok)[0] for _ in range(3))
print(json.dumps({
    "load_ms": sorted(loads)[1],
    "cold_mbps": nbytes / cold / 1e6,
    "warm_mbps": nbytes / warm / 1e6,
    "ids": n,
}))
