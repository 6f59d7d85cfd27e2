// Starts the real worker in workerd (`wrangler dev`, the harness's way) in
// front of an origin that is already running, gating one room's booking
// API (/api/{room}/), and keeps it up until SIGTERM or SIGINT, then stops
// it (wrangler and workerd, its process group). For scripts that drive the
// edge from outside node: scripts/rehearsal.sh --edge.
//
// Environment: WR_EDGE_ORIGIN_URL (the origin, loopback), WR_EDGE_ROOM,
// WR_EDGE_PORT (the edge's port), WR_EDGE_DIR (its config and logs),
// WR_SIGNING_KEYS and WR_EDGE_SECRET (the origin's). Prints one line,
// `edge ready: <url>`, once the worker answers.
//
// Usage: node tests/edge/serve.mjs

import { startEdge, sleep } from "./harness.mjs";

function need(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`serve.mjs: ${name} is required`);
    process.exit(2);
  }
  return value;
}

const originUrl = need("WR_EDGE_ORIGIN_URL");
const room = need("WR_EDGE_ROOM");
const port = Number(need("WR_EDGE_PORT"));
const dir = need("WR_EDGE_DIR");
const signingKeys = need("WR_SIGNING_KEYS");
const edgeSecret = need("WR_EDGE_SECRET");
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(originUrl)) {
  console.error(`serve.mjs: WR_EDGE_ORIGIN_URL ${originUrl}: a loopback http origin only`);
  process.exit(2);
}
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`serve.mjs: WR_EDGE_PORT ${process.env.WR_EDGE_PORT}: a TCP port`);
  process.exit(2);
}

const edge = await startEdge({
  dir,
  originUrl,
  port,
  rooms: [{ room, paths: [`/api/${room}/`] }],
  bypassPaths: ["/healthz", "/readyz"],
  signingKeys,
  edgeSecret,
});
console.log(`edge ready: ${edge.url}`);
// The harness stops the worker's process group on SIGTERM/SIGINT and exit.
for (;;) await sleep(60_000);
