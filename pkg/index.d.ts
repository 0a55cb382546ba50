// Type declarations for tinker-wasm. Every runtime entry point exports the same API.
export * from './gen/full/tinker_wasm.js';
