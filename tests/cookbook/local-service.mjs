// The ServiceClient each of our sides of the differential tests makes (tests/cookbook/
// run_sft|dpo|rl|distill.mjs, tests/openai/cookbook_oracle.mjs): on the simulator at
// `baseURL`, telemetry off, the model's tokenizer read from `tokenizerDir` (no network).
// `sdk` is the entry the script runs on (the cookbook's build, or the package's main one).
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * @param {{ ServiceClient: any, Tokenizer: any }} sdk
 * @param {string} baseURL
 * @param {string} tokenizerDir
 */
export function localService({ ServiceClient, Tokenizer }, baseURL, tokenizerDir) {
  const read = (name) => fs.readFileSync(path.join(tokenizerDir, name), 'utf8');
  return new ServiceClient({
    baseURL,
    apiKey: process.env.TINKER_API_KEY ?? 'tml-local',
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(read('tokenizer.json'), { config: read('tokenizer_config.json') }),
  });
}
