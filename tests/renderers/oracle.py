"""The oracle of the renderer parity suite: what tinker-cookbook 0.6.1's renderers produce.

    tests/conformance/.venv/bin/python tests/renderers/oracle.py target/renderer-parity/expected.json

Runs the real renderers (tinker_cookbook.renderers.get_renderer, offline) on the inputs in
tests/renderers/cases.json with the tokenizers made by tests/renderers/tokenizers.py (built first
if missing or stale), and writes one JSON file. Deterministic (same bytes twice). Run it without
PYTHONOPTIMIZE: the cookbook's asserts are part of its behaviour.

expected.json
-------------
{
 "versions": {"tinker_cookbook", "tml_renderers", "transformers", "tokenizers", "tinker", "torch",
              "torchvision", "pillow", "python"},
 "tokenizers": <target/renderer-parity/tokenizers/manifest.json>:
     {"<name>": {"json": abs path, "config": abs path, "kind": "real"|"exported"|"stand-in",
                 "source": str, "families": [renderer names], "verification": {...}, "note"?: str}},
 "image_processors": {"<renderer name>": {"class", "config", "source", "checked_against"} |
                      {"none": reason}}                      (provenance; VL renderers only)
 "models": [ {"name": "Qwen/Qwen3-8B", "attributes": {"organization", "version_str", "size_str",
                 "is_chat", "recommended_renderers": [..], "is_vl", "is_audio_in"}}
             | {"name": "acme/unknown", "error": "ExcType: msg"} ],
             (model_info.py's 46 models, whose entries have "attributes", then names
              get_model_attributes refuses, whose entries have "error")
 "model_lookups": [same shape]      (other names: a ":checkpoint" suffix, an unknown Inkling id)
 "renderers": [                                   (get_renderer's 49 names, in its order)
   { "renderer": "qwen3",
     "tokenizer": "<manifest key>",
     "options": {"current_date": "2026-01-15"}    (only gpt_oss_* with a system prompt)
     "error": "ExcType: msg"                      (only when get_renderer itself fails; then
                                                   every result below is this same error)
     "has_extension_property": bool | {"error"},
     "stop_sequences": [ints] | [strings] | {"error"},
     "tools_prefix": [ {"tools": [ToolSpec], "system_prompt": str,
                        "result": {"ok": [messages]} | {"error"}} ],
     "cases": [
       { "case": "<name in cases.json>",
         "messages": [resolved messages exactly as given to the cookbook, as
                      tinker_cookbook.renderers.base.message_to_jsonable writes them],
         "generation_prompt": {"ok": <chunks>} | {"error"},
         "generation_prompt_prefill": {"prefill": "Sure", "ok": <chunks>} | {"prefill", "error"},
         "supervised": {"<TrainOnWhat value>": {"ok": {"chunks": <chunks>, "weights": [float]}}
                        | {"error"}, ... all 7 values},
         "supervised_examples": {"<value>": {"ok": [{"chunks", "weights"}, ...]} | {"error"},
                                 ... for last_assistant_message, last_assistant_turn,
                                 all_assistant_messages, all_messages} } ],
     "parse": [ {"source": "supervised:<case>" | "supervised_truncated:<case>" | "text:<name>",
                 "tokens": [ints],
                 "result": {"ok": {"message": <message_to_jsonable>, "termination":
                            "stop_sequence"|"eos"|"malformed"}} | {"error"}} ] } ] }

<chunks>: the ModelInput's chunks, consecutive text chunks merged into one {"tokens": [...]},
empty text chunks dropped, an image chunk as {"image_tokens": expected_tokens, "format": "jpeg"|
"png"}. Weights are floats, one per position (an image chunk covers image_tokens positions).

Errors are outcomes: {"error": "<ExceptionType>: <message>"} (memory addresses in messages are
masked as 0x…).

Parse sources: for every case whose last message is an assistant message and whose
supervised.last_assistant_message is ok, the tokens with weight > 0 (what the model samples) and
the same minus its last token; and the raw response texts of cases.json "responses" (the renderer's
family, RESPONSE_FAMILY, plus "common"), encoded with tokenizer.encode(text,
add_special_tokens=False) ("{eos}" at the end of a text: the tokenizer's eos_token_id appended).

Tokenizers: every renderer gets AutoTokenizer.from_pretrained(<its manifest entry's directory>),
except tml_v0, which gets what the cookbook's own get_tokenizer('thinkingmachines/Inkling') returns
offline (TmlRenderersTokenizerAdapter around tml-renderers' O200kBaseChatTokenizer; its encode is
encode_ordinary), and kimi_k31_pro_*, which get get_tokenizer('moonshotai/Kimi-K3.1-Pro'): that
raises with tml-renderers 0.2.1 (no KimiK3Tokenizer), recorded as the renderer's error.
Image processors (VL renderers only; get_image_processor needs the hub): see make_image_processors.
gpt_oss_*: renderer.current_date is set after get_renderer (see "options").
A case whose $tools_prefix the renderer refuses is left out of that renderer's cases.

RENDERER_ORACLE_JOBS (default 2): processes to run the renderers in (same output for any value).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.util
import io
import json
import logging
import os
import platform
import re
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# tests/renderers/tokenizers.py must not shadow HF `tokenizers`.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

if sys.flags.optimize:
    sys.exit("oracle.py: run without PYTHONOPTIMIZE / -O: the cookbook's asserts are behaviour")

ROOT = _HERE.parents[1]
NM = ROOT / "node_modules"
CHECK_CACHE = ROOT / "target/renderer-parity/image-processor-check.json"


def log(msg: str) -> None:
    print(f"[renderer-oracle] {msg}", file=sys.stderr, flush=True)


def _load_tokenizers_module():
    spec = importlib.util.spec_from_file_location("renderer_parity_tokenizers", _HERE / "tokenizers.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its worker functions are pickled by module name
    spec.loader.exec_module(mod)
    return mod


tk = _load_tokenizers_module()

import tinker  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from tinker_cookbook import model_info, renderers, tokenizer_utils  # noqa: E402
from tinker_cookbook.renderers.base import ToolCall, TrainOnWhat, message_to_jsonable  # noqa: E402

warnings.simplefilter("ignore")
logging.disable(logging.WARNING)

# get_renderer's names, in the order of its if/elif chain (checked against its source below).
RENDERERS = [
    "role_colon", "llama3", "qwen3", "qwen3_vl", "qwen3_vl_instruct", "qwen3_disable_thinking",
    "qwen3_instruct", "qwen3_5", "qwen3_5_disable_thinking", "qwen3_5_preserve_thinking",
    "qwen3_8_xhigh_reasoning", "qwen3_8_medium_reasoning", "qwen3_8_low_reasoning",
    "qwen3_8_disable_thinking", "deepseekv3", "deepseekv3_disable_thinking", "deepseekv3_thinking",
    "deepseekv4_1", "deepseekv4_1_low_reasoning", "deepseekv4_1_max_reasoning",
    "deepseekv4_1_disable_thinking", "deepseekv4_1_preserve_thinking", "glm5_3_max_reasoning",
    "glm5_3_low_reasoning", "glm5_3_high_reasoning", "kimi_k2", "kimi_k25",
    "kimi_k25_disable_thinking", "kimi_k26", "kimi_k26_disable_thinking",
    "kimi_k26_preserve_thinking", "kimi_k31_pro_max_reasoning", "kimi_k31_pro_high_reasoning",
    "kimi_k31_pro_low_reasoning", "kimi_k31_pro_disable_thinking",
    "kimi_k31_pro_no_reasoning_effort", "nemotron3", "nemotron3_low_thinking",
    "nemotron3_disable_thinking", "nemotron3_preserve_thinking", "nemotron3_ultra",
    "nemotron3_ultra_disable_thinking", "nemotron3_ultra_medium_thinking",
    "nemotron3_ultra_preserve_thinking", "gpt_oss_no_sysprompt", "gpt_oss_low_reasoning",
    "gpt_oss_medium_reasoning", "gpt_oss_high_reasoning", "tml_v0",
]

RESPONSE_FAMILY = {
    "role_colon": "role_colon",
    "llama3": "llama3",
    **{r: "qwen3" for r in ["qwen3", "qwen3_vl", "qwen3_vl_instruct", "qwen3_disable_thinking", "qwen3_instruct"]},
    **{r: "qwen3_5" for r in RENDERERS if r.startswith(("qwen3_5", "qwen3_8", "nemotron3"))},
    **{r: "deepseek_v3" for r in RENDERERS if r.startswith("deepseekv3")},
    **{r: "deepseek_v4_1" for r in RENDERERS if r.startswith("deepseekv4_1")},
    **{r: "glm5" for r in RENDERERS if r.startswith("glm5")},
    **{r: "kimi" for r in RENDERERS if r.startswith("kimi")},
    **{r: "gpt_oss" for r in RENDERERS if r.startswith("gpt_oss")},
    "tml_v0": "tml_v0",
}

GPT_OSS_CURRENT_DATE = "2026-01-15"
PREFILL = "Sure"
SUPERVISED_EXAMPLES_MODES = [
    TrainOnWhat.LAST_ASSISTANT_MESSAGE,
    TrainOnWhat.LAST_ASSISTANT_TURN,
    TrainOnWhat.ALL_ASSISTANT_MESSAGES,
    TrainOnWhat.ALL_MESSAGES,
]
# Not in the lineup: get_model_attributes refuses them ("models").
UNKNOWN_MODELS = ["Qwen/Qwen9-1B", "acme/foo-7b", "Qwen3-8B", "meta-llama/Llama-3.1-405B"]
# Not in the lineup either, but get_model_attributes answers them ("model_lookups").
OTHER_LOOKUPS = [
    "Qwen/Qwen3-8B:peft:1234",  # a checkpoint suffix is stripped
    "thinkingmachines/Inkling-Next",  # an unknown Inkling id gets defaults
]

# --------------------------------------------------------------------------------------------
# Image processors (get_image_processor loads from the hub, so they are built offline here).
# --------------------------------------------------------------------------------------------

# Qwen3-VL, Qwen3.5/3.6 and Qwen3.8 ship a Qwen2-VL-style processor: preprocessor_config.json
# of Qwen/Qwen3-VL-*-Instruct and Qwen/Qwen3.5-* is "image_processor_type":
# "Qwen2VLImageProcessorFast", "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
# "size": {"shortest_edge": 65536 (= 256*256 pixels), "longest_edge": 16777216 (= 4096*4096)},
# image_mean/std 0.5. The token counts are checked below against tml-renderers' own Qwen35 and
# Qwen38 renderers (PyPI) for every case image; Qwen3-VL has no tml twin to check against.
QWEN_VL_CONFIG = {
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "size": {"shortest_edge": 65536, "longest_edge": 16777216},
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}
QWEN_VL_RENDERERS = {
    "qwen3_vl", "qwen3_vl_instruct", "qwen3_5", "qwen3_5_disable_thinking",
    "qwen3_5_preserve_thinking", "qwen3_8_xhigh_reasoning", "qwen3_8_medium_reasoning",
    "qwen3_8_low_reasoning", "qwen3_8_disable_thinking",
}
# Kimi K2.5 / K2.6: transformers' own port of the Kimi-K2.5 processor
# (transformers.models.kimi_k25, Kimi_K25ImageProcessor) with its defaults: patch_size 14,
# merge_size 2, max_patches 16384 (in_patch_limit), size 512x512 patches per side
# (patch_limit_on_one_side). The cookbook would load moonshotai's remote code from the hub
# (get_resize_config); counts checked against tml-renderers' KimiK25 renderer for every image.
KIMI_VL_RENDERERS = {
    "kimi_k25", "kimi_k25_disable_thinking", "kimi_k26", "kimi_k26_disable_thinking",
    "kimi_k26_preserve_thinking",
}
# Nemotron 3.5 Super VL: the cookbook needs the hub's remote-code processor (its
# `_compute_target_patches` branch of image_to_chunk), which no registry ships. The stand-in
# below runs that branch with transformers' own NemotronH-Omni tiling (`get_patch_grid_size`)
# and the processor settings of transformers' class defaults and the published Omni
# preprocessor config: patch 16, pixel-shuffle downsample 2, 1,024..13,312 patches, a 16,384
# token model length. tml-renderers 0.2.1 cannot size Nemotron images (its tokenizer lacks
# vision_start), so these counts are checked against transformers' tiling only.
NEMOTRON_VL_RENDERERS = {
    "nemotron3_ultra", "nemotron3_ultra_disable_thinking", "nemotron3_ultra_medium_thinking",
    "nemotron3_ultra_preserve_thinking",
}


class NemotronStandInProcessor:
    """What image_to_chunk reads of Nemotron 3.5 Super VL's remote-code processor."""

    patch_size = 16
    _downsample_factor = 2
    min_num_patches = 1024
    max_num_patches = 13312
    max_model_len = 16384

    def _compute_target_patches(self, img, budget):
        from transformers.models.nemotron_h_omni.image_processing_nemotron_h_omni import (
            get_patch_grid_size,
        )

        gh, gw = get_patch_grid_size(
            img.height, img.width, self.patch_size, self._downsample_factor, self.min_num_patches, budget
        )
        return gw, gh


def make_image_processors(images: dict[str, str]) -> tuple[dict, dict]:
    from transformers.models.kimi_k25.image_processing_kimi_k25 import Kimi_K25ImageProcessor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    qwen = Qwen2VLImageProcessor(**QWEN_VL_CONFIG)
    kimi = Kimi_K25ImageProcessor()

    # Cross-check the token counts with tml-renderers' renderers, which size images themselves.
    import tml_renderers.renderers as tml_r
    from tinker_cookbook.third_party.tml_renderers_compat import tinker_messages_to_message_list

    def tml_count(renderer, uri: str) -> int:
        ml = tinker_messages_to_message_list([{"role": "user", "content": [{"type": "image", "image": uri}]}])
        spans, _ = renderer.render_for_completion(ml)
        counts = [s.span.num_tokens for s in spans if hasattr(s.span, "num_tokens") and hasattr(s.span, "location")]
        assert len(counts) == 1
        return counts[0]

    def processor_count(proc, uri: str) -> int:
        img = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
        w, h = img.size
        return proc.get_number_of_image_patches(h, w, images_kwargs={}) // proc.merge_size**2

    sizes = [(4000, 100), (100, 4000), (2000, 3000), (13, 7)]
    probe = dict(images)
    for w, h in sizes:
        probe[f"probe_{w}x{h}"] = image_uri(draw_image(w, h, "RGB"), "JPEG")
    # The check is cached (loading tml-renderers' Qwen3.5 tokenizer takes seconds): keyed by the
    # images, the processor configuration and the package versions.
    h = hashlib.sha256(json.dumps([probe, QWEN_VL_CONFIG], sort_keys=True).encode())
    for dist in ("tml-renderers", "transformers", "pillow", "tinker-cookbook"):
        h.update(f"{dist}={metadata.version(dist)}".encode())
    cache = CHECK_CACHE
    if cache.exists() and json.loads(cache.read_text()).get("key") == h.hexdigest():
        checks = json.loads(cache.read_text())["checks"]
    else:
        checks = {"qwen": {}, "kimi": {}}
        for tml_name, key in [("Qwen35", "qwen"), ("Qwen38", "qwen"), ("KimiK25", "kimi")]:
            r = getattr(tml_r, tml_name)()
            for name, uri in probe.items():
                checks[key][name] = tml_count(r, uri)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": h.hexdigest(), "checks": checks}, indent=1) + "\n")
    for proc, key, tml_names in [(qwen, "qwen", "Qwen35/Qwen38"), (kimi, "kimi", "KimiK25")]:
        for name, uri in probe.items():
            got = processor_count(proc, uri)
            if checks[key][name] != got:
                raise SystemExit(f"image processor gives {got} tokens for {name}, tml-renderers "
                                 f"{tml_names} {checks[key][name]}")
    info_qwen = {
        "class": "transformers.models.qwen2_vl.image_processing_qwen2_vl.Qwen2VLImageProcessor",
        "config": QWEN_VL_CONFIG,
        "source": "Qwen3-VL / Qwen3.5 preprocessor_config.json values (see oracle.py)",
        "checked_against": {"tml_renderers": ["Qwen35", "Qwen38"], "image_tokens": checks["qwen"]},
    }
    info_kimi = {
        "class": "transformers.models.kimi_k25.image_processing_kimi_k25.Kimi_K25ImageProcessor",
        "config": {"patch_size": kimi.patch_size, "merge_size": kimi.merge_size,
                   "max_patches": kimi.max_patches, "size": {"max_height": 512, "max_width": 512}},
        "source": "transformers' defaults for Kimi K2.5 (the cookbook loads moonshotai remote code)",
        "checked_against": {"tml_renderers": ["KimiK25"], "image_tokens": checks["kimi"]},
    }
    procs, info = {}, {}
    for r in QWEN_VL_RENDERERS:
        procs[r], info[r] = qwen, info_qwen
    for r in KIMI_VL_RENDERERS:
        procs[r], info[r] = kimi, info_kimi
    nemotron = NemotronStandInProcessor()
    info_nemotron = {
        "class": "NemotronStandInProcessor (oracle.py): transformers' nemotron_h_omni get_patch_grid_size",
        "config": {k: getattr(nemotron, k) for k in ("patch_size", "_downsample_factor", "min_num_patches", "max_num_patches", "max_model_len")},
        "source": "transformers' NemotronH-Omni defaults; the hub's remote-code processor is in no registry",
        "checked_against": "nothing else: tml-renderers 0.2.1 cannot size Nemotron images",
    }
    for r in NEMOTRON_VL_RENDERERS:
        procs[r], info[r] = nemotron, info_nemotron
    info["tml_v0"] = {"none": "tml-renderers sizes images itself; no image processor is passed"}
    return procs, {r: info[r] for r in RENDERERS if r in info}


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def draw_image(w: int, h: int, mode: str) -> Image.Image:
    """A deterministic test pattern: background, stripes, a square and a circle."""
    img = Image.new("RGB", (w, h), (30, 60, 200))
    d = ImageDraw.Draw(img)
    n = 12
    for i in range(n):
        x0 = i * w // n
        if i % 2:
            d.rectangle([x0, 0, (i + 1) * w // n - 1, h // 3], fill=(240, 240, 240))
    d.rectangle([w // 4, h // 3, w // 2, h // 3 + max(1, w // 4)], fill=(220, 30, 30))
    d.ellipse([w // 2, h // 2, w // 2 + w // 3, h // 2 + h // 3], fill=(40, 180, 60))
    if mode == "RGBA":
        img = img.convert("RGBA")
        px = ImageDraw.Draw(img)
        px.rectangle([0, 0, w // 3, h // 3], fill=(255, 255, 0, 128))
    return img


def image_uri(img: Image.Image, fmt: str) -> str:
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    mime = {"PNG": "image/png", "JPEG": "image/jpeg"}[fmt]
    return f"data:{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def resolve_text(spec: dict) -> str:
    html = (NM / spec["text_from"]).read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text[: spec["chars"]]


class Inputs:
    def __init__(self, cases: dict):
        self.texts = {k: resolve_text(v) for k, v in cases["texts"].items()}
        self.images = {
            k: image_uri(draw_image(*v["size"], v["mode"]), v["format"]) for k, v in cases["images"].items()
        }
        self.tools = cases["tools"]

    def value(self, v):
        if isinstance(v, dict) and "$text" in v:
            return self.texts[v["$text"]]
        if isinstance(v, dict) and "$image" in v:
            return self.images[v["$image"]]
        return v

    def message(self, m: dict) -> dict:
        out = {}
        for k, v in m.items():
            if k == "content":
                if isinstance(v, list):
                    out[k] = [{pk: self.value(pv) for pk, pv in part.items()} for part in v]
                else:
                    out[k] = self.value(v)
            elif k == "tool_calls":
                out[k] = [
                    ToolCall(
                        function=ToolCall.FunctionBody(**tc["function"]),
                        **({"id": tc["id"]} if "id" in tc else {}),
                    )
                    for tc in v
                ]
            else:
                out[k] = v
        return out

    def conversation(self, messages: list[dict], renderer) -> list[dict]:
        """Resolved messages; a leading $tools_prefix asks the renderer (may raise)."""
        out = []
        for m in messages:
            if "$tools_prefix" in m:
                p = m["$tools_prefix"]
                out += renderer.create_conversation_prefix_with_tools(
                    copy.deepcopy(self.tools) if p["tools"] else [], p["system_prompt"]
                )
            else:
                out.append(self.message(m))
        return out


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------

_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


def error_text(e: BaseException) -> str:
    return _ADDR.sub("0x…", f"{type(e).__name__}: {e}")


def attempt(fn) -> dict:
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001 - every exception is an outcome
        return {"error": error_text(e)}


def chunks_json(model_input) -> list[dict]:
    out: list[dict] = []
    for c in model_input.chunks:
        if isinstance(c, tinker.types.EncodedTextChunk):
            toks = [int(t) for t in c.tokens]
            if not toks:
                continue
            if out and "tokens" in out[-1]:
                out[-1]["tokens"].extend(toks)
            else:
                out.append({"tokens": toks})
        elif hasattr(c, "expected_tokens"):
            out.append({"image_tokens": int(c.expected_tokens), "format": str(c.format)})
        else:
            raise TypeError(f"unexpected chunk {type(c).__name__}")
    return out


def example_json(example) -> dict:
    model_input, weights = example
    w = [float(x) for x in (weights.tolist() if hasattr(weights, "tolist") else weights)]
    return {"chunks": chunks_json(model_input), "weights": w}


def sampled_tokens(example: dict) -> list[int]:
    """Tokens at positions with weight > 0 (text positions only)."""
    positions: list[int | None] = []
    for c in example["chunks"]:
        positions += c["tokens"] if "tokens" in c else [None] * c["image_tokens"]
    assert len(positions) == len(example["weights"]), "weights do not cover the chunks"
    return [t for t, w in zip(positions, example["weights"]) if w > 0 and t is not None]


# --------------------------------------------------------------------------------------------


def check_renderer_list() -> None:
    src = Path(renderers.__file__).read_text(encoding="utf-8")
    body = src[src.index("def get_renderer(") :]
    names = re.findall(r'(?:if|elif) name == "([^"]+)":', body)
    if names != RENDERERS:
        raise SystemExit(f"get_renderer's names changed: {names}")


def lineup() -> list[str]:
    infos = [
        model_info.get_llama_info, model_info.get_qwen_info, model_info.get_deepseek_info,
        model_info.get_gpt_oss_info, model_info.get_moonshot_info, model_info.get_zai_info,
        model_info.get_nvidia_info, model_info.get_thinkingmachines_info,
    ]
    return [f"{a.organization}/{k}" for f in infos for k, a in f().items()]


def models_json(names: list[str]) -> list[dict]:
    out = []
    for name in names:
        try:
            a = model_info.get_model_attributes(name)
            out.append({"name": name, "attributes": {
                "organization": a.organization, "version_str": a.version_str,
                "size_str": a.size_str, "is_chat": a.is_chat,
                "recommended_renderers": list(a.recommended_renderers), "is_vl": a.is_vl,
                "is_audio_in": a.is_audio_in,
            }})
        except Exception as e:  # noqa: BLE001
            out.append({"name": name, "error": error_text(e)})
    return out


class TokenizerCache:
    def __init__(self, manifest: dict):
        self.manifest = manifest
        self.cache: dict[str, object] = {}

    def get(self, renderer_name: str, key: str):
        # Renderers backed by tml-renderers get the cookbook's own tokenizer (its adapter around
        # the wheel's tokenizer), exactly as get_tokenizer(model) returns it.
        model = {"tml_v0": "thinkingmachines/Inkling"}.get(renderer_name)
        if renderer_name.startswith("kimi_k31_pro"):
            model = "moonshotai/Kimi-K3.1-Pro"
        if model:
            return tokenizer_utils.get_tokenizer(model)
        if key not in self.cache:
            from transformers import AutoTokenizer

            self.cache[key] = AutoTokenizer.from_pretrained(str(Path(self.manifest[key]["json"]).parent))
        return self.cache[key]


def run_renderer(name: str, tokenizers: TokenizerCache, inputs: Inputs, cases: dict,
                 processors: dict) -> dict:
    key = key_of(tokenizers.manifest, name)
    entry: dict = {"renderer": name, "tokenizer": key}
    try:
        tokenizer = tokenizers.get(name, key)
        renderer = renderers.get_renderer(name, tokenizer, processors.get(name))
        if name.startswith("gpt_oss") and renderer.use_system_prompt:
            renderer.current_date = GPT_OSS_CURRENT_DATE
            entry["options"] = {"current_date": GPT_OSS_CURRENT_DATE}
    except Exception as e:  # noqa: BLE001
        renderer = None
        construct_error = {"error": error_text(e)}
        entry["error"] = construct_error["error"]

    def run(fn):
        return dict(construct_error) if renderer is None else attempt(fn)

    entry["has_extension_property"] = (
        dict(construct_error) if renderer is None else
        (lambda r: r["ok"] if "ok" in r else r)(attempt(lambda: bool(renderer.has_extension_property)))
    )
    entry["stop_sequences"] = (
        dict(construct_error) if renderer is None else
        (lambda r: r["ok"] if "ok" in r else r)(attempt(lambda: list(renderer.get_stop_sequences())))
    )
    entry["tools_prefix"] = [
        {
            "tools": inputs.tools if p["tools"] else [],
            "system_prompt": p["system_prompt"],
            "result": run(lambda p=p: [
                message_to_jsonable(m)
                for m in renderer.create_conversation_prefix_with_tools(
                    copy.deepcopy(inputs.tools) if p["tools"] else [], p["system_prompt"])
            ]),
        }
        for p in cases["tools_prefix"]
    ]

    entry["cases"] = []
    parse_sources: list[tuple[str, list[int]]] = []
    for case in cases["conversations"]:
        if renderer is None and any("$tools_prefix" in m for m in case["messages"]):
            continue
        try:
            messages = inputs.conversation(case["messages"], renderer)
        except Exception:  # noqa: BLE001 - the renderer refuses the tools prefix: see tools_prefix
            continue
        result: dict = {"case": case["name"], "messages": [message_to_jsonable(m) for m in messages]}

        def op(fn):
            return run(lambda: fn(copy.deepcopy(messages)))

        result["generation_prompt"] = op(lambda m: chunks_json(renderer.build_generation_prompt(m)))
        result["generation_prompt_prefill"] = {
            "prefill": PREFILL,
            **op(lambda m: chunks_json(renderer.build_generation_prompt(m, prefill=PREFILL))),
        }
        result["supervised"] = {
            tow.value: op(lambda m, tow=tow: example_json(renderer.build_supervised_example(m, train_on_what=tow)))
            for tow in TrainOnWhat
        }
        result["supervised_examples"] = {
            tow.value: op(lambda m, tow=tow: [
                example_json(x) for x in renderer.build_supervised_examples(m, train_on_what=tow)
            ])
            for tow in SUPERVISED_EXAMPLES_MODES
        }
        entry["cases"].append(result)
        sup = result["supervised"][TrainOnWhat.LAST_ASSISTANT_MESSAGE.value]
        if messages and messages[-1]["role"] == "assistant" and "ok" in sup:
            toks = sampled_tokens(sup["ok"])
            parse_sources.append((f"supervised:{case['name']}", toks))
            parse_sources.append((f"supervised_truncated:{case['name']}", toks[:-1]))

    if renderer is not None:
        for resp in cases["responses"]["common"] + cases["responses"][RESPONSE_FAMILY[name]]:
            text = resp["text"]
            eos = text.endswith("{eos}")
            toks = list(renderer.tokenizer.encode(text.removesuffix("{eos}"), add_special_tokens=False))
            if eos:
                toks.append(int(renderer.tokenizer.eos_token_id))
            parse_sources.append((f"text:{resp['name']}", [int(t) for t in toks]))
    entry["parse"] = [
        {
            "source": source,
            "tokens": toks,
            "result": run(lambda toks=toks: (lambda mt: {
                "message": message_to_jsonable(mt[0]), "termination": mt[1].value,
            })(renderer.parse_response(list(toks)))),
        }
        for source, toks in parse_sources
    ]
    return entry


_STATE: dict = {}
# Worker of each tokenizer's renderers (about the same work on each side of 2 workers).
WORKER_OF_TOKENIZER = {
    "qwen3_5": 0, "qwen3": 0, "deepseek_v3": 0, "llama3": 0, "o200k_base_chat": 0,
    "nemotron3": 1, "kimi_k2": 1, "kimi_k25": 1, "glm5": 1, "deepseek_v4_1": 1, "gpt_oss": 1,
}


def key_of(manifest: dict, renderer_name: str) -> str:
    return next(k for k, e in manifest.items() if renderer_name in e["families"])


def _run_group(names: list[str]) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    tokenizers = TokenizerCache(_STATE["manifest"])
    entries = []
    for name in names:
        t1 = time.time()
        entry = run_renderer(name, tokenizers, _STATE["inputs"], _STATE["cases"], _STATE["processors"])
        entries.append(entry)
        n_err = sum(
            "error" in v
            for c in entry["cases"]
            for v in [c["generation_prompt"], *c["supervised"].values()]
        )
        log(f"{name}: {len(entry['cases'])} cases, {len(entry['parse'])} parses, {n_err} errors "
            f"({time.time() - t1:.1f} s)" + (f" — {entry['error']}" if "error" in entry else ""))
    return entries


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out_path = Path(sys.argv[1])
    t0 = time.time()
    check_renderer_list()
    manifest = tk.ensure_tokenizers()
    for r in RENDERERS:
        assert sum(r in e["families"] for e in manifest.values()) == 1, r
    assert set(WORKER_OF_TOKENIZER) == set(manifest), "assign every tokenizer to a worker"
    log(f"tokenizers ready ({time.time() - t0:.1f} s)")

    cases = json.loads((_HERE / "cases.json").read_text(encoding="utf-8"))
    inputs = Inputs(cases)
    processors, processor_info = make_image_processors(inputs.images)
    log(f"image processors checked against tml-renderers ({time.time() - t0:.1f} s)")

    _STATE.update(manifest=manifest, inputs=inputs, cases=cases, processors=processors)
    out = {
        "versions": {
            "tinker_cookbook": metadata.version("tinker-cookbook"),
            "tml_renderers": metadata.version("tml-renderers"),
            "transformers": metadata.version("transformers"),
            "tokenizers": metadata.version("tokenizers"),
            "tinker": metadata.version("tinker"),
            "torch": metadata.version("torch"),
            "torchvision": metadata.version("torchvision"),
            "pillow": metadata.version("pillow"),
            "python": platform.python_version(),
        },
        "tokenizers": manifest,
        "image_processors": processor_info,
        "models": models_json(lineup() + UNKNOWN_MODELS),
        "model_lookups": models_json(OTHER_LOOKUPS),
        "renderers": [],
    }
    # Renderers run in JOBS processes (fork), split by tokenizer so each loads only its own;
    # the result is the same, in get_renderer's order, whatever JOBS is.
    jobs = max(1, int(os.environ.get("RENDERER_ORACLE_JOBS", "2")))
    groups = [[r for r in RENDERERS if WORKER_OF_TOKENIZER[key_of(manifest, r)] % jobs == j]
              for j in range(jobs)]
    if jobs == 1:
        entries = _run_group(groups[0])
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            entries = [e for group in pool.map(_run_group, groups) for e in group]
    by_name = {e["renderer"]: e for e in entries}
    out["renderers"] = [by_name[r] for r in RENDERERS]

    n = len(lineup())
    assert n == 46 and all("attributes" in m for m in out["models"][:n]), "lineup changed"
    assert all("error" in m for m in out["models"][n:]) and all("attributes" in m for m in out["model_lookups"])
    out_path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    out_path.write_text(data + "\n", encoding="utf-8")
    log(f"wrote {out_path} ({len(data.encode()) / 1e6:.1f} MB) in {time.time() - t0:.1f} s")


if not __debug__:
    # Its assert checks guard what the oracle writes: under -O / PYTHONOPTIMIZE they would
    # vanish and a wrong expectation would be written silently.
    raise SystemExit(f"{__file__}: run without -O / PYTHONOPTIMIZE (its assert checks would be stripped)")

if __name__ == "__main__":
    main()
