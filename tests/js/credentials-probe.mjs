// Run by tests/js/credentials.test.mjs in Node, Bun and Deno: a RestClient made with no
// options at all (every setting from the environment, by the core's rules) asks the JWT
// simulator who it is, and prints the answer as JSON.
const entry = globalThis.Deno ? globalThis.Deno.args[0] : process.argv[2];
const { RestClient } = await import(entry);
const rest = new RestClient();
try {
  console.log(JSON.stringify(await rest.whoami()));
} finally {
  await rest.close();
}
