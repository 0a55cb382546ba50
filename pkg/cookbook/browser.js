// tinker-wasm/cookbook for browsers and bundlers: the cookbook's methods over this runtime's entry.
import * as tinker from '../browser.js';
import { cookbook } from './cookbook.js';

export const { supervised, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = cookbook(tinker);
