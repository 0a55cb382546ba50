// Every cross-runtime suite. Each runner (Node, Chromium, workerd) runs all of them.
import smoke from './smoke.js';

export default { smoke };
