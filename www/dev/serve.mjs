// `make playground`: the site, tinker-sim and the relay (miniflare) on loopback; prints
// the URL and runs until interrupted. PLAYGROUND_PORT / RELAY_PORT pick fixed ports.
import { startStack } from './stack.mjs';

const stack = await startStack({
  apiKey: process.env.PLAYGROUND_API_KEY || 'tml-playground-local',
  sitePort: Number(process.env.PLAYGROUND_PORT || 0),
  relayPort: Number(process.env.RELAY_PORT || 0),
  simArgs: ['--seed', process.env.PLAYGROUND_SEED || '7'],
  echo: process.env.RELAY_LOG !== '0',
});

console.log(`
  tinker-wasm playground   ${stack.siteURL}/
  relay (miniflare)        ${stack.relayURL}   (allows only ${stack.siteURL})
  tinker-sim               ${stack.simURL}   (API key for direct mode: ${stack.apiKey})

  Press Ctrl+C to stop.
`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
