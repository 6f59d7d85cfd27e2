// A real browser (Debian's chromium, driven by playwright-core) through the
// real worker in workerd in front of the real origin: it asks for a
// protected page, gets the waiting page, watches its position fall as the
// visitors ahead are let in one at a time, and ends on the protected page.
// Screenshots of the waiting page in English and Korean go to
// target/e2e-artifacts/. Run by scripts/edge-test.sh.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import {
  ARTIFACTS, Visitor, cleanup, scratch, sleep, startEdge, startOrigin, startRedis, stop, stopAll,
} from "./harness.mjs";

const ROOM = "concert";
const AHEAD = 3; // visitors waiting before the browser arrives
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
// From shared notes: keep Chromium from reaching for anything off this machine.
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
];

let dir, edge, openEdge, browser, origin, originArgs, redis;
let keepPolling = true;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = scratch("browser");
  redis = await startRedis(dir);
  // One visitor inside at a time, 3 s each: the line moves every 3 s. A
  // short abandon time makes the origin ask for polls every 1-2 s.
  originArgs = {
    dir,
    redisUrl: redis.url,
    prefix: `wre2e-browser-${process.pid}-${Date.now()}:`,
    rooms: [
      { id: ROOM, capacity: 1, admit_per_second: 5.0, session_seconds: 3, abandon_seconds: 6 },
      // Opens in two hours: a pre-queue with a countdown.
      { id: "later", capacity: 1, admit_per_second: 1.0, session_seconds: 60, abandon_seconds: 60, opens_at: new Date(Date.now() + 7200e3).toISOString().replace(/\.\d+Z$/, "Z") },
      // One place ever: the second visitor finds it sold out.
      { id: "full", capacity: 1, admit_per_second: 1.0, session_seconds: 60, abandon_seconds: 60, max_line: 1 },
      { id: "retry", capacity: 1, admit_per_second: 5.0, session_seconds: 30, abandon_seconds: 30 },
      { id: "failopen", capacity: 1, admit_per_second: 5.0, session_seconds: 60, abandon_seconds: 6 },
    ],
  };
  origin = await startOrigin(originArgs);
  const rooms = [
    { room: ROOM, paths: ["/book/"] },
    { room: "later", paths: ["/later/"] },
    { room: "full", paths: ["/full/"] },
    { room: "retry", paths: ["/retry/"] },
    { room: "failopen", paths: ["/open/"] },
  ];
  const vars = { PAGE_TITLE: "Spring Concert", PAGE_COLOR: "#b4235a" };
  [edge, openEdge] = await Promise.all([
    startEdge({ dir, originUrl: origin.url, rooms, vars }),
    startEdge({ dir, name: "edge-open", originUrl: origin.url, rooms, vars, failMode: "open" }),
  ]);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
});

after(async () => {
  keepPolling = false;
  if (browser) await browser.close().catch(() => {});
  await stopAll();
  if (dir) cleanup(dir);
});

/** API visitors ahead in line, polling as apps do so none is dropped. */
async function fillLine() {
  const inside = new Visitor(edge.url);
  const first = await inside.json("POST", `/queue/${ROOM}/join`);
  assert.equal(first.json.state, "admitted", first.text);
  const waiting = [];
  for (let i = 0; i < AHEAD; i++) {
    const v = new Visitor(edge.url);
    const joined = await v.json("POST", `/queue/${ROOM}/join`);
    assert.equal(joined.json.state, "waiting", joined.text);
    waiting.push(v);
  }
  (async () => {
    while (keepPolling && waiting.length) {
      await sleep(1000);
      for (const v of [...waiting]) {
        const s = await v.json("GET", `/queue/${ROOM}/status`).catch(() => null);
        if (s && s.json && s.json.state !== "waiting") waiting.splice(waiting.indexOf(v), 1);
      }
    }
  })();
}

test("a browser waits in line, watches its place fall, and reaches the protected page", { timeout: 90000 }, async () => {
  await fillLine();

  const en = await browser.newContext({ locale: "en-US", viewport: { width: 420, height: 760 } });
  const page = await en.newPage();
  const wanted = `${edge.url}/book/${ROOM}?seat=7`;
  await page.goto(wanted);
  await page.waitForFunction(() => /\d/.test(document.getElementById("wr-pos").textContent), null, { timeout: 15000 });
  const firstPos = Number(await page.textContent("#wr-pos"));
  assert.ok(firstPos >= 2, `the browser is behind the others (position ${firstPos})`);
  await page.screenshot({ path: path.join(ARTIFACTS, "waiting-page-en.png") });

  // A Korean visitor sees the same page in Korean, then leaves the line.
  const ko = await browser.newContext({ locale: "ko-KR", viewport: { width: 420, height: 760 } });
  const koPage = await ko.newPage();
  await koPage.goto(`${edge.url}/book/${ROOM}`);
  await koPage.waitForFunction(() => /\d/.test(document.getElementById("wr-pos").textContent), null, { timeout: 15000 });
  assert.equal(await koPage.getAttribute("html", "lang"), "ko");
  assert.match(await koPage.textContent("main"), /내 순서/);
  await koPage.screenshot({ path: path.join(ARTIFACTS, "waiting-page-ko.png") });
  const left = await koPage.evaluate(async (room) => (await fetch(`/queue/${room}/leave`, { method: "POST" })).status, ROOM);
  assert.equal(left, 204);
  await ko.close();

  // Watch the English visitor's place until the page takes it in.
  const seen = [firstPos];
  const announcements = new Set();
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    const state = await page.evaluate(() => {
      const pos = document.getElementById("wr-pos");
      const live = document.getElementById("wr-live");
      return {
        url: location.href,
        onPage: !!document.getElementById("wr-config"),
        pos: pos ? pos.textContent : null,
        live: live ? live.textContent : null,
      };
    }).catch(() => ({ navigating: true }));
    if (state.onPage === false) break;
    if (state.pos && /^\d+$/.test(state.pos) && Number(state.pos) !== seen.at(-1)) seen.push(Number(state.pos));
    if (state.live) announcements.add(state.live);
    await sleep(200);
  }

  assert.equal(page.url(), wanted, "ends on the page it asked for");
  const body = await page.textContent("body");
  assert.match(body, /"not_found"/, "the origin answered: the gate let it through");
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i] < seen[i - 1], `position only falls: ${seen}`);
  assert.ok(seen.length >= 2, `saw the position fall: ${seen}`);
  assert.ok([...announcements].some((a) => /Your place in line: \d/.test(a)), `live region announced: ${[...announcements]}`);
  await page.screenshot({ path: path.join(ARTIFACTS, "protected-page.png") });
  console.log(`positions seen: ${seen.join(" -> ")} -> admitted`);
  await en.close();
});

test("the page counts down before the opening and says when the line is full", { timeout: 60000 }, async () => {
  const ctx = await browser.newContext({ locale: "en-US", viewport: { width: 420, height: 760 } });
  const page = await ctx.newPage();
  await page.goto(`${edge.url}/later/show`);
  await page.waitForFunction(() => !document.getElementById("wr-countdown").hidden, null, { timeout: 15000 });
  const clock = await page.textContent("#wr-clock");
  assert.match(clock, /^(01:59:\d\d|02:00:00)$/, `countdown ${clock}`);
  assert.equal(await page.textContent("#wr-pos"), "At opening");
  assert.match(await page.textContent("#wr-msg"), /The line opens at/);
  await page.screenshot({ path: path.join(ARTIFACTS, "waiting-page-prequeue.png") });

  const first = new Visitor(edge.url);
  const joined = await first.json("POST", "/queue/full/join");
  assert.notEqual(joined.json.state, "sold_out", joined.text);
  await page.goto(`${edge.url}/full/show`);
  await page.waitForFunction(() => /full/.test(document.getElementById("wr-msg").textContent), null, { timeout: 15000 });
  assert.match(await page.textContent("#wr-live"), /full/, "the live region says so too");
  await page.screenshot({ path: path.join(ARTIFACTS, "waiting-page-sold-out.png") });
  await ctx.close();
});

test("fail-closed: the page keeps retrying, gently, while the origin is away", { timeout: 90000 }, async () => {
  const inside = new Visitor(edge.url);
  assert.equal((await inside.json("POST", "/queue/retry/join")).json.state, "admitted");
  const ctx = await browser.newContext({ locale: "en-US" });
  const page = await ctx.newPage();
  const wanted = `${edge.url}/retry/show`;
  await page.goto(wanted);
  await page.waitForFunction(() => document.getElementById("wr-pos").textContent === "1", null, { timeout: 15000 });

  let queueCalls = 0;
  page.on("request", (req) => { if (req.url().includes("/queue/retry/")) queueCalls += 1; });
  await stop(origin.entry);
  const outageStart = Date.now();
  await page.waitForFunction(() => /Connection problem/.test(document.getElementById("wr-msg").textContent), null, { timeout: 20000 });
  await sleep(4000);
  const outageMs = Date.now() - outageStart;
  await page.screenshot({ path: path.join(ARTIFACTS, "waiting-page-retrying.png") });
  // Backoff with jitter: a handful of tries in several seconds, not one a tick.
  assert.ok(queueCalls <= 2 + outageMs / 1000, `${queueCalls} queue calls in ${outageMs} ms`);

  // Back on the same address; the visitor inside leaves, so the page's next
  // retry finds its visitor admitted and moves on.
  origin = await startOrigin({ ...originArgs, port: origin.port });
  assert.equal((await inside.request("POST", "/queue/retry/leave")).status, 204);
  await page.waitForFunction(() => !document.getElementById("wr-config"), null, { timeout: 45000 });
  assert.equal(page.url(), wanted);
  assert.match(await page.textContent("body"), /"not_found"/, "through to the origin");
  await ctx.close();
});

test("fail-open: when the queue goes down, the page lets its visitor through", { timeout: 90000 }, async () => {
  const inside = new Visitor(openEdge.url);
  assert.equal((await inside.json("POST", "/queue/failopen/join")).json.state, "admitted");
  const ctx = await browser.newContext({ locale: "en-US" });
  const page = await ctx.newPage();
  const wanted = `${openEdge.url}/open/show?seat=3`;
  await page.goto(wanted);
  await page.waitForFunction(() => document.getElementById("wr-pos").textContent === "1", null, { timeout: 15000 });
  // The queue's store goes away; the origin answers 503 to the page's polls.
  await stop(redis.entry);
  await page.waitForFunction(() => !document.getElementById("wr-config"), null, { timeout: 60000 });
  assert.equal(page.url(), wanted);
  assert.match(await page.textContent("body"), /"not_found"/, "through to the origin without a token");
  await ctx.close();
});
