// tinker-wasm/lite for Node.js (ESM, and require() on Node >= 20.19): loads the wasm
// synchronously from the file next to this one, so importing is enough, no init call.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from '../gen/lite/tinker_wasm.js';
import { install, adminClient } from '../extras.js';
import { withNodeTransport } from '../node-transport.js';
import { host } from '../host.js';

glue.initSync({ module: fs.readFileSync(new URL('../gen/lite/tinker_wasm_bg.wasm', import.meta.url)) });
glue.__setHost(host);

export const { ModelInput, TensorData, datumFromTokens } = install(glue, { fs, path });
export * from '../gen/lite/tinker_wasm.js';
export * from '../errors.js';
// HTTP over node:http(s) keep-alive unless `options.fetch` is given (../node-transport.js).
export const { ServiceClient, RestClient, SamplingClient } = withNodeTransport(glue);
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(RestClient);
