// A host built on the TypeScript MCP SDK v1 (the client hosts ship), speaking 2025-11-25 over
// stdio to `mcp bridge URL`: the test of crates/modelctx-cli/tests/bridge/demo_upstream.rs runs it with
// NODE_PATH pointing at scripts/ts-sdk-env.sh's install. Usage: node bridge_host.cjs MCP URL.
// Prints one JSON report on stdout; exits non-zero on any failure.
'use strict';
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const {
  ElicitRequestSchema,
  CreateMessageRequestSchema,
  ListRootsRequestSchema,
} = require('@modelcontextprotocol/sdk/types.js');

const [mcp, url] = process.argv.slice(2);
const BOUND_MS = 30000;
const answers = { region: 'eu-west-1', environment: 'staging', count: 2 };
const questions = { form: 0, url: 0, sampling: 0, roots: 0 };
// The next form question is held until the server withdraws it (the cancellation step).
let hold = null;

function within(promise, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${BOUND_MS} ms`)), BOUND_MS);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

function text(result) {
  return result.content.find((c) => c.type === 'text').text;
}

async function main() {
  const client = new Client(
    { name: 'ts-host', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const params = request.params;
    if (params.mode === 'url') {
      questions.url += 1;
      return { action: 'accept' };
    }
    questions.form += 1;
    if (hold) {
      const held = hold;
      hold = null;
      held.asked();
      await new Promise((resolve) => extra.signal.addEventListener('abort', resolve, { once: true }));
      held.withdrawn = true;
      return { action: 'cancel' };
    }
    const content = {};
    for (const name of Object.keys(params.requestedSchema.properties)) {
      content[name] = answers[name];
    }
    return { action: 'accept', content };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    questions.sampling += 1;
    return { model: 'ts-host', role: 'assistant', content: { type: 'text', text: 'ts-host summary' } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    questions.roots += 1;
    return { roots: [{ uri: 'file:///tmp/ts-host', name: 'ts-host' }] };
  });
  const transport = new StdioClientTransport({ command: mcp, args: ['bridge', url], stderr: 'inherit' });
  await within(client.connect(transport), 'connect');
  const report = { server: client.getServerVersion(), instructions: client.getInstructions() };
  const tools = await within(client.listTools(), 'tools/list');
  report.tools = tools.tools.map((t) => t.name);
  const call = async (name, args) => text(await within(client.callTool({ name, arguments: args }), name));
  const progress = [];
  const provisioned = await within(
    client.callTool({ name: 'provision', arguments: { name: 'web' } }, undefined, {
      onprogress: (p) => progress.push(p.message),
    }),
    'provision',
  );
  report.provision = text(provisioned);
  report.progress = progress;
  report.deploy = await call('deploy', { service: 'api' });
  report.summarize = await call('summarize', { text: 'a long text to summarize' });
  report.connect_account = await call('connect_account', { service: 'github' });
  report.where_am_i = await call('where_am_i', {});
  report.questions = { ...questions };

  // Cancellation: the host gives up while the question is open; the bridge cancels the call
  // and withdraws the question (notifications/cancelled for the elicitation request).
  const held = { withdrawn: false };
  const asked = new Promise((resolve) => { held.asked = resolve; });
  hold = held;
  const controller = new AbortController();
  const cancelled = client
    .callTool({ name: 'provision', arguments: { name: 'never' } }, undefined, { signal: controller.signal })
    .then(() => 'completed', () => 'aborted');
  await within(asked, 'the held question');
  controller.abort('the user gave up');
  const outcome = await within(cancelled, 'the cancelled call');
  for (let i = 0; i < 100 && !held.withdrawn; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  report.cancelled = { call: outcome, question_withdrawn: held.withdrawn };
  report.after_cancel = await call('provision', { name: 'db' });
  await client.close();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((error) => {
  process.stdout.write(`${JSON.stringify({ error: String(error && error.stack || error) })}\n`);
  process.exit(1);
});
