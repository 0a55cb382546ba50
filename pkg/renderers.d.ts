import type { Renderer, Tokenizer, RendererOptions, ChatMessage, GenerationPromptOptions, SupervisedExampleOptions, SupervisedExample, ParsedResponse, RenderedModelInput, ToolSpec } from './gen/full/tinker_wasm.js';

/** What a renderer offers: the built-in `Renderer` class, or any object a registered factory returns. */
export interface RendererLike {
  /** The renderer's name. */
  readonly name: string;
  /** What ends a turn: pass it as `sampling_params.stop` (token ids, or strings). */
  readonly stopSequences: number[] | string[];
  /** Whether each generation prompt of a conversation is a prefix of the next one (the cookbook's `has_extension_property`). */
  readonly hasExtensionProperty: boolean;
  /** The model input for sampling the next turn. */
  buildGenerationPrompt(messages: ChatMessage[], options?: GenerationPromptOptions): RenderedModelInput;
  /** Tokens and per-position weights for supervised training (weight 1 on what `train_on_what` selects). */
  buildSupervisedExample(messages: ChatMessage[], options?: SupervisedExampleOptions): SupervisedExample;
  /** One example per trained turn when the renderer lacks the extension property (else one example), as the cookbook's `build_supervised_examples`. */
  buildSupervisedExamples(messages: ChatMessage[], options?: SupervisedExampleOptions): SupervisedExample[];
  /** Parses sampled tokens back into an assistant message (reasoning and tool calls split out where the format has them). */
  parseResponse(tokens: Uint32Array | ArrayLike<number>): ParsedResponse;
  /** The message(s) that declare `tools` to the model, to put before a conversation (the cookbook's `create_conversation_prefix_with_tools`). */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt?: string): ChatMessage[];
}

/** Makes a renderer for a tokenizer (the cookbook's factory `(tokenizer, image_processor)`). */
export type RendererFactory = (tokenizer: Tokenizer, options?: RendererOptions) => RendererLike;

/** Registers `factory` under `name`; `getRenderer(name, …)` returns what it makes (a built-in name is overridden). */
export declare function registerRenderer(name: string, factory: RendererFactory): void;
/** Removes a registered renderer; `true` if there was one. */
export declare function unregisterRenderer(name: string): boolean;
/** The names registered with `registerRenderer`. */
export declare function getRegisteredRendererNames(): string[];
/** Whether `name` was registered with `registerRenderer`. */
export declare function isRendererRegistered(name: string): boolean;
/** A registered renderer if there is one under `name`, else the built-in `new Renderer(name, tokenizer, options)`. */
export declare function getRenderer(name: string, tokenizer: Tokenizer, options?: RendererOptions): Renderer | RendererLike;
