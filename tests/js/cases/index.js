// Every cross-runtime suite. Each runner (Node, Chromium, workerd) runs all of them.
// `panic` stays last: a synchronous panic leaves std's panic state behind (tests/NOTES-issue9.md).
import smoke from './smoke.js';
import clientInput from './client-input.js';
import badInput from './bad-input.js';
import dataLanes from './data-lanes.js';
import training, { tokenizerCases } from './training.js';
import sampling from './sampling.js';
import rest from './rest.js';
import surface, { tokenizerSurface } from './surface.js';
import tokenizer from './tokenizer.js';
import cookbook from './cookbook.js';
import openai from './openai.js';
import panic from './panic.js';

export default { smoke, 'client-input': clientInput, 'bad-input': badInput, 'data-lanes': dataLanes, training, 'get-tokenizer': tokenizerCases, sampling, rest, surface, 'surface-tokenizer': tokenizerSurface, tokenizer, cookbook, openai, panic };
