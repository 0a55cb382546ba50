// Every cross-runtime suite. Each runner (Node, Chromium, workerd) runs all of them.
import smoke from './smoke.js';
import tokenizer from './tokenizer.js';

export default { smoke, tokenizer };
