// tinker-wasm/cookbook for Node: the cookbook's methods over this runtime's entry.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tinker from '../index.js';
import { cookbook } from './cookbook.js';

export const { supervised, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = cookbook(tinker, { fs, path });
