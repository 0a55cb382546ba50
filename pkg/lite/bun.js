// tinker-wasm/lite for Bun: the wasm is imported as a file (a path on disk, or embedded by
// `bun build --compile`), read and instantiated synchronously; HTTP through Bun's fetch
// (see ../bun.js).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from '../gen/lite/tinker_wasm.js';
import wasmPath from '../gen/lite/tinker_wasm_bg.wasm' with { type: 'file' };
import { install, adminClient } from '../extras.js';
import { host } from '../host.js';

glue.initSync({ module: fs.readFileSync(wasmPath) });
// The environment, files and commands for the core's defaults (host.js).
glue.__setHost(host);

export const { ModelInput, TensorData, datumFromTokens } = install(glue, { fs, path });
export * from '../gen/lite/tinker_wasm.js';
export * from '../errors.js';
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(glue.RestClient);
