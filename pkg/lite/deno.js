// tinker-wasm/lite for Deno: the wasm arrives through Deno's module loader as a compiled
// WebAssembly.Module (a source phase import: no --allow-read needed), instantiated
// synchronously; HTTP over node:http(s) keep-alive (see ../deno.js).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from '../gen/lite/tinker_wasm.js';
import source module from '../gen/lite/tinker_wasm_bg.wasm';
import { install, adminClient } from '../extras.js';
import { host } from '../host.js';
import { withNodeTransport } from '../node-transport.js';

glue.initSync({ module });
// The environment, files and commands for the core's defaults (host.js).
glue.__setHost(host);

export const { ModelInput, TensorData, datumFromTokens } = install(glue, { fs, path });
export * from '../gen/lite/tinker_wasm.js';
export * from '../errors.js';
// HTTP over node:http(s) keep-alive unless `options.fetch` is given (../node-transport.js).
export const { ServiceClient, RestClient, SamplingClient } = withNodeTransport(glue);
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(RestClient);
