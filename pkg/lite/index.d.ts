// Type declarations for tinker-wasm/lite. Every runtime entry point exports the same API.
export * from '../gen/lite/tinker_wasm.js';
