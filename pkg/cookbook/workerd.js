// tinker-wasm/cookbook for Cloudflare Workers: the cookbook's methods over this runtime's entry.
import * as tinker from '../workerd.js';
import { cookbook } from './cookbook.js';

export const { supervised, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = cookbook(tinker);
