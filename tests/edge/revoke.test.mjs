// End to end: the site ends a visit. The real worker in workerd (`wrangler
// dev`) sits in front of a stand-in for the operator's site: a small HTTP
// server that answers `/book/concert/checkout` itself with
// `Waiting-Room-Command: Revoke` (and a renewed entry cookie, as the origin's
// protected answers carry), and passes everything else to the real origin
// on a private Redis. A room of capacity 1 with a second visitor waiting:
// after the checkout answer the browser sees no command header and its entry
// cookie deleted, the same entry token passes neither the edge nor the
// origin, and the waiter behind is let in (the session is 60 s long, so
// only the revoke can free the slot this soon). Run by scripts/edge-test.sh.

import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";

import {
  EDGE_SECRET, Visitor, cleanup, scratch, sleep, startEdge, startOrigin, startRedis, stopAll,
} from "./harness.mjs";

const ROOM = "concert";
const COOKIE = `wr_entry_${ROOM}`;

let dir, redis, origin, site, edge;
/** Requests the stand-in passed to the origin: method, url, headers. */
let passed = [];
let first, second, entry;

/**
 * The stand-in site: its own answers for two pages under the room's
 * protected prefix and one outside it; the rest goes to the origin as it
 * came (method, path, headers, body), and the origin's answer back.
 */
function standIn(originUrl) {
  const own = {
    // The purchase is done: the site ends the visit.
    [`/book/${ROOM}/checkout`]: "Revoke",
    // A command the edge does not know: removed, otherwise ignored.
    [`/book/${ROOM}/other`]: "refresh",
    // Not a protected path: the edge removes the header and ends nothing.
    "/elsewhere/checkout": "revoke",
  };
  return http.createServer((req, res) => {
    const command = own[req.url.split("?")[0]];
    if (command) {
      req.resume();
      res.setHeader("Set-Cookie", [
        // As the origin renews the entry cookie in a protected answer.
        `${COOKIE}=renewed-by-the-site; HttpOnly; SameSite=Lax; Path=/; Max-Age=60`,
        "site=kept; Path=/",
      ]);
      res.writeHead(200, { "Content-Type": "text/plain", "Waiting-Room-Command": command }).end("thanks");
      return;
    }
    passed.push({ method: req.method, url: req.url, headers: req.headers });
    const target = new URL(req.url, originUrl);
    const out = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.rawHeaders);
      answer.pipe(res);
    });
    out.on("error", () => res.writeHead(502).end());
    req.pipe(out);
  });
}

async function eventually(what, fn, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last.done) return last;
    await sleep(200);
  }
  assert.fail(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last).slice(0, 300)})`);
}

describe("the site ends a visit with Waiting-Room-Command: revoke", { timeout: 120000 }, () => {
  before(async () => {
    dir = scratch("revoke");
    redis = await startRedis(dir);
    origin = await startOrigin({
      dir,
      redisUrl: redis.url,
      prefix: `wre2e-revoke-${process.pid}-${Date.now()}:`,
      rooms: [{
        id: ROOM, capacity: 1, admit_per_second: 5.0, session_seconds: 60, abandon_seconds: 30,
        performances: [{
          id: "night", title: "Night", starts_at: "2030-05-01T19:00:00Z",
          sections: [{ name: "A", rows: 1, seats_per_row: 4, price: 100 }],
        }],
      }],
      args: ["--edge-secret", EDGE_SECRET],
    });
    site = standIn(origin.url);
    site.listen(0, "127.0.0.1");
    await once(site, "listening");
    edge = await startEdge({
      dir,
      name: "edge-revoke",
      originUrl: `http://127.0.0.1:${site.address().port}`,
      rooms: [{ room: ROOM, paths: [`/book/${ROOM}/`, `/api/${ROOM}/`] }],
    });

    // One inside, one waiting behind.
    first = new Visitor(edge.url);
    const joined = await first.json("POST", `/queue/${ROOM}/join`);
    assert.equal(joined.json.state, "admitted", joined.text);
    entry = first.cookies.get(COOKIE);
    assert.ok(entry, "the entry cookie");
    second = new Visitor(edge.url);
    const waiting = await second.json("POST", `/queue/${ROOM}/join`);
    assert.equal(waiting.json.state, "waiting", waiting.text);
    assert.equal(waiting.json.position, 1);
    const inside = await first.json("GET", `/api/${ROOM}/performances`);
    assert.equal(inside.status, 200, `the first visitor is inside: ${inside.text}`);
    // The origin renews the entry cookie on protected answers (a new
    // issued-at once a second has passed): the token the browser holds now
    // is the one the checkout carries.
    entry = first.cookies.get(COOKIE);
  });

  after(async () => {
    await stopAll();
    if (site) site.close();
    if (dir) cleanup(dir);
  });

  test("check 1: the checkout answer reaches the browser without Waiting-Room-Command, its entry cookie deleted", async () => {
    passed = [];
    const res = await first.request("POST", `/book/${ROOM}/checkout`, {
      headers: { Accept: "text/plain", "Content-Type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 200);
    assert.equal(res.text, "thanks", "the site's own answer");
    assert.equal(res.headers.get("waiting-room-command"), null, "the command stays at the edge");
    assert.deepEqual(res.headers.getSetCookie(), [
      "site=kept; Path=/",
      `${COOKIE}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0`,
    ], "the site's renewal of the entry cookie dropped, a deletion instead");
    assert.ok(!first.cookies.has(COOKIE), "the browser has no entry cookie left");
    console.log(`check 1: ${res.status} ${res.text}; waiting-room-command: ${res.headers.get("waiting-room-command")}; set-cookie: ${JSON.stringify(res.headers.getSetCookie())}`);

    // The edge asked the origin, with the entry token and its own secret.
    const leaves = passed.filter((r) => r.url === `/queue/${ROOM}/leave`);
    assert.equal(leaves.length, 1, JSON.stringify(passed.map((r) => `${r.method} ${r.url}`)));
    assert.equal(leaves[0].method, "POST");
    assert.equal(leaves[0].headers["entry-token"], entry);
    assert.equal(leaves[0].headers["waiting-room-edge"], EDGE_SECRET);
    assert.equal(leaves[0].headers.authorization, undefined, "no ticket: the entry token decides");
    console.log(`check 1: the edge called ${leaves[0].method} ${leaves[0].url} with Entry-Token and Waiting-Room-Edge`);
  });

  test("check 2: the same entry token passes neither the edge nor the origin", async () => {
    const api = await new Visitor(edge.url).json("GET", `/api/${ROOM}/performances`, { "Entry-Token": entry });
    assert.equal(api.status, 429, api.text);
    assert.equal(api.json.error.code, "in_queue");
    const browser = new Visitor(edge.url);
    browser.cookies.set(COOKIE, entry);
    const page = await browser.page(`/book/${ROOM}/`);
    assert.equal(page.status, 200);
    assert.match(page.text, /id="wr-config"/, "the waiting page, not the site");
    const direct = await fetch(`${origin.url}/api/${ROOM}/performances`, { headers: { "Entry-Token": entry } });
    const body = await direct.json();
    assert.equal(direct.status, 401);
    assert.equal(body.error.code, "invalid_entry");
    console.log(`check 2: edge API ${api.status} ${api.json.error.code}; edge page ${page.status} waiting page; origin ${direct.status} ${body.error.code}`);
  });

  test("check 3: the next waiter is admitted", async () => {
    const admitted = await eventually("the second visitor admitted", async () => {
      const s = await second.json("GET", `/queue/${ROOM}/status`);
      assert.equal(s.status, 200, s.text);
      return { done: s.json.state === "admitted", state: s.json.state };
    }, 10000);
    const inside = await second.json("GET", `/api/${ROOM}/performances`);
    assert.equal(inside.status, 200, inside.text);
    const gone = await first.json("GET", `/queue/${ROOM}/status`);
    assert.equal(gone.json.state, "expired", "the first visitor's place is gone");
    console.log(`check 3: second visitor ${admitted.state}; its booking call ${inside.status}; first visitor ${gone.json.state}`);
  });

  test("other commands and unprotected paths: the header is removed, nothing ends", async () => {
    for (const path of [`/book/${ROOM}/other`, "/elsewhere/checkout"]) {
      const res = await second.request("GET", path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("waiting-room-command"), null, `${path}: removed`);
      assert.deepEqual(res.headers.getSetCookie(), [
        `${COOKIE}=renewed-by-the-site; HttpOnly; SameSite=Lax; Path=/; Max-Age=60`,
        "site=kept; Path=/",
      ], `${path}: cookies untouched`);
    }
    // The jar took the site's stand-in value: put the real token back.
    const s = await second.json("GET", `/queue/${ROOM}/status`);
    assert.equal(s.json.state, "admitted", "still inside");
    const inside = await second.json("GET", `/api/${ROOM}/performances`);
    assert.equal(inside.status, 200, inside.text);
  });
});
