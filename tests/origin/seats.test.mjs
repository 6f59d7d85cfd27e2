// The seat page's script in a real browser, against a stand-in for the
// booking API: the page comes from the real origin (/book/{room}/), and
// playwright answers its /api/{room}/... calls from a small in-memory model
// of the contract (design.md "Booking"). This pins what the page does with
// each answer (a seat taken meanwhile, a declined card, an ended session,
// a retried payment reusing its Idempotency-Key) while the real booking API
// is being built; tests/origin/flow.test.mjs drives the real one.
//
// Screenshots go to target/e2e-artifacts/. Run by scripts/flow-test.sh.

import assert from "node:assert/strict";
import path from "node:path";
import { after, before, test } from "node:test";

import { closeBrowser, launchBrowser } from "../browser.mjs";
import { assertBookedReads, assertFitsWidth, assertHeldReads, assertPayErrorInView, TITLES } from "./seat-checks.mjs";
import { ARTIFACTS, cleanup, scratch, startOrigin, stopAll } from "../edge/harness.mjs";

const ROOM = "concert";

let dir, origin, browser;

before(async () => {
  dir = scratch("seats");
  origin = await startOrigin({ dir, rooms: [{ id: ROOM }] });
  browser = await launchBrowser();
});

after(async () => {
  await closeBrowser(browser);
  await stopAll();
  if (dir) cleanup(dir);
});

/** The stand-in performance's sections: [name, rows, seats a row, price]. */
const SECTIONS = [["A", 2, 6, 110000], ["B", 1, 6, 88000]];
/** A wide hall: more seats a row than a phone's width shows at once. */
const WIDE = [["A", 2, 24, 150000]];

/** An in-memory booking API for one performance, as the contract says. */
class FakeBooking {
  constructor(sections = SECTIONS) {
    this.layoutLoads = 0;
    this.layout = sections.map(([name, rows, seats_per_row, price]) => ({ name, rows, seats_per_row, price }));
    this.seats = [];
    for (const [section, rows, perRow, price] of sections) {
      for (let row = 1; row <= rows; row++) {
        for (let number = 1; number <= perRow; number++) {
          this.seats.push({ id: `${section}-${row}-${number}`, section, row, number, price, state: "available" });
        }
      }
    }
    this.version = 1;
    this.holds = new Map();
    this.keys = new Map(); // Idempotency-Key -> answer
    this.calls = [];       // every confirm: {key, token}
    this.failNextConfirm = false;
    this.sessionOver = false;
  }

  take(id, state) {
    this.seats.find((s) => s.id === id).state = state;
    this.version += 1;
  }

  async handle(route) {
    const req = route.request();
    const url = new URL(req.url());
    const p = url.pathname.replace(`/api/${ROOM}`, "");
    const json = (status, body, headers = {}) => route.fulfill({
      status, contentType: "application/json", headers, body: body === undefined ? "" : JSON.stringify(body),
    });
    const error = (status, code, extra = {}) => json(status, { error: { code, message: code.replace(/_/g, " ") }, ...extra });
    if (this.sessionOver) return error(401, "session_ended");
    if (req.method() === "GET" && p === "/performances") {
      const available = this.seats.filter((s) => s.state === "available").length;
      return json(200, { performances: [{ id: "evening", title: "Evening show", starts_at: "2030-05-01T19:00:00Z", available, held: 0, booked: 0 }] });
    }
    if (req.method() === "GET" && p === "/performances/evening/seats") {
      const etag = `"v${this.version}"`;
      if (req.headers()["if-none-match"] === etag) return route.fulfill({ status: 304, headers: { ETag: etag } });
      return json(200, { performance: "evening", seats: this.seats }, { ETag: etag });
    }
    // The same map in two parts, as the page loads it: the layout once,
    // then the seats' state (one letter a seat, in the layout's order).
    if (req.method() === "GET" && p === "/performances/evening/layout") {
      this.layoutLoads += 1;
      return json(200, { performance: "evening", layout: "l1", seats: this.seats.length, sections: this.layout }, { ETag: '"l1"' });
    }
    if (req.method() === "GET" && p === "/performances/evening/state") {
      const etag = `"v${this.version}"`;
      if (req.headers()["if-none-match"] === etag) return route.fulfill({ status: 304, headers: { ETag: etag } });
      const states = this.seats.map((s) => s.state[0]).join("");
      return json(200, { performance: "evening", layout: "l1", states }, { ETag: etag });
    }
    if (req.method() === "POST" && p === "/performances/evening/holds") {
      const { seats } = JSON.parse(req.postData());
      if (this.accountLimit) return error(409, "account_limit");
      const taken = seats.filter((id) => this.seats.find((s) => s.id === id).state !== "available");
      if (taken.length) return error(409, "seat_unavailable", { seats: taken });
      seats.forEach((id) => this.take(id, "held"));
      const hold = {
        hold_id: "0190f0a0-0000-7000-8000-00000000000" + (this.holds.size + 1),
        performance: "evening",
        seats,
        total: seats.reduce((sum, id) => sum + this.seats.find((s) => s.id === id).price, 0),
        expires_at: new Date(Date.now() + 420e3).toISOString(),
      };
      this.holds.set(hold.hold_id, hold);
      return json(201, hold);
    }
    const confirm = p.match(/^\/holds\/([^/]+)\/confirm$/);
    if (req.method() === "POST" && confirm) {
      const key = req.headers()["idempotency-key"];
      const { payment_token: token } = JSON.parse(req.postData());
      this.calls.push({ key, token });
      if (this.failNextConfirm) {
        this.failNextConfirm = false;
        return route.abort("connectionreset");
      }
      if (this.keys.has(key)) return json(...this.keys.get(key));
      const hold = this.holds.get(confirm[1]);
      if (!hold) return error(404, "not_found");
      if (token === "tok_decline") {
        this.keys.set(key, [402, { error: { code: "payment_declined", message: "declined" } }]);
        return error(402, "payment_declined");
      }
      hold.seats.forEach((id) => this.take(id, "booked"));
      this.holds.delete(hold.hold_id);
      const booking = {
        booking_id: "0190f0a0-0000-7000-8000-0000000000b1", performance: "evening", seats: hold.seats,
        total: hold.total, status: "confirmed", created_at: new Date().toISOString(),
      };
      this.keys.set(key, [201, booking]);
      return json(201, booking);
    }
    const release = p.match(/^\/holds\/([^/]+)$/);
    if (req.method() === "DELETE" && release) {
      const hold = this.holds.get(release[1]);
      if (!hold) return error(404, "not_found");
      hold.seats.forEach((id) => this.take(id, "available"));
      this.holds.delete(hold.hold_id);
      return route.fulfill({ status: 204 });
    }
    return error(404, "not_found");
  }
}

async function seatPage(locale, api, viewport = { width: 900, height: 1000 }) {
  const ctx = await browser.newContext({ locale, viewport, hasTouch: viewport.width < 500 });
  const page = await ctx.newPage();
  await page.route(`${origin.url}/api/${ROOM}/**`, (route) => api.handle(route));
  const response = await page.goto(`${origin.url}/book/${ROOM}/`);
  assert.equal(response.status(), 200);
  await page.waitForSelector('[data-seat="A-1-1"][data-state]', { timeout: 15000 });
  return { ctx, page };
}

test("choose by keyboard and mouse, lose a seat to someone faster, hold, decline, retry, book", { timeout: 60000 }, async () => {
  const api = new FakeBooking();
  const { ctx, page } = await seatPage("en-US", api);
  assert.equal(await page.getAttribute("#app", "data-phase"), "seats");
  assert.equal(await page.isHidden("#performances"), true, "one performance is chosen by itself");
  assert.equal(await page.textContent("#bk-title"), TITLES.en.seats);
  // Won on an English page by its code (Intl's en-US form), not a bare ₩.
  assert.match(await page.textContent('[data-section="A"] h3'), /^Section A KRW\s110,000$/);
  assert.match(await page.getAttribute('[data-seat="A-1-1"]', "aria-label"), /^Section A, row 1, seat 1, KRW\s110,000, available$/);

  await page.focus('[data-seat="A-1-1"]');
  await page.keyboard.press("Enter");
  await page.focus('[data-seat="A-1-2"]');
  await page.keyboard.press("Space");
  await page.click('[data-seat="A-1-3"]');
  assert.equal(await page.getAttribute('[data-seat="A-1-2"]', "aria-pressed"), "true");
  assert.match(await page.textContent("#live"), /A-1-3 chosen, 3 of 4/);
  assert.match(await page.textContent("#selected-total"), /^KRW\s330,000$/);

  // Someone else holds A-1-3 before this visitor asks: the map refresh says so.
  api.take("A-1-3", "held");
  await page.waitForSelector('#message[data-code="seat_unavailable"]', { timeout: 10000 });
  assert.match(await page.textContent("#message"), /someone else just took A-1-3/);
  assert.equal(await page.getAttribute('[data-seat="A-1-3"]', "data-state"), "held");
  assert.equal(await page.isDisabled('[data-seat="A-1-3"]'), true);
  assert.equal(await page.textContent("#selected-seats"), "A-1-1, A-1-2");
  assert.equal(api.layoutLoads, 1, "the layout is loaded once; refreshes load the state only");

  // And one taken between the last refresh and the hold: 409 lists it.
  await page.click('[data-seat="A-1-4"]');
  api.seats.find((s) => s.id === "A-1-4").state = "booked"; // no version bump: the page cannot know
  await page.click("#hold-button");
  await page.waitForFunction(() => /A-1-4/.test(document.getElementById("message").textContent));
  assert.equal(await page.getAttribute("#message", "data-code"), "seat_unavailable");
  assert.equal(await page.textContent("#selected-seats"), "A-1-1, A-1-2");

  await page.click("#hold-button");
  await page.waitForSelector("#hold:not([hidden])");
  assert.equal(await page.getAttribute("#app", "data-phase"), "held");
  assert.equal(await page.textContent("#hold-seats"), "A-1-1, A-1-2");
  assert.match(await page.textContent("#hold-total"), /^KRW\s220,000$/);
  assert.match(await page.textContent("#countdown"), /^0[67]:\d\d$/);
  assert.equal(await page.getAttribute('[data-seat="A-1-1"]', "data-state"), "mine");
  await assertHeldReads(page, "en");
  await page.screenshot({ path: path.join(ARTIFACTS, "seats-held-stand-in-en.png"), fullPage: true });

  // Declined: said by the pay button, focused; the hold stays and a new
  // attempt gets a new key. (A viewport screenshot: what the visitor sees.)
  await page.fill("#payment-token", "tok_decline");
  await page.click("#confirm");
  await page.waitForSelector('#message[data-code="payment_declined"]');
  await assertPayErrorInView(page, "payment_declined");
  assert.match(await page.textContent("#pay-error"), /declined/);
  await page.screenshot({ path: path.join(ARTIFACTS, "seats-declined-stand-in-en.png") });

  // No answer: said by the pay button too; the retry is the same attempt,
  // with the same key.
  await page.fill("#payment-token", "tok_visa");
  api.failNextConfirm = true;
  await page.click("#confirm");
  await page.waitForSelector('#message[data-code="network"]');
  await assertPayErrorInView(page, "network");
  await page.click("#confirm");
  await page.waitForSelector("#booking:not([hidden])");
  const [declined, lost, retried] = api.calls;
  assert.notEqual(declined.key, lost.key, "a new attempt, a new key");
  assert.equal(lost.key, retried.key, "a retry reuses its key");
  assert.match(retried.key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

  assert.equal(await page.getAttribute("#app", "data-phase"), "booked");
  assert.equal(await page.textContent("#booking-seats"), "A-1-1, A-1-2");
  assert.match(await page.textContent("#booking-total"), /^KRW\s220,000$/);
  assert.equal(await page.textContent("#booking-status"), "Confirmed");
  await assertBookedReads(page, "en");
  await page.screenshot({ path: path.join(ARTIFACTS, "booking-stand-in-en.png"), fullPage: true });
  await ctx.close();
});

test("Korean, release, and an ended session leads back to the waiting room", { timeout: 60000 }, async () => {
  const api = new FakeBooking();
  api.take("A-1-1", "booked");
  const { ctx, page } = await seatPage("ko-KR", api);
  assert.equal(await page.getAttribute("html", "lang"), "ko");
  assert.equal(await page.getAttribute('[data-seat="A-1-1"]', "data-state"), "booked");
  assert.match(await page.getAttribute('[data-seat="B-1-1"]', "aria-label"), /^B구역 1열 1번, 88,000원, 선택 가능$/);
  assert.equal(await page.textContent('[data-section="B"] h3 .sub'), "88,000원");

  await page.click('[data-seat="B-1-1"]');
  await page.click('[data-seat="B-1-2"]');
  assert.equal(await page.textContent("#selected-total"), "176,000원");
  await page.click("#hold-button");
  await page.waitForSelector("#hold:not([hidden])");
  await assertHeldReads(page, "ko");
  await page.screenshot({ path: path.join(ARTIFACTS, "seats-held-stand-in-ko.png"), fullPage: true });
  await page.fill("#payment-token", "tok_decline");
  await page.click("#confirm");
  await assertPayErrorInView(page, "payment_declined");
  assert.match(await page.textContent("#pay-error"), /거절/);
  await page.screenshot({ path: path.join(ARTIFACTS, "seats-declined-stand-in-ko.png") });
  await page.click("#release");
  await page.waitForSelector('#message[data-code="released"]');
  assert.equal(await page.isHidden("#hold"), true);
  await page.waitForSelector('[data-seat="B-1-1"][data-state="available"]');

  // The account holds and has booked its limit: said in its words.
  api.accountLimit = true;
  await page.click('[data-seat="B-1-1"]');
  await page.click("#hold-button");
  await page.waitForSelector('#message[data-code="account_limit"]');
  assert.match(await page.textContent("#message"), /계정/);
  api.accountLimit = false;

  api.sessionOver = true;
  await page.waitForSelector('#app[data-phase="ended"]', { timeout: 10000 });
  assert.equal(await page.getAttribute("#message", "data-code"), "session_ended");
  assert.equal(await page.getAttribute("#back-link", "href"), `/waiting-room/${ROOM}`);
  assert.equal(await page.isVisible("#back-link"), true);
  assert.equal(await page.isDisabled('[data-seat="B-1-3"]'), true);
  await page.screenshot({ path: path.join(ARTIFACTS, "seats-session-ended-ko.png"), fullPage: true });
  await ctx.close();
});

for (const [locale, lang] of [["en-US", "en"], ["ko-KR", "ko"]]) {
  test(`a phone, 390 px wide (${lang}): the map scrolls in its own box, the page does not`, { timeout: 60000 }, async () => {
    const api = new FakeBooking(WIDE);
    const { ctx, page } = await seatPage(locale, api, { width: 390, height: 844 });
    const m = await assertFitsWidth(page);
    assert.ok(m.mapScroll > m.mapClient, `24 seats a row are wider than a phone: the map scrolls (${JSON.stringify(m)})`);
    await page.screenshot({ path: path.join(ARTIFACTS, `seats-phone-${lang}.png`) });

    // The last seat of a row is reached by scrolling the map, and chosen.
    const last = '[data-seat="A-1-24"]';
    await page.locator(last).scrollIntoViewIfNeeded();
    assert.ok(await page.evaluate(() => document.getElementById("seatmap").scrollLeft > 0), "the map scrolled");
    const seat = await page.evaluate((sel) => document.querySelector(sel).getBoundingClientRect().toJSON(), last);
    assert.ok(seat.left >= 0 && seat.right <= 390, `the last seat shows whole: ${JSON.stringify(seat)}`);
    await page.click(last);
    assert.equal(await page.getAttribute(last, "aria-pressed"), "true");
    await page.screenshot({ path: path.join(ARTIFACTS, `seats-phone-scrolled-${lang}.png`) });
    await assertFitsWidth(page);

    // Held and booked at phone width: the page still fits, the number is one line.
    await page.click("#hold-button");
    await page.waitForSelector("#hold:not([hidden])");
    await assertHeldReads(page, lang);
    await page.click("#confirm");
    await page.waitForSelector("#booking:not([hidden])");
    await assertBookedReads(page, lang);
    await assertFitsWidth(page);
    assert.match(await page.textContent("#booking-total"), lang === "ko" ? /^150,000원$/ : /^KRW\s150,000$/);
    await page.screenshot({ path: path.join(ARTIFACTS, `booking-phone-${lang}.png`), fullPage: true });
    await ctx.close();
  });
}
