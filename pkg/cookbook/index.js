// tinker-wasm/cookbook for Node: the cookbook's methods over this runtime's entry (in a
// terminal, a run draws its progress on stderr unless `progress: false`).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tinker from '../index.js';
import { cookbook } from './cookbook.js';
import { stepProgress } from '../cli/progress.js';

export const { supervised, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = cookbook(tinker, { fs, path, progress: () => stepProgress(process.stderr) });
