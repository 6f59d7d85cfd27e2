// The edge's latency benchmark, in ONE run: requests of each kind are
// interleaved round-robin over the same keep-alive connection, so they share
// the machine's conditions, and p50/p90/p99 are reported per kind:
//   - protected, valid entry token, through the worker (gate + verify)
//   - unprotected passthrough, through the same worker (no gate work)
//   - the same request straight to the origin (what wrangler dev adds)
//   - held browser: the worker answers with the waiting page itself
//   - held API call: the worker answers 429 itself
// The gate's own cost is p50(protected) - p50(unprotected): both go to the
// same origin handler (its JSON 404) through the same worker.
//
// Kinds run one after another, in a fresh shuffled order each round.
//
// Usage: node tests/edge/bench.mjs   (scripts/edge-bench.sh builds first)
// BENCH_ROUNDS (default 1000) and BENCH_WARMUP (default 200) bound it.

import http from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";

import { ROOT, Visitor, cleanup, scratch, startEdge, startOrigin, startRedis, stopAll } from "./harness.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS || 1000);
const WARMUP = Number(process.env.BENCH_WARMUP || 200);
const ROOM = "concert";

function get(agent, url, headers) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.get(url, { agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    });
    req.setTimeout(10000, () => req.destroy(new Error(`timeout: ${url}`)));
    req.on("error", reject);
  });
}

// A seeded shuffle (xorshift32), so runs are repeatable.
let seed = 0x9e3779b9;
function random() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 2 ** 32;
}
function shuffle(list) {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const dir = scratch("bench");
  try {
    const redis = await startRedis(dir);
    const origin = await startOrigin({
      dir,
      redisUrl: redis.url,
      prefix: `wrbench-${process.pid}-${Date.now()}:`,
      // Room for everyone at once and a session longer than the run.
      rooms: [{ id: ROOM, capacity: 1000, admit_per_second: 100.0, session_seconds: 3600, abandon_seconds: 600 }],
    });
    const edge = await startEdge({ dir, originUrl: origin.url, rooms: [{ room: ROOM, paths: ["/book/"] }] });

    const visitor = new Visitor(edge.url);
    const joined = await visitor.json("POST", `/queue/${ROOM}/join`);
    if (joined.json?.state !== "admitted") throw new Error(`not admitted: ${joined.text}`);
    const cookie = visitor.cookieHeader();
    const nav = { Accept: "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8", "Sec-Fetch-Mode": "navigate" };

    const kinds = [
      { name: "protected, valid entry token (worker, gate + verify)", url: `${edge.url}/book/${ROOM}/seats`, headers: { ...nav, Cookie: cookie }, status: 404 },
      { name: "unprotected passthrough (same worker, no gate work)", url: `${edge.url}/about/${ROOM}/seats`, headers: { ...nav, Cookie: cookie }, status: 404 },
      { name: "direct to the origin (no worker)", url: `${origin.url}/book/${ROOM}/seats`, headers: { ...nav, Cookie: cookie }, status: 404 },
      { name: "held browser: waiting page from the worker", url: `${edge.url}/book/${ROOM}/seats`, headers: nav, status: 200 },
      { name: "held API call: 429 from the worker", url: `${edge.url}/book/${ROOM}/seats`, headers: { Accept: "application/json" }, status: 429 },
    ];
    // One keep-alive connection for everything through the worker (and one
    // to the origin): connections carry offsets of their own of several
    // tenths of a millisecond, which would swamp the gate's cost.
    const toEdge = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const toOrigin = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (const kind of kinds) {
      kind.agent = kind.url.startsWith(origin.url) ? toOrigin : toEdge;
      kind.samples = [];
    }

    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      // A fresh shuffle each round: a request is measurably slower right
      // after one that went to the origin, so no kind may always follow the
      // same other.
      const order = shuffle(kinds);
      for (const kind of order) {
        const { status, ms } = await get(kind.agent, kind.url, kind.headers);
        if (status !== kind.status) throw new Error(`${kind.name}: status ${status}, expected ${kind.status}`);
        if (round >= WARMUP) kind.samples.push(ms);
      }
    }

    // Paired per round (the two requests ran back to back), so slow moments
    // of the machine cancel out.
    const paired = kinds[0].samples.map((ms, i) => ms - kinds[1].samples[i]).sort((a, b) => a - b);
    const rows = kinds.map((kind) => {
      const sorted = [...kind.samples].sort((a, b) => a - b);
      return { name: kind.name, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
    });
    const wasm = readFileSync(path.join(ROOT, "edge", "build", "index_bg.wasm"));
    const js = readFileSync(path.join(ROOT, "edge", "build", "index.js"));
    const fmt = (ms) => ms.toFixed(3);
    const lines = [
      `rounds: ${ROUNDS} (after ${WARMUP} warm-up), one keep-alive connection through the worker and one to the origin, kinds shuffled every round`,
      "",
      "| request | p50 ms | p90 ms | p99 ms |",
      "|---|---:|---:|---:|",
      ...rows.map((r) => `| ${r.name} | ${fmt(r.p50)} | ${fmt(r.p90)} | ${fmt(r.p99)} |`),
      "",
      `gate's own cost at p50 (protected - unprotected): ${fmt(rows[0].p50 - rows[1].p50)} ms; per-round differences: median ${fmt(percentile(paired, 50))} ms, middle half ${fmt(percentile(paired, 25))} to ${fmt(percentile(paired, 75))} ms`,
      `wrangler dev + worker passthrough at p50 (unprotected - direct): ${fmt(rows[1].p50 - rows[2].p50)} ms`,
      `bundle: index_bg.wasm ${wasm.length} B raw, ${gzipSync(wasm, { level: 9 }).length} B gzipped; index.js ${js.length} B raw, ${gzipSync(js, { level: 9 }).length} B gzipped`,
    ];
    const report = lines.join("\n");
    console.log(report);
    writeFileSync(path.join(ROOT, "target", "edge-bench.txt"), report + "\n");
  } finally {
    await stopAll();
    cleanup(dir);
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
