// The end-to-end harness for the edge: starts a private redis-server, the
// real origin binary and the real worker in workerd (`wrangler dev`), all on
// 127.0.0.1 with free ports, and stops every one of them when the test ends,
// failed or not.
//
// Each child runs in its own process group (detached), so stopping it also
// stops what it started (wrangler starts workerd). Only groups this file
// started are ever signalled.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, writeFileSync, createWriteStream, existsSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ARTIFACTS = path.join(ROOT, "target", "e2e-artifacts");

// Throwaway secrets for tests only.
export const SIGNING_KEYS = "k1:e2e-signing-secret-0123456789";
export const FOREIGN_KEYS = "k1:someone-elses-secret-0123456789";
export const EDGE_SECRET = "e2e-edge-secret-0123456789";
export const BYPASS_SECRET = "e2e-bypass-secret-0123456789";

const ORIGIN_BIN = process.env.ORIGIN_BIN || path.join(ROOT, "target", "release", "origin");
const WRANGLER = path.join(ROOT, "node_modules", ".bin", "wrangler");
const WORKER_MAIN = path.join(ROOT, "edge", "build", "index.js");

/** Everything started, newest last; stopped in reverse. */
const children = [];

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A port nothing listens on right now. */
export async function freePort() {
  const server = net.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  await once(server, "close");
  return port;
}

/** A fresh folder under the system temp dir (or $E2E_TMP). */
export function scratch(name) {
  const base = process.env.E2E_TMP || tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(path.join(base, `wr-${name}-`));
}

function start(name, command, args, { cwd, env, logDir }) {
  const log = createWriteStream(path.join(logDir, `${name}.log`));
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const entry = { name, child, exited: false, logFile: path.join(logDir, `${name}.log`) };
  child.on("exit", () => { entry.exited = true; });
  children.push(entry);
  return entry;
}

/** Stops one started child: SIGINT to its group, SIGKILL after a grace. */
export async function stop(entry, graceMs = 3000) {
  if (!entry || entry.exited) return;
  const signal = (sig) => {
    try { process.kill(-entry.child.pid, sig); } catch { /* already gone */ }
  };
  signal("SIGINT");
  const deadline = Date.now() + graceMs;
  while (!entry.exited && Date.now() < deadline) await sleep(50);
  signal("SIGKILL");
  while (!entry.exited && Date.now() < deadline + 1000) await sleep(50);
}

/** Stops everything this harness started, newest first. */
export async function stopAll() {
  for (const entry of [...children].reverse()) await stop(entry);
}

// If the test process dies anyway (a failure, a timeout's SIGTERM, Ctrl-C),
// take the children with it.
function killAllNow() {
  for (const { child, exited } of children) {
    if (!exited) {
      try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ }
    }
  }
}
process.on("exit", killAllNow);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    killAllNow();
    process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
  });
}

async function waitFor(what, entry, probe, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (entry.exited) throw new Error(`${what} exited early; see ${entry.logFile}`);
    try {
      if (await probe()) return;
    } catch (e) {
      last = String(e && e.message);
    }
    await sleep(150);
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms (${last}); see ${entry.logFile}`);
}

/** A private redis-server on a free port, keeping nothing on disk. */
export async function startRedis(dir) {
  const port = await freePort();
  const entry = start("redis", "redis-server", [
    "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
  ], { cwd: dir, env: {}, logDir: dir });
  await waitFor("redis", entry, () => new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
    socket.on("data", (d) => { socket.destroy(); resolve(String(d).startsWith("+PONG")); });
    socket.on("error", () => resolve(false));
  }), 10000);
  return { entry, url: `redis://127.0.0.1:${port}` };
}

/** A TOML value: strings quoted, numbers and booleans as they are. */
function tomlValue(v) {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(", ")}]`;
  return String(v);
}

/**
 * A rooms file: `[[room]]` tables with the admin API's field names; a room's
 * `performances` (a list of objects with an `id` and the admin API's
 * performance fields, `sections` a list of objects) become
 * `[[room.performances]]` and `[[room.performances.sections]]` tables.
 */
export function roomsToml(rooms) {
  const scalars = (obj) => Object.entries(obj)
    .filter(([, v]) => typeof v !== "object" || v === null || (Array.isArray(v) && v.every((x) => typeof x !== "object")))
    .map(([k, v]) => `${k} = ${tomlValue(v)}`);
  return rooms.map(({ performances = [], ...room }) => [
    "[[room]]",
    ...scalars(room),
    ...performances.flatMap(({ sections = [], ...perf }) => [
      "",
      "[[room.performances]]",
      ...scalars(perf),
      ...sections.flatMap((section) => ["", "[[room.performances.sections]]", ...scalars(section)]),
    ]),
  ].join("\n")).join("\n\n") + "\n";
}

/**
 * The origin binary on a free port. `rooms` is a list of objects written to
 * rooms.toml with the admin API's field names (see `roomsToml`). Without
 * `redisUrl` the origin runs on its embedded store; with `adminKey` its admin
 * API is on. Booking runs on its own SQLite file in `dir` (`sqlitePath`,
 * default `{dir}/{name}.sqlite`: a restart with the same name finds its data
 * again), never the origin's default in the working directory.
 */
export async function startOrigin({ dir, redisUrl, prefix, rooms, name = "origin", port, adminKey, sqlitePath, args = [] }) {
  if (!existsSync(ORIGIN_BIN)) throw new Error(`no origin binary at ${ORIGIN_BIN}: cargo build -p origin --release`);
  port = port || await freePort();
  writeFileSync(path.join(dir, `${name}-rooms.toml`), roomsToml(rooms));
  const entry = start(name, ORIGIN_BIN, [
    "--listen", `127.0.0.1:${port}`,
    ...(redisUrl ? ["--redis-url", redisUrl, "--redis-prefix", prefix, "--redis-timeout-ms", "300"] : []),
    ...(adminKey ? ["--admin-key", adminKey] : []),
    "--signing-keys", SIGNING_KEYS,
    "--rooms", path.join(dir, `${name}-rooms.toml`),
    "--sqlite-path", sqlitePath || path.join(dir, `${name}.sqlite`),
    "--tick-ms", "100",
    ...args,
  ], { cwd: dir, env: { RUST_LOG: "warn" }, logDir: dir });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(name, entry, async () => (await fetch(`${url}/healthz`)).ok, 15000);
  return { entry, url, port };
}

/**
 * The worker in workerd via `wrangler dev`, with its own generated config
 * (and .dev.vars) in its own folder, so several can run side by side.
 * `signingKeys` and `edgeSecret` default to the tests' throwaway ones;
 * `port` to a free one.
 */
export async function startEdge(options) {
  // Several wrangler processes start side by side: now and then one exits
  // at start (a free port taken before it binds, or workerd failing to come
  // up under load). That is the test machine, not the worker: start it again
  // on fresh ports, twice at most; its log says why.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEdgeOnce({ ...options, name: attempt === 1 ? (options.name || "edge") : `${options.name || "edge"}-${attempt}` });
    } catch (e) {
      if (attempt >= 3 || !/exited early/.test(String(e && e.message))) throw e;
      console.error(`startEdge: ${e.message}; starting it again`);
    }
  }
}

async function startEdgeOnce({
  dir, name = "edge", originUrl, failMode = "closed", rooms, bypassPaths = ["/static/"], vars = {},
  readyStatus = 200, signingKeys = SIGNING_KEYS, edgeSecret = EDGE_SECRET, port,
}) {
  if (!existsSync(WORKER_MAIN)) throw new Error(`no worker at ${WORKER_MAIN}: scripts/edge-build.sh`);
  const home = path.join(dir, name);
  mkdirSync(path.join(home, "xdg"), { recursive: true });
  mkdirSync(path.join(home, "tmp"), { recursive: true });
  port = port || await freePort();
  // Each workerd also opens a devtools port (9229 by default): several side
  // by side need their own.
  const inspectorPort = await freePort();
  const allVars = {
    ORIGIN_URL: originUrl,
    ROOMS: JSON.stringify(rooms),
    FAIL_MODE: failMode,
    BYPASS_PATHS: JSON.stringify(bypassPaths),
    ...vars,
  };
  writeFileSync(path.join(home, "wrangler.toml"), [
    `name = "wr-edge-e2e-${name}"`,
    `main = ${JSON.stringify(WORKER_MAIN)}`,
    `compatibility_date = "2025-06-01"`,
    "[vars]",
    ...Object.entries(allVars).map(([k, v]) => `${k} = ${JSON.stringify(v)}`),
    "",
  ].join("\n"));
  writeFileSync(path.join(home, ".dev.vars"), [
    `SIGNING_KEYS=${JSON.stringify(signingKeys)}`,
    `EDGE_SECRET=${JSON.stringify(edgeSecret)}`,
    `BYPASS_SECRET=${JSON.stringify(BYPASS_SECRET)}`,
    "",
  ].join("\n"));
  const entry = start(name, WRANGLER, [
    "dev", "--config", path.join(home, "wrangler.toml"),
    "--ip", "127.0.0.1", "--port", String(port),
    "--inspector-ip", "127.0.0.1", "--inspector-port", String(inspectorPort),
    "--show-interactive-dev-session=false", "--log-level", process.env.WR_EDGE_LOG_LEVEL || "warn",
  ], {
    cwd: home,
    env: {
      WRANGLER_SEND_METRICS: "false",
      WRANGLER_HIDE_BANNER: "true",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      XDG_CONFIG_HOME: path.join(home, "xdg"),
      TMPDIR: path.join(home, "tmp"),
      CI: "true",
    },
    logDir: dir,
  });
  const url = `http://127.0.0.1:${port}`;
  // The worker's own waiting page (or, misconfigured on purpose, its 500)
  // means it is up.
  await waitFor(name, entry, async () => {
    const res = await fetch(`${url}/waiting-room/${rooms[0].room}`);
    await res.arrayBuffer();
    return res.status === readyStatus;
  }, 60000);
  return { entry, url, port };
}

/** A cookie jar for one visitor: keeps name=value pairs from Set-Cookie. */
export class Visitor {
  constructor(base) {
    this.base = base;
    this.cookies = new Map();
  }

  cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async request(method, urlPath, { headers = {}, body } = {}) {
    const res = await fetch(this.base + urlPath, {
      method,
      headers: { ...(this.cookies.size ? { Cookie: this.cookieHeader() } : {}), ...headers },
      body,
      redirect: "manual",
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const eq = pair.indexOf("=");
      const key = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const maxAge = attrs.map((a) => a.trim().toLowerCase()).find((a) => a.startsWith("max-age="));
      if (value === "" || maxAge === "max-age=0") this.cookies.delete(key);
      else this.cookies.set(key, value);
    }
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, text, json };
  }

  json(method, urlPath, headers = {}) {
    return this.request(method, urlPath, { headers: { Accept: "application/json", ...headers } });
  }

  page(urlPath, headers = {}) {
    return this.request("GET", urlPath, {
      headers: {
        Accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "Sec-Fetch-Mode": "navigate",
        ...headers,
      },
    });
  }
}

/** Removes a scratch folder unless E2E_KEEP is set (for debugging). */
export function cleanup(dir) {
  if (!process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
}
