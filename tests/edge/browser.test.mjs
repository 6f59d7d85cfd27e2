// A real browser (Debian's chromium, driven by playwright-core) through the
// real worker in workerd in front of the real origin: it asks for the seat
// page, gets the waiting page, watches its position fall as the visitors
// ahead are let in one at a time, and lands on the seat page at
// /book/concert/, which the edge gates with the entry token like the
// booking API under /api/concert/. There it holds two seats, pays and sees
// the booking, in English and then in Korean. In a proof-of-work room the
// edge's page solves the join challenge and passes. A room given a display
// name, colour and logo through the origin's admin API shows them on the
// edge's waiting page, in English and Korean. Screenshots of the waiting
// page and the seat page in both languages go to target/e2e-artifacts/.
// Run by scripts/edge-test.sh.

import assert from "node:assert/strict";
import path from "node:path";
import { after, before, test } from "node:test";

import { closeBrowser, launchBrowser } from "../browser.mjs";
import {
  ARTIFACTS, Visitor, cleanup, scratch, sleep, startEdge, startOrigin, startRedis, stop, stopAll,
} from "./harness.mjs";

const ROOM = "concert";
const AHEAD = 3; // visitors waiting before the browser arrives
const ADMIN_KEY = "e2e-admin-key-0123456789abcdef";
/** A room's look as an operator sets it: the logo is the site's own icon. */
const LOOK = { display_name: "Spring tour 봄", color: "#1b7f4c", logo: "/favicon.ico" };

let dir, edge, openEdge, browser, origin, originArgs, redis;
let keepPolling = true;

/** What the room sells: 24 seats in two sections, 7-minute holds. */
const EVENING = {
  title: "Evening",
  starts_at: new Date(Date.now() + 30 * 86400e3).toISOString().replace(/\.\d+Z$/, "Z"),
  hold_seconds: 420,
  max_seats_per_hold: 4,
  sections: [
    { name: "A", rows: 2, seats_per_row: 8, price: 110000 },
    { name: "B", rows: 1, seats_per_row: 8, price: 88000 },
  ],
};

before(async () => {
  dir = scratch("browser");
  redis = await startRedis(dir);
  // One visitor inside at a time: the line moves as each one leaves (the
  // API visitors ahead leave a moment after they are let in). Sessions are
  // long enough to book in. A short abandon time makes the origin ask for
  // polls every 1-2 s. The room sells one performance, declared in the
  // rooms file; booking runs on a SQLite file in `dir`.
  originArgs = {
    dir,
    adminKey: ADMIN_KEY,
    redisUrl: redis.url,
    prefix: `wre2e-browser-${process.pid}-${Date.now()}:`,
    rooms: [
      {
        id: ROOM, capacity: 1, admit_per_second: 5.0, session_seconds: 300, abandon_seconds: 6,
        performances: [{ id: "evening", ...EVENING }],
      },
      // Opens in two hours: a pre-queue with a countdown.
      { id: "later", capacity: 1, admit_per_second: 1.0, session_seconds: 60, abandon_seconds: 60, opens_at: new Date(Date.now() + 7200e3).toISOString().replace(/\.\d+Z$/, "Z") },
      // One place ever: the second visitor finds it sold out.
      { id: "full", capacity: 1, admit_per_second: 1.0, session_seconds: 60, abandon_seconds: 60, max_line: 1 },
      { id: "retry", capacity: 1, admit_per_second: 5.0, session_seconds: 30, abandon_seconds: 30 },
      { id: "failopen", capacity: 1, admit_per_second: 5.0, session_seconds: 60, abandon_seconds: 6 },
      // Joins cost a proof of work, solved by the edge's waiting page.
      { id: "pow", capacity: 10, admit_per_second: 5.0, challenge: "pow", challenge_bits: 16 },
      // Its look is set through the admin API by the test; one place, so
      // the browsers wait behind whoever is inside.
      { id: "look", capacity: 1, admit_per_second: 1.0, session_seconds: 300, abandon_seconds: 60 },
    ],
  };
  origin = await startOrigin(originArgs);
  const rooms = [
    // As wrangler.toml's example: the seat page and the booking API.
    { room: ROOM, paths: [`/book/${ROOM}/`, `/api/${ROOM}/`] },
    { room: "later", paths: ["/later/"] },
    { room: "full", paths: ["/full/"] },
    { room: "retry", paths: ["/retry/"] },
    { room: "failopen", paths: ["/open/"] },
    { room: "pow", paths: ["/pow/"] },
    { room: "look", paths: ["/look/"] },
  ];
  const vars = { PAGE_TITLE: "Spring Concert", PAGE_COLOR: "#b4235a" };
  [edge, openEdge] = await Promise.all([
    startEdge({ dir, originUrl: origin.url, rooms, vars }),
    startEdge({ dir, name: "edge-open", originUrl: origin.url, rooms, vars, failMode: "open" }),
  ]);
  browser = await launchBrowser();
});

after(async () => {
  keepPolling = false;
  await closeBrowser(browser);
  await stopAll();
  if (dir) cleanup(dir);
});

/**
 * API visitors: one inside and AHEAD in line, polling as apps do so none is
 * dropped. Whoever of them is inside leaves about 2 s after getting in, so
 * the line moves one place every 2-3 s until all of them are through.
 */
async function fillLine() {
  const first = new Visitor(edge.url);
  const joined = await first.json("POST", `/queue/${ROOM}/join`);
  assert.equal(joined.json.state, "admitted", joined.text);
  const inside = [first];
  const waiting = [];
  for (let i = 0; i < AHEAD; i++) {
    const v = new Visitor(edge.url);
    const j = await v.json("POST", `/queue/${ROOM}/join`);
    assert.equal(j.json.state, "waiting", j.text);
    waiting.push(v);
  }
  (async () => {
    while (keepPolling && (waiting.length || inside.length)) {
      await sleep(2000);
      for (const v of inside.splice(0)) await v.request("POST", `/queue/${ROOM}/leave`).catch(() => null);
      await sleep(500);
      for (const v of [...waiting]) {
        const s = await v.json("GET", `/queue/${ROOM}/status`).catch(() => null);
        if (s && s.json && s.json.state !== "waiting") {
          waiting.splice(waiting.indexOf(v), 1);
          if (s.json.state === "admitted") inside.push(v);
        }
      }
    }
  })();
}

/** Waits for the seat map, holds two seats, pays, and returns the page's booking. */
async function holdAndBook(page, lang, seatIds) {
  await page.waitForSelector('[data-seat][data-state="available"]', { timeout: 15000 });
  assert.equal(await page.getAttribute("#app", "data-phase"), "seats");
  // One seat by keyboard, one by mouse.
  await page.focus(`[data-seat="${seatIds[0]}"]`);
  await page.keyboard.press("Enter");
  await page.click(`[data-seat="${seatIds[1]}"]`);
  assert.equal(await page.getAttribute(`[data-seat="${seatIds[0]}"]`, "aria-pressed"), "true");
  await page.click("#hold-button");
  await page.waitForSelector("#hold:not([hidden])", { timeout: 15000 });
  assert.match(await page.getAttribute("#hold", "data-hold-id"), /^[0-9a-f-]{36}$/);
  assert.equal(await page.textContent("#hold-seats"), seatIds.join(", "));
  assert.match(await page.textContent("#countdown"), /^(0[0-6]:[0-5]\d|07:00)$/);
  assert.equal(await page.getAttribute(`[data-seat="${seatIds[0]}"]`, "data-state"), "mine");
  await page.screenshot({ path: path.join(ARTIFACTS, `edge-seats-held-${lang}.png`), fullPage: true });
  await page.fill("#payment-token", "tok_visa");
  await page.click("#confirm");
  await page.waitForSelector("#booking:not([hidden])", { timeout: 15000 });
  assert.equal(await page.getAttribute("#app", "data-phase"), "booked");
  const booking = {
    id: await page.getAttribute("#booking", "data-booking-id"),
    seats: await page.textContent("#booking-seats"),
    total: await page.textContent("#booking-total"),
    status: await page.textContent("#booking-status"),
  };
  assert.match(booking.id, /^[0-9a-f-]{36}$/);
  assert.equal(booking.seats, seatIds.join(", "));
  await page.screenshot({ path: path.join(ARTIFACTS, `edge-booking-${lang}.png`), fullPage: true });
  return booking;
}

test("a browser waits in line, watches its place fall, lands on the seat page and books", { timeout: 120000 }, async () => {
  await fillLine();

  const en = await browser.newContext({ locale: "en-US", viewport: { width: 420, height: 760 } });
  const page = await en.newPage();
  const wanted = `${edge.url}/book/${ROOM}/?from=e2e`;
  await page.goto(wanted);
  await page.waitForFunction(() => /\d/.test(document.getElementById("wr-pos").textContent), null, { timeout: 15000 });
  const firstPos = Number(await page.textContent("#wr-pos"));
  assert.ok(firstPos >= 2, `the browser is behind the others (position ${firstPos})`);
  await page.screenshot({ path: path.join(ARTIFACTS, "waiting-page-en.png") });

  // A Korean visitor sees the same page in Korean, then leaves the line.
  const ko = await browser.newContext({ locale: "ko-KR", viewport: { width: 420, height: 760 } });
  const koPage = await ko.newPage();
  await koPage.goto(`${edge.url}/book/${ROOM}/`);
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
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i] < seen[i - 1], `position only falls: ${seen}`);
  assert.ok(seen.length >= 2, `saw the position fall: ${seen}`);
  assert.ok([...announcements].some((a) => /Your place in line: \d/.test(a)), `live region announced: ${[...announcements]}`);
  console.log(`positions seen: ${seen.join(" -> ")} -> admitted`);

  // The seat page, from the origin through the gate; its API calls pass the
  // gate with the entry-token cookie.
  await page.waitForSelector("#app", { timeout: 15000 });
  assert.equal(await page.getAttribute("html", "lang"), "en");
  await page.waitForSelector('[data-seat][data-state="available"]', { timeout: 15000 });
  await page.screenshot({ path: path.join(ARTIFACTS, "edge-seat-page-en.png"), fullPage: true });
  const booking = await holdAndBook(page, "en", ["A-1-1", "A-1-2"]);
  assert.match(booking.total, /^KRW\s220,000$/);
  assert.equal(booking.status, "Confirmed");

  // The booking is the visitor's, through the gate: the cookie still works
  // for reading it although the booking ended the session.
  const read = await page.evaluate(async ([room, id]) => {
    const r = await fetch(`/api/${room}/bookings/${id}`, { headers: { Accept: "application/json" } });
    return { status: r.status, body: await r.json() };
  }, [ROOM, booking.id]);
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.deepEqual(read.body.seats, ["A-1-1", "A-1-2"]);
  assert.equal(read.body.status, "confirmed");
  await en.close();

  // Without a token, the edge holds API calls back (429 in_queue) and never
  // reaches the booking API.
  const stranger = await new Visitor(edge.url).json("GET", `/api/${ROOM}/performances`);
  assert.equal(stranger.status, 429, stranger.text);
  assert.equal(stranger.json.error.code, "in_queue");
});

test("in Korean: through the waiting page to the seat page, the seats just sold taken, a booking", { timeout: 90000 }, async () => {
  // The English booking ended that session: the slot is free, so this
  // visitor is let in as soon as its waiting page joins.
  const ko = await browser.newContext({ locale: "ko-KR", viewport: { width: 420, height: 760 } });
  const page = await ko.newPage();
  const wanted = `${edge.url}/book/${ROOM}/`;
  await page.goto(wanted);
  await page.waitForFunction(() => !document.getElementById("wr-config"), null, { timeout: 30000 });
  await page.waitForLoadState("domcontentloaded");
  assert.equal(page.url(), wanted);
  assert.equal(await page.getAttribute("html", "lang"), "ko");
  await page.waitForSelector('[data-seat][data-state="available"]', { timeout: 15000 });
  assert.equal(await page.getAttribute('[data-seat="A-1-1"]', "data-state"), "booked");
  assert.equal(await page.isDisabled('[data-seat="A-1-1"]'), true);
  await page.screenshot({ path: path.join(ARTIFACTS, "edge-seat-page-ko.png"), fullPage: true });
  const booking = await holdAndBook(page, "ko", ["B-1-1", "B-1-2"]);
  assert.equal(booking.total, "176,000원");
  assert.equal(booking.status, "확정");
  await ko.close();
});

test("the page counts down before the opening and says when the line is full", { timeout: 60000 }, async () => {
  const ctx = await browser.newContext({ locale: "en-US", viewport: { width: 420, height: 760 } });
  const page = await ctx.newPage();
  await page.goto(`${edge.url}/later/show`);
  await page.waitForFunction(() => !document.getElementById("wr-countdown").hidden, null, { timeout: 15000 });
  const clock = await page.textContent("#wr-clock");
  assert.match(clock, /^(01:59:\d\d|02:00:00)$/, `countdown ${clock}`);
  assert.equal(await page.textContent("#wr-pos"), "Drawn at opening");
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

test("a proof-of-work room: the edge's page solves in its worker and passes", { timeout: 60000 }, async () => {
  const ctx = await browser.newContext({ locale: "en-US" });
  const page = await ctx.newPage();
  const answers = [];
  page.on("response", (r) => { if (r.url().endsWith("/queue/pow/join")) answers.push(r.status()); });
  const worker = page.waitForEvent("worker", { timeout: 15000 });
  const wanted = `${edge.url}/pow/show`;
  const held = await page.goto(wanted);
  assert.match(held.headers()["content-security-policy"], /worker-src blob:/);
  assert.doesNotMatch(held.headers()["content-security-policy"], /cloudflare/);
  assert.match((await worker).url(), /^blob:/);
  // Admitted: back at the wanted page, which the edge now passes to the
  // origin (whose own 404 for this path is the proof of passage).
  await page.waitForFunction(() => !document.getElementById("wr-config"), null, { timeout: 30000 });
  assert.equal(page.url(), wanted);
  assert.match(await page.textContent("body"), /Page not found/);
  assert.deepEqual(answers.slice(0, 2), [428, 200]);
  await ctx.close();
});

test("a room's display name, colour and logo from the admin API show on the edge's page (English, Korean)", { timeout: 60000 }, async () => {
  // The operator sets the look at the origin; the edge has no copy of it
  // (its own PAGE_TITLE and PAGE_COLOR are the site's, not the room's).
  const patched = await fetch(`${origin.url}/admin/rooms/look`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${ADMIN_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify(LOOK),
  });
  assert.equal(patched.status, 200, await patched.text());
  // The room's about, through the edge, says so.
  const about = await new Visitor(edge.url).json("GET", "/queue/look/about");
  assert.equal(about.status, 200, about.text);
  assert.deepEqual([about.json.name, about.json.color, about.json.logo], [LOOK.display_name, LOOK.color, LOOK.logo]);
  // Someone inside: the browsers wait on the edge's page.
  const inside = new Visitor(edge.url);
  assert.equal((await inside.json("POST", "/queue/look/join")).json.state, "admitted");

  for (const [locale, lang, roomLabel] of [["en-US", "en", /Event/], ["ko-KR", "ko", /이벤트/]]) {
    const ctx = await browser.newContext({ locale, viewport: { width: 420, height: 760 } });
    const page = await ctx.newPage();
    const held = await page.goto(`${edge.url}/look/show`);
    // The edge's own page (held, not the origin's), with the edge's colour
    // in its style until the room's look arrives.
    assert.equal(held.status(), 200);
    assert.match(await held.text(), /"status":"\/queue\/look\/status"/);
    assert.match(await held.text(), /--accent:#b4235a/);
    assert.equal(await page.getAttribute("html", "lang"), lang);
    await page.waitForFunction(() => document.getElementById("wr-pos").textContent === "1", null, { timeout: 15000 });
    await page.waitForFunction((name) => {
      const logo = document.querySelector("img.logo");
      return document.getElementById("wr-room").textContent === name && logo && logo.complete;
    }, LOOK.display_name, { timeout: 15000 });
    const seen = await page.evaluate(() => {
      const logo = document.querySelector("img.logo");
      const style = getComputedStyle(document.documentElement);
      return {
        room: document.getElementById("wr-room").textContent,
        label: document.querySelector(".room").textContent,
        title: document.title,
        accent: style.getPropertyValue("--accent").trim(),
        // What the accent paints: the progress bar's fill.
        fill: getComputedStyle(document.getElementById("wr-fill")).backgroundColor,
        logo: logo && new URL(logo.src).pathname,
        logoWidth: logo && logo.naturalWidth,
        logoFirst: logo && logo.nextElementSibling && logo.nextElementSibling.id,
      };
    });
    // The name, not the raw id.
    assert.equal(seen.room, LOOK.display_name);
    assert.match(seen.label, roomLabel);
    assert.ok(!/\blook\b/.test(seen.label), seen.label);
    assert.ok(seen.title.startsWith(`${LOOK.display_name} – `), seen.title);
    // The room's colour over the edge's.
    assert.equal(seen.accent, LOOK.color);
    assert.equal(seen.fill, "rgb(27, 127, 76)");
    // The logo, loaded through the edge, above the heading.
    assert.equal(seen.logo, LOOK.logo);
    assert.ok(seen.logoWidth > 0, "the logo loaded");
    assert.equal(seen.logoFirst, "wr-title");
    await page.screenshot({ path: path.join(ARTIFACTS, `edge-room-look-${lang}.png`) });
    // Leave the line, so the next language waits first in line too.
    const left = await page.evaluate(async () => (await fetch("/queue/look/leave", { method: "POST" })).status);
    assert.equal(left, 204);
    await ctx.close();
  }
  assert.equal((await inside.request("POST", "/queue/look/leave")).status, 204);
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
  assert.match(await page.textContent("body"), /Page not found/, "through to the origin");
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
  assert.match(await page.textContent("body"), /Page not found/, "through to the origin without a token");
  await ctx.close();
});
