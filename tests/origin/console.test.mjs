// The operator's console in a real browser (Debian's chromium, driven by
// playwright-core) against the origin binary alone, on its embedded store:
// a wrong key shows nothing but the refusal; the right key shows every room
// live; the test fills a room's line (joins of its own) and the operator
// pauses it (admissions stop), tries a rate the API refuses (its message
// shows by the field), raises the rate and resumes (admissions run faster),
// sets another room's join challenge (proof of work, a refused and a
// saved difficulty, read back after the reload),
// switches to Korean (the key stays for the tab) and closes the room after
// confirming. Screenshots (English and Korean) go to target/e2e-artifacts/.
// Run by scripts/flow-test.sh.

import assert from "node:assert/strict";
import path from "node:path";
import { after, before, test } from "node:test";

import { closeBrowser, launchBrowser } from "../browser.mjs";
import { ARTIFACTS, Visitor, cleanup, scratch, sleep, startOrigin, stopAll } from "../edge/harness.mjs";

const ROOM = "onsale";
const ADMIN_KEY = "e2e-console-key-0123456789abcdef";

const SHOW = {
  title: "Opening night",
  starts_at: new Date(Date.now() + 30 * 86400e3).toISOString().replace(/\.\d+Z$/, "Z"),
  hold_seconds: 420,
  max_seats_per_hold: 4,
  sections: [{ name: "A", rows: 4, seats_per_row: 10, price: 110000 }],
};

let dir, origin, browser;

before(async () => {
  dir = scratch("console");
  origin = await startOrigin({
    dir,
    adminKey: ADMIN_KEY,
    rooms: [
      {
        id: ROOM, capacity: 10000, admit_per_second: 1.0, session_seconds: 3600, abandon_seconds: 600,
        performances: [{ id: "opening", ...SHOW }],
      },
      { id: "matinee", capacity: 50, admit_per_second: 2.0 },
    ],
  });
  browser = await launchBrowser();
});

after(async () => {
  await closeBrowser(browser);
  await stopAll();
  if (dir) cleanup(dir);
});

/** The room (`ROOM` unless named) as the admin API gives it. */
async function room(id = ROOM) {
  const res = await fetch(`${origin.url}/admin/rooms/${id}`, { headers: { Authorization: `Bearer ${ADMIN_KEY}` } });
  assert.equal(res.status, 200);
  return res.json();
}

/** Visitors joining the room's line, `perBatch` every `everyMs`, until stopped. */
function joiner(perBatch = 6, everyMs = 250) {
  let running = true;
  const done = (async () => {
    while (running) {
      await Promise.all(Array.from({ length: perBatch }, () => new Visitor(origin.url).json("POST", `/queue/${ROOM}/join`)));
      await sleep(everyMs);
    }
  })();
  return { stop: async () => { running = false; await done; } };
}

/** The number a figure shows, as the page wrote it (digits only). */
async function shown(page, field) {
  const text = await page.textContent(`section[data-room="${ROOM}"] [data-field="${field}"]`);
  return Number(text.split("/")[0].replace(/[^\d.]/g, ""));
}

/** Waits until the page's figure `field` satisfies `ok`. */
async function until(page, field, ok, what, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let value;
  while (Date.now() < deadline) {
    value = await shown(page, field);
    if (ok(value)) return value;
    await sleep(250);
  }
  throw new Error(`${what}: ${field} shows ${value}`);
}

test("the console: key, live figures, pause, rate, resume, close", { timeout: 120000 }, async () => {
  const ctx = await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 1100 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // Refused calls (the wrong key's 401, the bad rate's 422) are logged by
  // the browser as failed loads; those are expected, script errors are not.
  page.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource/.test(m.text())) errors.push(m.text()); });

  const response = await page.goto(`${origin.url}/admin/`);
  assert.equal(response.status(), 200);
  assert.equal(response.headers()["cache-control"], "no-store");
  assert.match(response.headers()["content-security-policy"], /^default-src 'none';.*script-src 'sha256-/);

  // A room before its opening (in 2030): the console says when it opens.
  const put = await fetch(`${origin.url}/admin/rooms/gala`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${ADMIN_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ opens_at: "2030-06-01T10:00:00Z" }),
  });
  assert.equal(put.status, 200, await put.text());

  // A wrong key: the refusal and nothing else.
  await page.fill("#admin-key", "not-the-admin-key-0123456789");
  await page.press("#admin-key", "Enter");
  await page.waitForSelector("#login-error:not([hidden])");
  assert.match(await page.textContent("#login-error"), /not valid/);
  assert.equal(await page.isVisible("#console"), false);
  assert.equal(await page.locator("section[data-room]").count(), 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("wr-admin-key")), null);

  // The right key, by keyboard: every room, live.
  const line = joiner();
  try {
    await page.fill("#admin-key", ADMIN_KEY);
    await page.press("#admin-key", "Enter");
    await page.waitForSelector(`section[data-room="${ROOM}"]`);
    assert.equal(await page.isVisible("#login"), false);
    assert.equal(await page.locator('section[data-room="matinee"]').count(), 1, "every room is shown");
    assert.ok(!page.url().includes(ADMIN_KEY), "the key is never in the URL");
    assert.deepEqual(await ctx.cookies(), [], "nor in a cookie");
    const roomEl = page.locator(`section[data-room="${ROOM}"]`);
    assert.equal(await roomEl.getAttribute("data-state"), "open");

    // The line fills: more join than the rate lets in.
    const first = await until(page, "waiting", (w) => w > 0, "the line fills");
    await until(page, "waiting", (w) => w > first + 5, "the line keeps filling");
    await until(page, "inside", (n) => n >= 2, "admissions run at 1/s");
    // The history arrives: charts have lines, the sale's seats show.
    await page.waitForSelector(`section[data-room="${ROOM}"] [data-chart="waiting"] polyline`, { timeout: 15000 });
    await page.waitForSelector(`section[data-room="${ROOM}"] [data-figure="seats"]:not([hidden])`, { timeout: 15000 });
    assert.match(await page.textContent(`section[data-room="${ROOM}"] [data-field="seats"]`), /^40 \/ 0 \/ 0$/);
    // The seats are the origin's live count, in the room's own answer.
    assert.deepEqual((await room()).live.seats, { available: 40, held: 0, booked: 0 });

    // Axes with units: each chart's top and 0, its span back to now.
    const waitingChart = roomEl.locator('[data-chart="waiting"]');
    assert.match(await waitingChart.locator('[data-axis="ymax"]').textContent(), /^\d[\d,.]* people$/);
    assert.equal(await waitingChart.locator('[data-axis="ymin"]').textContent(), "0");
    assert.match(await waitingChart.locator('[data-axis="xfrom"]').textContent(), /^−\d+ (s|min)/);
    assert.equal(await waitingChart.locator('[data-axis="xto"]').textContent(), "now");
    assert.match(await roomEl.locator('[data-chart="rate"] [data-axis="ymax"]').textContent(), /^\d[\d,.]*\/s$/);
    assert.match(await roomEl.locator('[data-chart="seats"] [data-axis="ymax"]').textContent(), /^\d+ seats$/);

    // The achieved rate over a stated short window while people wait.
    assert.match(await roomEl.locator('[data-figure="rate"] dt').textContent(), /last 10 s/);
    await until(page, "rate", (v) => v > 0, "an achieved rate shows");
    // Nobody waits or has entered the matinee: no rate, not a low one.
    const matineeEl = page.locator('section[data-room="matinee"]');
    assert.equal(await matineeEl.locator('[data-field="rate"]').textContent(), "— / 2");
    assert.equal(await matineeEl.locator('[data-field="eta"]').textContent(), "—");
    // Before its opening a room says when it opens, not "open".
    const galaState = page.locator('section[data-room="gala"] [data-field="state"]');
    assert.equal(await galaState.getAttribute("data-state"), "opens");
    assert.match(await galaState.textContent(), /^opens .*2030/);
    await roomEl.screenshot({ path: path.join(ARTIFACTS, "console-room-en.png") });

    // Pause: admissions stop while the line keeps filling.
    await roomEl.locator('button[data-action="pause"]').click();
    await page.waitForSelector(`section[data-room="${ROOM}"][data-state="paused"]`);
    await sleep(500); // a tick already under way may still admit
    const pausedAt = (await room()).live.admitted_total;
    const insidePaused = await shown(page, "inside");
    const waitingPaused = await shown(page, "waiting");
    await sleep(3500);
    assert.equal((await room()).live.admitted_total, pausedAt, "nobody is admitted while paused");
    await until(page, "waiting", (w) => w > waitingPaused, "the line still fills while paused");
    assert.equal(await shown(page, "inside"), insidePaused, "the console shows nobody more inside");

    // A rate the API refuses: its own message, by the field, nothing changed.
    const rate = roomEl.locator('input[name="admit_per_second"]');
    await rate.fill("-5");
    await rate.press("Enter");
    const rateError = roomEl.locator('[data-error-for="admit_per_second"]');
    await rateError.waitFor({ state: "visible" });
    assert.match(await rateError.textContent(), /admit_per_second: must be above 0/);
    assert.equal(await rate.getAttribute("aria-invalid"), "true");
    assert.equal((await room()).settings.admit_per_second, 1.0);

    // Identity is picked from a list; this origin has no identity keys, so
    // the API refuses it by the field and nothing changes. (The refused
    // rate is typed back first, so identity is the one change sent.)
    await rate.fill("1");
    const identity = roomEl.locator('select[name="identity"]');
    assert.equal(await identity.inputValue(), "off");
    await identity.selectOption("required");
    await roomEl.locator('button[data-action="apply"]').click();
    const identityError = roomEl.locator('[data-error-for="identity"]');
    await identityError.waitFor({ state: "visible" });
    assert.match(await identityError.textContent(), /identity: "required" needs identity keys/);
    assert.equal((await room()).settings.identity, "off");
    await identity.selectOption("off");

    // Raise the rate, then resume: admissions run again, faster.
    await rate.fill("20");
    await rate.press("Enter");
    await page.waitForFunction((r) => /settings saved/.test(document.querySelector(`section[data-room="${r}"] [data-field="message"]`).textContent), ROOM);
    assert.equal(await rateError.isVisible(), false);
    assert.equal((await room()).settings.admit_per_second, 20);
    await roomEl.locator('button[data-action="resume"]').click();
    await page.waitForSelector(`section[data-room="${ROOM}"][data-state="open"]`);
    const resumedAt = (await room()).live.admitted_total;
    await sleep(3000);
    const gained = (await room()).live.admitted_total - resumedAt;
    assert.ok(gained >= 15, `20/s admits well over the old 1/s: ${gained} in 3 s`);
    await until(page, "inside", (n) => n >= insidePaused + 15, "the console shows them inside");
    await page.waitForSelector(`section[data-room="${ROOM}"] [data-chart="rate"] polyline`);

    // The join challenge, on the other room (its line stays as it is):
    // proof of work picked from the list; a difficulty out of range is
    // refused by its field, then 16 bits is saved and reads back.
    const matinee = page.locator('section[data-room="matinee"]');
    const challenge = matinee.locator('select[name="challenge"]');
    const bits = matinee.locator('input[name="challenge_bits"]');
    assert.equal(await challenge.inputValue(), "off");
    assert.equal(await bits.inputValue(), "20");
    assert.equal(await matinee.locator('select[name="challenge_fail"]').inputValue(), "closed");
    await challenge.selectOption("pow");
    await bits.fill("40");
    await matinee.locator('button[data-action="apply"]').click();
    const bitsError = matinee.locator('[data-error-for="challenge_bits"]');
    await bitsError.waitFor({ state: "visible" });
    assert.match(await bitsError.textContent(), /challenge_bits: must be between 8 and 32/);
    assert.equal((await room("matinee")).settings.challenge, "off");
    await bits.fill("16");
    await matinee.locator('button[data-action="apply"]').click();
    await page.waitForFunction(() => /settings saved/.test(document.querySelector('section[data-room="matinee"] [data-field="message"]').textContent));
    const saved = (await room("matinee")).settings;
    assert.deepEqual([saved.challenge, saved.challenge_bits, saved.challenge_fail], ["pow", 16, "closed"]);
    await sleep(5500); // one more history sample, so the charts show the change
    await page.screenshot({ path: path.join(ARTIFACTS, "console-en.png"), fullPage: true });

    // Korean: the key is kept for the tab, so no second prompt.
    await page.click('a[hreflang="ko"]');
    await page.waitForSelector(`section[data-room="${ROOM}"]`);
    assert.equal(await page.getAttribute("html", "lang"), "ko");
    assert.equal(await page.isVisible("#login"), false);
    await page.waitForFunction((r) => document.querySelector(`section[data-room="${r}"] [data-chart="waiting"] polyline`), ROOM);
    assert.match(await page.textContent(`section[data-room="${ROOM}"] [data-field="state"]`), /열림/);
    const koWaiting = page.locator(`section[data-room="${ROOM}"] [data-chart="waiting"]`);
    assert.match(await koWaiting.locator('[data-axis="ymax"]').textContent(), /^\d[\d,.]*명$/);
    assert.equal(await koWaiting.locator('[data-axis="xto"]').textContent(), "지금");
    assert.match(await page.textContent(`section[data-room="${ROOM}"] [data-figure="rate"] dt`), /최근 10초/);
    assert.match(await page.textContent('section[data-room="gala"] [data-field="state"]'), /2030.*열림 예정/);
    await page.locator(`section[data-room="${ROOM}"]`).screenshot({ path: path.join(ARTIFACTS, "console-room-ko.png") });
    // The saved challenge reads back into the new page's form.
    await page.waitForFunction(() => document.querySelector('section[data-room="matinee"] select[name="challenge"]').value === "pow");
    assert.equal(await page.inputValue('section[data-room="matinee"] input[name="challenge_bits"]'), "16");
    assert.match(await page.textContent('section[data-room="matinee"] select[name="challenge"] option:checked'), /작업 증명/);
    await page.screenshot({ path: path.join(ARTIFACTS, "console-ko.png"), fullPage: true });

    // Close, after a confirmation that Cancel backs out of.
    const koRoom = page.locator(`section[data-room="${ROOM}"]`);
    await koRoom.locator('button[data-action="close"]').click();
    await koRoom.locator('button[data-action="close-cancel"]').click();
    assert.equal(await koRoom.getAttribute("data-state"), "open");
    await koRoom.locator('button[data-action="close"]').click();
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute("data-action")), "close-confirm");
    await page.keyboard.press("Enter");
    await page.waitForSelector(`section[data-room="${ROOM}"][data-state="closed"]`);
    assert.equal((await room()).state, "closed");
  } finally {
    await line.stop();
  }
  const late = await new Visitor(origin.url).json("POST", `/queue/${ROOM}/join`);
  assert.equal(late.json.state, "closed", "a closed room takes no place");

  // Forgetting the key hides everything again.
  await page.click("#logout");
  await page.waitForSelector("#login:not([hidden])");
  assert.equal(await page.locator("section[data-room]").count(), 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("wr-admin-key")), null);
  assert.deepEqual(errors, [], "no script errors");
  await ctx.close();
});
