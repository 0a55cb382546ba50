import type { Renderer, Tokenizer, RendererOptions, ChatMessage, GenerationPromptOptions, SupervisedExampleOptions, SupervisedExample, ParsedResponse, RenderedModelInput, ToolSpec } from './gen/full/tinker_wasm.js';

/** What a renderer offers: the built-in `Renderer` class, or any object a registered factory returns. */
export interface RendererLike {
  readonly name: string;
  readonly stopSequences: number[] | string[];
  readonly hasExtensionProperty: boolean;
  buildGenerationPrompt(messages: ChatMessage[], options?: GenerationPromptOptions): RenderedModelInput;
  buildSupervisedExample(messages: ChatMessage[], options?: SupervisedExampleOptions): SupervisedExample;
  buildSupervisedExamples(messages: ChatMessage[], options?: SupervisedExampleOptions): SupervisedExample[];
  parseResponse(tokens: Uint32Array | ArrayLike<number>): ParsedResponse;
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
