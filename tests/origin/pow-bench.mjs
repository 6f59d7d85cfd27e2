// The waiting page's proof-of-work solver, timed in headless Chromium: the
// solver part of pages/src/waiting/page.js (between its markers), served by
// a small page on 127.0.0.1 under the waiting page's CSP (inline script by
// hash, `worker-src blob:`), solving N random seeds per difficulty. Prints
// per bits the median and p95 solve time, the median tries and hashes per
// second. The seeds look like the origin's (54 base64url characters).
//
// Usage: node tests/origin/pow-bench.mjs [--n 20] [--bits 12,16,18,20,22]
//        [--mode subtle|js] [--inline]   (--inline: no worker, main thread)
// Run by scripts/pow-bench.sh, which installs chromium and playwright-core.

import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { closeBrowser, launchBrowser } from "../browser.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : dflt;
};
const N = Number(opt("n", "20"));
const BITS = opt("bits", "12,16,18,20,22").split(",").map(Number);
const MODE = opt("mode", "");
const INLINE = args.includes("--inline");

/** The solver part of the waiting page's script. */
export function solverSource() {
  const js = fs.readFileSync(path.join(here, "../../pages/src/waiting/page.js"), "utf8");
  const start = js.indexOf("// --- proof-of-work solver");
  const end = js.indexOf("// --- end of the proof-of-work solver");
  if (start < 0 || end < 0) throw new Error("solver markers not found in page.js");
  return js.slice(start, end);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

async function main() {
  const script = `"use strict";\n${solverSource()}\n` +
    `window.wrBench = function (seed, bits, mode, inline) {
      return new Promise(function (resolve) {
        var began = performance.now();
        if (inline) { window.Worker = undefined; }
        solve(seed, bits, function () {}, function (nonce, tries) {
          resolve({ nonce: nonce, tries: tries, ms: performance.now() - began });
        }, mode);
      });
    };`;
  const hash = crypto.createHash("sha256").update(script).digest("base64");
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>pow bench</title></head>` +
    `<body><script>${script}</script></body></html>`;
  const server = http.createServer((req, res) => {
    res.writeHead(200, {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": `default-src 'none'; script-src 'sha256-${hash}'; connect-src 'self'; worker-src blob:`,
    });
    res.end(html);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    await page.goto(url);
    const subtle = await page.evaluate(() => Boolean(window.crypto && crypto.subtle));
    if (MODE === "subtle" && !subtle) throw new Error("no crypto.subtle on the bench page");
    console.log(`pow-bench: chromium ${browser.version()}, ${N} seeds per difficulty, ` +
      `${MODE === "subtle" ? "WebCrypto digests" : "plain JS SHA-256 (the page's default)"}, ` +
      `${INLINE ? "main thread" : "worker"}, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}`);
    console.log("| bits | median s | p95 s | median tries | hashes/s |");
    console.log("|---:|---:|---:|---:|---:|");
    for (const bits of BITS) {
      const runs = [];
      for (let i = 0; i < N; i++) {
        const seed = crypto.randomBytes(40).toString("base64url");
        const r = await page.evaluate(([s, b, m, inl]) => window.wrBench(s, b, m, inl), [seed, bits, MODE, INLINE]);
        const digest = crypto.createHash("sha256").update(`${seed}.${r.nonce}`).digest();
        if (digest.readUInt32BE(0) >>> (32 - bits) !== 0) throw new Error(`wrong solution at ${bits} bits`);
        runs.push(r);
      }
      const times = runs.map((r) => r.ms / 1000).sort((a, b) => a - b);
      const tries = runs.map((r) => r.tries).sort((a, b) => a - b);
      const rate = runs.reduce((s, r) => s + r.tries, 0) / runs.reduce((s, r) => s + r.ms / 1000, 0);
      console.log(`| ${bits} | ${percentile(times, 0.5).toFixed(2)} | ${percentile(times, 0.95).toFixed(2)} | ` +
        `${percentile(tries, 0.5)} | ${Math.round(rate).toLocaleString("en")} |`);
    }
    if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  } finally {
    await closeBrowser(browser);
    server.close();
  }
}

await main();
