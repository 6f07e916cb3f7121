// What the TypeScript ext-apps server helpers make of our metadata (tests/apps_interop.rs).
// Reads {"tools": [{"name", "ui"}], "clientCapabilities"} on stdin; prints the helpers'
// constants, the `_meta` that `registerAppTool` gives each tool declared with only its
// `_meta.ui`, and what `getUiCapability` reads from our client capabilities.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [packageDir] = process.argv.slice(2);
const helpers = await import(pathToFileURL(`${packageDir}/dist/src/server/index.js`).href);
const input = JSON.parse(readFileSync(0, "utf8"));

const registered = {};
// registerAppTool calls server.registerTool(name, config, callback) with the config it
// normalised; a stand-in server keeps what it was given.
const server = {
  registerTool(name, config) {
    registered[name] = config._meta;
    return {};
  },
};
for (const tool of input.tools) {
  helpers.registerAppTool(server, tool.name, { description: tool.name, _meta: { ui: tool.ui } }, () => ({ content: [] }));
}

process.stdout.write(JSON.stringify({
  extensionId: helpers.EXTENSION_ID,
  mimeType: helpers.RESOURCE_MIME_TYPE,
  legacyKey: helpers.RESOURCE_URI_META_KEY,
  registered,
  uiCapability: helpers.getUiCapability(input.clientCapabilities) ?? null,
}));
