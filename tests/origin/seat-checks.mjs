// What the seat page must look like in each of its states, checked the same
// way against the stand-in booking API (seats.test.mjs) and the real one
// (flow.test.mjs).

import assert from "node:assert/strict";

/** Each state's heading, by language (the page's own, with no operator title). */
export const TITLES = {
  en: { seats: "Choose your seats", held: "Pay for your seats", booked: "You are booked" },
  ko: { seats: "좌석 선택", held: "좌석 결제", booked: "예매 완료" },
};

/** Seats held: the heading says pay, and no empty choice panel is left over. */
export async function assertHeldReads(page, lang) {
  assert.equal(await page.textContent("#bk-title"), TITLES[lang].held);
  assert.equal(await page.title(), TITLES[lang].held);
  assert.equal(await page.isHidden("#selection"), true, "the choice panel hides once seats are held");
  assert.equal(await page.isVisible("#hold"), true);
}

/**
 * A refused payment: said beside the pay button, in view, focused and
 * announced (role=alert), with the hold still there.
 */
export async function assertPayErrorInView(page, code) {
  await page.waitForSelector(`#pay-error[data-code="${code}"]:not([hidden])`);
  assert.equal(await page.getAttribute("#pay-error", "role"), "alert");
  assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.id), "pay-error", "focus moves to the message");
  const box = await page.evaluate(() => {
    const r = (id) => document.getElementById(id).getBoundingClientRect();
    return { err: r("pay-error").toJSON(), pay: r("confirm").toJSON(), h: innerHeight };
  });
  assert.ok(box.err.top >= 0 && box.err.bottom <= box.h, `the message is in view: ${JSON.stringify(box)}`);
  assert.ok(box.err.top >= box.pay.bottom && box.err.top - box.pay.bottom < 120, `beside the pay button: ${JSON.stringify(box)}`);
  assert.equal(await page.isVisible("#hold"), true, "the hold stays");
}

/**
 * Booked: the heading says so, the booking number is whole on one line (a
 * box of its own that scrolls on a narrow screen) with a copy button, and a
 * link leads on to the events.
 */
export async function assertBookedReads(page, lang) {
  assert.equal(await page.getAttribute("#app", "data-phase"), "booked");
  assert.equal(await page.textContent("#bk-title"), TITLES[lang].booked);
  const id = await page.getAttribute("#booking", "data-booking-id");
  assert.equal(await page.textContent("#booking-id"), id);
  const lines = await page.evaluate(() => {
    const code = document.getElementById("booking-id");
    const range = document.createRange();
    range.selectNodeContents(code);
    const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
    return { tops: tops.size, font: getComputedStyle(code).fontFamily, wrap: getComputedStyle(code).whiteSpace };
  });
  assert.equal(lines.tops, 1, `the booking number on one line: ${JSON.stringify(lines)}`);
  assert.match(lines.font, /mono/i);
  assert.equal(lines.wrap, "nowrap");
  assert.equal(await page.isVisible("#copy-id"), true);
  await page.click("#copy-id");
  await page.waitForFunction(() => document.getElementById("copied").textContent !== "");
  assert.equal(await page.isVisible("#events-link"), true, "a way on");
  assert.equal(await page.getAttribute("#events-link", "href"), "/");
}

/** The page fits a phone's width: only the seat map scrolls, in its own box. */
export async function assertFitsWidth(page) {
  const m = await page.evaluate(() => {
    const map = document.getElementById("seatmap");
    return {
      page: document.documentElement.scrollWidth,
      width: innerWidth,
      card: document.getElementById("app").getBoundingClientRect().right,
      mapRight: map.getBoundingClientRect().right,
      mapScroll: map.scrollWidth,
      mapClient: map.clientWidth,
    };
  });
  assert.ok(m.page <= m.width, `nothing wider than the screen: ${JSON.stringify(m)}`);
  assert.ok(m.card <= m.width && m.mapRight <= m.width, `the card and the map within the screen: ${JSON.stringify(m)}`);
  return m;
}
