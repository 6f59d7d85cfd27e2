// The waiting page's join challenge in a real browser, against a stand-in
// for the join: the page comes from the real origin (/waiting-room/{room},
// with its real CSP), and playwright answers its /queue/{room}/join calls
// as the contract says (design.md "Join challenge"): 428 with a proof of
// work, 403 challenge_failed for a stale seed, 428 Turnstile for a page
// without a site key. This pins what the page does with each answer (the
// solver's worker under the CSP, the header, a fresh seed after 403, giving
// up after a few, the move to the origin's page for Turnstile);
// tests/origin/flow.test.mjs drives the real proof of work. Turnstile with
// a site key runs against the real origin, its siteverify and Cloudflare's
// script stood in for.
//
// Screenshots go to target/e2e-artifacts/. Run by scripts/flow-test.sh.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import path from "node:path";
import { after, before, test } from "node:test";

import { closeBrowser, launchBrowser } from "../browser.mjs";
import { ARTIFACTS, cleanup, scratch, startOrigin, stopAll } from "../edge/harness.mjs";

const ROOM = "concert";
const HEADER = "waiting-room-challenge";

let dir, origin, browser;

before(async () => {
  dir = scratch("challenge");
  origin = await startOrigin({ dir, rooms: [{ id: ROOM }] });
  browser = await launchBrowser();
});

after(async () => {
  await closeBrowser(browser);
  await stopAll();
  if (dir) cleanup(dir);
});

/** Whether SHA-256 of `solution` starts with `bits` zero bits. */
function solves(solution, bits) {
  return crypto.createHash("sha256").update(solution).digest().readUInt32BE(0) >>> (32 - bits) === 0;
}

const ADMITTED = {
  state: "admitted", position: null, waiting: 0, eta_seconds: null, poll_after_ms: 1000,
  room: { id: ROOM, state: "open", opens_at: null },
};

/**
 * A stand-in join: `answer(solution, seeds)` says what a join carrying
 * `solution` (null: none) gets; seeds it hands out are recorded.
 */
async function standIn(page, answer) {
  const joins = [];
  await page.route(`**/queue/${ROOM}/join`, async (route) => {
    const solution = route.request().headers()[HEADER] || null;
    joins.push(solution);
    const [status, body] = answer(solution, joins);
    await route.fulfill({ status, contentType: "application/json", body: JSON.stringify(body) });
  });
  // Admitted visitors go on to the seat page; a stand-in for it too.
  await page.route(`**/book/${ROOM}/`, (route) => route.fulfill({ status: 200, contentType: "text/html", body: "<p id=in>in</p>" }));
  return joins;
}

function powRequired(bits) {
  const seed = crypto.randomBytes(40).toString("base64url");
  return [428, {
    error: { code: "challenge_required", message: "solve the challenge" },
    challenge: { kind: "pow", seed, bits, expires_at: new Date(Date.now() + 300e3).toISOString() },
  }];
}
const FAILED = [403, { error: { code: "challenge_failed", message: "the seed has expired" } }];

// Records, across navigations, what the page says (message, live region)
// and whether its bar shows, for checks after the page has moved on.
const WATCH = () => {
  const log = (text) => {
    try {
      const said = JSON.parse(sessionStorage.getItem("test-said") || "[]");
      said.push(text);
      sessionStorage.setItem("test-said", JSON.stringify(said));
    } catch (e) { /* not kept */ }
  };
  document.addEventListener("DOMContentLoaded", () => {
    for (const id of ["wr-msg", "wr-live"]) {
      const el = document.getElementById(id);
      if (el) new MutationObserver(() => log(`${id}:${el.textContent}`)).observe(el, { childList: true, characterData: true, subtree: true });
    }
    const bar = document.getElementById("wr-bar");
    if (bar) new MutationObserver(() => { if (!bar.hidden) log("bar:shown"); }).observe(bar, { attributes: true });
  });
};

async function newPage(locale = "en-US") {
  const ctx = await browser.newContext({ locale, viewport: { width: 800, height: 800 } });
  const page = await ctx.newPage();
  await page.addInitScript(WATCH);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource/.test(m.text())) errors.push(m.text()); });
  return { ctx, page, errors };
}

test("a 428 proof of work is solved in a worker and the join sent again", { timeout: 60000 }, async () => {
  const { ctx, page, errors } = await newPage();
  const bits = 18;
  const joins = await standIn(page, (solution) => {
    if (solution === null) return powRequired(bits);
    return solves(solution, bits) ? [200, { ...ADMITTED, ticket: "t" }] : FAILED;
  });
  const worker = page.waitForEvent("worker", { timeout: 10000 });
  const response = await page.goto(`${origin.url}/waiting-room/${ROOM}`);
  assert.match(response.headers()["content-security-policy"], /worker-src blob:/);
  assert.match((await worker).url(), /^blob:/, "the search runs in a worker");
  // The check shows and is announced while the worker works (a lucky
  // nonce may end it before a screenshot, so that is best effort).
  await page.screenshot({ path: path.join(ARTIFACTS, "challenge-checking-en.png") }).catch(() => {});
  await page.waitForURL(`${origin.url}/book/${ROOM}/`, { timeout: 30000 });
  const said = await page.evaluate(() => JSON.parse(sessionStorage.getItem("test-said") || "[]"));
  assert.ok(said.includes("wr-msg:Checking your browser…"), JSON.stringify(said));
  assert.ok(said.some((s) => s.startsWith("wr-live:Checking your browser")), "announced");
  assert.ok(said.includes("bar:shown"), "the progress bar shows");
  assert.equal(joins.length, 2, "one bare join, one with the solution");
  assert.equal(joins[0], null);
  assert.ok(solves(joins[1], bits), `a real solution: ${joins[1]}`);
  assert.match(joins[1], /^[A-Za-z0-9_-]+\.[0-9]+$/, "seed '.' decimal nonce");
  assert.deepEqual(errors, [], "no script errors (the worker ran under the CSP)");
  await ctx.close();
});

test("a stale seed (403) gets a fresh one; a few failures give up", { timeout: 60000 }, async () => {
  const { ctx, page, errors } = await newPage("ko-KR");
  const bits = 10;
  let failFirst = 1;
  const joins = await standIn(page, (solution) => {
    if (solution === null) return powRequired(bits);
    if (failFirst > 0) { failFirst -= 1; return FAILED; }
    return solves(solution, bits) ? [200, { ...ADMITTED, ticket: "t" }] : FAILED;
  });
  await page.goto(`${origin.url}/waiting-room/${ROOM}`);
  await page.waitForURL(`${origin.url}/book/${ROOM}/`, { timeout: 30000 });
  // bare, stale solution (403), bare again (a fresh seed), solution.
  assert.equal(joins.length, 4, JSON.stringify(joins));
  assert.equal(joins[2], null, "the join after a 403 asks for a fresh seed");
  assert.notEqual(joins[1].split(".")[0], joins[3].split(".")[0], "another seed");

  // Every solution refused: the page stops after a few and says so.
  const page2 = await ctx.newPage();
  const joins2 = await standIn(page2, (solution) => (solution === null ? powRequired(bits) : FAILED));
  await page2.goto(`${origin.url}/waiting-room/${ROOM}`);
  await page2.waitForSelector("#wr-rejoin:not([hidden])", { timeout: 30000 });
  assert.match(await page2.textContent("#wr-msg"), /브라우저 확인에 실패했습니다/);
  const solved = joins2.filter((j) => j !== null).length;
  assert.ok(solved >= 2 && solved <= 4, `a few tries, then stop: ${JSON.stringify(joins2)}`);
  await page2.screenshot({ path: path.join(ARTIFACTS, "challenge-failed-ko.png") });
  assert.deepEqual(errors, [], "no script errors");
  await ctx.close();
});

test("a solved join that meets 503 is retried with the same solution", { timeout: 60000 }, async () => {
  const { ctx, page, errors } = await newPage();
  const bits = 10;
  let down = 1;
  const joins = await standIn(page, (solution) => {
    if (solution === null) return powRequired(bits);
    if (down > 0) { down -= 1; return [503, { error: { code: "store_unavailable", message: "try again" } }]; }
    return solves(solution, bits) ? [200, { ...ADMITTED, ticket: "t" }] : FAILED;
  });
  await page.goto(`${origin.url}/waiting-room/${ROOM}`);
  await page.waitForURL(`${origin.url}/book/${ROOM}/`, { timeout: 30000 });
  assert.equal(joins.length, 3, JSON.stringify(joins));
  assert.equal(joins[2], joins[1], "no second solve");
  assert.deepEqual(errors, [], "no script errors");
  await ctx.close();
});

test("Turnstile without a site key: the origin's page once, then a message", { timeout: 60000 }, async () => {
  const { ctx, page, errors } = await newPage();
  const joins = await standIn(page, () => [428, {
    error: { code: "challenge_required", message: "complete the check" },
    challenge: { kind: "turnstile", site_key: "1x00000000000000000000AA" },
  }]);
  const pages = [];
  page.on("request", (r) => { if (r.isNavigationRequest()) pages.push(new URL(r.url()).pathname + new URL(r.url()).search); });
  const response = await page.goto(`${origin.url}/waiting-room/${ROOM}`);
  assert.doesNotMatch(response.headers()["content-security-policy"], /cloudflare/);
  await page.waitForSelector("#wr-rejoin:not([hidden])", { timeout: 15000 });
  assert.match(await page.textContent("#wr-msg"), /browser check did not work/);
  assert.equal(pages.length, 2, JSON.stringify(pages));
  assert.equal(pages[1], `/waiting-room/${ROOM}?to=${encodeURIComponent(`/book/${ROOM}/`)}&lang=en`);
  assert.equal(joins.length, 2, "one join per page");
  // Nothing was loaded from Cloudflare.
  assert.equal(await page.locator('script[src*="cloudflare"]').count(), 0);
  assert.deepEqual(errors, [], "no script errors");
  await ctx.close();
});

test("Turnstile with a site key: the widget's token goes with the join", { timeout: 60000 }, async () => {
  // The real origin with a Turnstile room, checking tokens at a stand-in
  // siteverify that passes "widget-token" only.
  const verified = [];
  const siteverify = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      verified.push(body);
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body.includes("widget-token")
        ? { success: true, "error-codes": [] } : { success: false, "error-codes": ["invalid-input-response"] }));
    });
  });
  siteverify.listen(0, "127.0.0.1");
  await once(siteverify, "listening");
  const ts = await startOrigin({
    dir, name: "origin-turnstile", rooms: [{ id: "ts", challenge: "turnstile" }],
    args: ["--turnstile-secret", "e2e-turnstile-secret", "--turnstile-site-key", "1x00000000000000000000AA",
      "--turnstile-verify-url", `http://127.0.0.1:${siteverify.address().port}/siteverify`],
  });
  const { ctx, page, errors } = await newPage();
  const joins = [];
  page.on("request", (r) => { if (r.url().endsWith("/queue/ts/join")) joins.push(r.headers()[HEADER] || null); });
  const answers = [];
  page.on("response", (r) => { if (r.url().endsWith("/queue/ts/join")) answers.push(r.status()); });
  // A stand-in widget (this machine cannot reach Cloudflare): renders a
  // box and hands over a token.
  await page.route("https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit", (route) => route.fulfill({
    status: 200, contentType: "text/javascript",
    body: `window.turnstile = { render: function (el, o) {
      el.textContent = "widget " + o.sitekey;
      setTimeout(function () { o.callback("widget-token"); }, 300);
      return "w1"; }, reset: function () {} };`,
  }));
  await page.route("**/book/ts/", (route) => route.fulfill({ status: 200, contentType: "text/html", body: "<p id=in>in</p>" }));
  const response = await page.goto(`${ts.url}/waiting-room/ts`);
  const csp = response.headers()["content-security-policy"];
  assert.match(csp, /script-src 'sha256-[^;]* https:\/\/challenges\.cloudflare\.com;/);
  assert.match(csp, /frame-src https:\/\/challenges\.cloudflare\.com/);
  await page.waitForSelector("#wr-turnstile:not([hidden])", { timeout: 10000 });
  assert.match(await page.textContent("#wr-msg"), /complete the check below/);
  assert.equal(await page.textContent("#wr-turnstile"), "widget 1x00000000000000000000AA");
  await page.waitForURL(`${ts.url}/book/ts/`, { timeout: 15000 });
  assert.deepEqual(joins, [null, "widget-token"]);
  assert.deepEqual(answers, [428, 200]);
  assert.equal(verified.length, 1);
  assert.match(verified[0], /e2e-turnstile-secret/);
  assert.deepEqual(errors, [], "no script errors");
  await ctx.close();
  siteverify.close();
});
