// End to end: the real worker in workerd (`wrangler dev`) in front of the
// real origin on a private Redis. Every gate outcome the contract names,
// then the fail modes with the queue down (Redis stopped) and with the
// origin stopped. Run by scripts/edge-test.sh (`node --test tests/edge/`).

import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";

import {
  BYPASS_SECRET, EDGE_SECRET, Visitor, cleanup, scratch, sleep, startEdge, startOrigin,
  startRedis, stop, stopAll,
} from "./harness.mjs";

const ROOM = "concert";
const ROOMS = [{ room: ROOM, paths: ["/book/", "/api/"] }];
const POW_ROOM = "pow-room";
const HTML = "text/html";

let dir, redis, origin, closed, open, echoEdge, broken, echoServer;
let echoed = [];

/** The JSON config block of a waiting page. */
function pageConfig(text) {
  const m = text.match(/<script id="wr-config" type="application\/json">(.*?)<\/script>/s);
  assert.ok(m, "waiting page has its config block");
  return JSON.parse(m[1]);
}

function assertWaitingPage(res, what) {
  assert.equal(res.status, 200, `${what}: status`);
  assert.match(res.headers.get("content-type"), /^text\/html/, `${what}: content type`);
  assert.equal(res.headers.get("cache-control"), "no-store", `${what}: cache`);
  assert.match(res.headers.get("content-security-policy") || "", /default-src 'none'/);
  assert.equal(pageConfig(res.text).room, ROOM);
}

function assertInQueue(res, what) {
  assert.equal(res.status, 429, `${what}: status`);
  assert.ok(Number(res.headers.get("retry-after")) > 0, `${what}: Retry-After`);
  assert.equal(res.json.error.code, "in_queue");
  assert.equal(typeof res.json.error.message, "string");
  assert.deepEqual(Object.keys(res.json.queue).sort(), ["challenge_header", "join", "page", "room", "status"]);
  assert.equal(res.json.queue.challenge_header, "Waiting-Room-Challenge");
  assert.match(res.json.error.message, /428 challenge_required/);
  assert.equal(res.json.queue.room, ROOM);
  assert.equal(res.json.queue.join, `/queue/${ROOM}/join`);
  assert.equal(res.json.queue.status, `/queue/${ROOM}/status`);
  assert.match(res.json.queue.page, new RegExp(`^/waiting-room/${ROOM}\\?to=`));
}

/**
 * The origin's own 404 for a path it does not serve: proof of passage. An
 * app gets its JSON `not_found`; a browser asking for HTML its 404 page.
 */
function reachedOrigin(res) {
  return res.status === 404 &&
    ((res.json && res.json.error && res.json.error.code === "not_found") || /Page not found/.test(res.text));
}
function assertReachedOrigin(res, what) {
  assert.equal(res.status, 404, `${what}: status (${res.text.slice(0, 80)})`);
  assert.ok(reachedOrigin(res), `${what}: origin's body (${res.text.slice(0, 80)})`);
}

/** The same token payload, MAC'd with a key the edge does not hold. */
function forge(token, secret) {
  const payload = token.split(".")[0];
  const mac = createHmac("sha256", secret).update(Buffer.from(payload, "base64url")).digest("base64url");
  return `${payload}.${mac}`;
}

/** The token with its expiry pushed out a day, keeping the original MAC. */
function tamper(token) {
  const [payload, mac] = token.split(".");
  const bytes = Buffer.from(payload, "base64url");
  const at = bytes.length - 8;
  bytes.writeBigUInt64BE(bytes.readBigUInt64BE(at) + 86400n, at);
  return `${bytes.toString("base64url")}.${mac}`;
}

/** A request with any method (fetch refuses TRACE and friends). */
function raw(base, method, urlPath) {
  return new Promise((resolve, reject) => {
    const req = http.request(base + urlPath, { method, headers: { Accept: "application/json" } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function eventually(what, fn, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last.done) return last;
    await sleep(250);
  }
  assert.fail(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last).slice(0, 300)})`);
}

describe("edge in workerd in front of the origin", { timeout: 180000 }, () => {
  before(async () => {
    dir = scratch("gate");
    redis = await startRedis(dir);
    origin = await startOrigin({
      dir,
      redisUrl: redis.url,
      prefix: `wre2e-gate-${process.pid}-${Date.now()}:`,
      rooms: [
        { id: ROOM, capacity: 1, admit_per_second: 5.0, session_seconds: 3, abandon_seconds: 30 },
        // Joins here cost a (small) proof of work.
        { id: POW_ROOM, capacity: 10, admit_per_second: 5.0, challenge: "pow", challenge_bits: 12 },
      ],
    });
    echoServer = http.createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        echoed.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
        if (req.url === "/redirect") {
          res.writeHead(302, { Location: "/elsewhere" }).end();
          return;
        }
        res.setHeader("Set-Cookie", ["a=1; Path=/", "b=2; Path=/"]);
        res.writeHead(201, { "Content-Type": "text/plain", "X-Echo": "yes" }).end("echo");
      });
    });
    echoServer.listen(0, "127.0.0.1");
    await once(echoServer, "listening");
    const echoUrl = `http://127.0.0.1:${echoServer.address().port}`;
    // Three workers side by side: wrangler takes seconds to start, so once.
    [closed, open, echoEdge, broken] = await Promise.all([
      startEdge({ dir, name: "edge-closed", originUrl: origin.url, failMode: "closed", rooms: ROOMS }),
      startEdge({ dir, name: "edge-open", originUrl: origin.url, failMode: "open", rooms: ROOMS }),
      startEdge({ dir, name: "edge-echo", originUrl: echoUrl, failMode: "closed", rooms: ROOMS }),
      // A typo in the settings: every request is refused, and the log says why.
      startEdge({ dir, name: "edge-broken", originUrl: origin.url, failMode: "sometimes", rooms: ROOMS, readyStatus: 500 }),
    ]);
  });

  after(async () => {
    await stopAll();
    if (echoServer) echoServer.close();
    if (dir) cleanup(dir);
  });

  test("unprotected paths and bypass paths pass to the origin untouched", async () => {
    const v = new Visitor(closed.url);
    const health = await v.json("GET", "/healthz");
    assert.equal(health.status, 200);
    assert.equal(health.json.status, "ok");
    assertReachedOrigin(await v.page("/static/app.css"), "bypass path");
    assertReachedOrigin(await v.page("/elsewhere"), "unprotected path");
  });

  test("a CORS preflight to a protected path is answered by the edge, allowing nothing", async () => {
    echoed = [];
    const v = new Visitor(echoEdge.url);
    const preflight = { Origin: "http://127.0.0.1:1", "Access-Control-Request-Method": "POST" };
    for (const path of ["/api/seats", "/book/concert", "/static/..;/api/seats"]) {
      const res = await v.request("OPTIONS", path, { headers: preflight });
      assert.equal(res.status, 204, `${path}: status`);
      assert.equal(res.text, "", `${path}: no body`);
      const allowing = [...res.headers.keys()].filter((name) => name.startsWith("access-control-"));
      assert.deepEqual(allowing, [], `${path}: no CORS allowance`);
    }
    assert.deepEqual(echoed.map((r) => `${r.method} ${r.url}`), [], "no preflight reached the origin");
    // Where the edge has nothing to guard, the site answers its preflights.
    await v.request("OPTIONS", "/elsewhere", { headers: preflight });
    await v.request("OPTIONS", "/static/app.css", { headers: preflight });
    // Staff with the bypass secret pass with any method.
    await v.request("OPTIONS", "/api/seats", { headers: { ...preflight, "Waiting-Room-Bypass": BYPASS_SECRET } });
    assert.deepEqual(echoed.map((r) => `${r.method} ${r.url}`), [
      "OPTIONS /elsewhere", "OPTIONS /static/app.css", "OPTIONS /api/seats",
    ]);
  });

  test("every method is forwarded as sent, or refused, never sent as another", async () => {
    echoed = [];
    const v = new Visitor(echoEdge.url);
    const staff = { "Waiting-Room-Bypass": BYPASS_SECRET, "Content-Type": "text/plain" };
    for (const method of ["PATCH", "PROPFIND", "MKCOL", "REPORT", "DELETE", "PUT", "OPTIONS"]) {
      for (const path of ["/elsewhere/m", "/api/seats"]) {
        const res = await v.request(method, path, { headers: staff, body: `${method} body` });
        assert.equal(res.status, 201, `${method} ${path}: status`);
        const seen = echoed.at(-1);
        assert.equal(`${seen.method} ${seen.url}`, `${method} ${path}`, `${method} ${path}: as sent`);
        assert.equal(seen.body, `${method} body`, `${method} ${path}: body`);
      }
    }
    // What the Workers fetch refuses is the edge's 501; a method workerd
    // does not know never reaches the worker (workerd answers 501 itself).
    echoed = [];
    const trace = await raw(echoEdge.url, "TRACE", "/elsewhere/m");
    assert.equal(trace.status, 501, trace.text);
    assert.equal(JSON.parse(trace.text).error.code, "method_not_supported");
    const madeUp = await raw(echoEdge.url, "FOOBAR", "/elsewhere/m");
    assert.equal(madeUp.status, 501, madeUp.text);
    assert.deepEqual(echoed.map((r) => `${r.method} ${r.url}`), [], "none of these reached the origin");
    // A held one stays held.
    assertInQueue(await new Visitor(echoEdge.url).json("PROPFIND", "/api/seats"), "PROPFIND without a token");
  });

  test("no token: a browser gets the waiting page, keeping the wanted page", async () => {
    const res = await new Visitor(closed.url).page("/book/concert?seat=12");
    assertWaitingPage(res, "navigation");
    const cfg = pageConfig(res.text);
    assert.equal(cfg.target, "/book/concert?seat=12");
    assert.equal(cfg.lang, "en");
    assert.equal(cfg.failOpen, false);
    assert.match(res.text, /<html lang="en">/);
    assert.match(res.text, /aria-live="polite"/);
  });

  test("the page speaks Korean by Accept-Language", async () => {
    const res = await new Visitor(closed.url).page("/book/concert", { "Accept-Language": "ko-KR,ko;q=0.9,en;q=0.8" });
    assertWaitingPage(res, "korean");
    assert.match(res.text, /<html lang="ko">/);
    assert.match(res.text, /내 순서/);
  });

  test("no token: an API call gets 429 with the queue's URLs", async () => {
    const res = await new Visitor(closed.url).json("GET", "/api/seats?perf=1");
    assertInQueue(res, "api");
    assert.equal(res.json.queue.page, "/waiting-room/concert?to=%2Fapi%2Fseats%3Fperf%3D1");
  });

  test("join through /queue, wait, get admitted, reach the protected page", async () => {
    const first = new Visitor(closed.url);
    const joined = await first.request("POST", "/queue/concert/join", { headers: { Accept: "application/json" } });
    assert.equal(joined.status, 200, joined.text);
    assert.equal(joined.json.state, "admitted", "an empty room admits at once");
    assert.ok(first.cookies.has("wr_ticket_concert") && first.cookies.has("wr_entry_concert"));
    assertReachedOrigin(await first.page("/book/concert/none"), "first visitor");

    // The room holds one at a time: the second visitor waits for the first
    // one's 3 s session to end.
    const second = new Visitor(closed.url);
    const waiting = await second.json("POST", "/queue/concert/join");
    assert.equal(waiting.json.state, "waiting", waiting.text);
    assert.equal(waiting.json.position, 1);
    assertWaitingPage(await second.page("/book/concert"), "second visitor, waiting");

    const admitted = await eventually("second visitor admitted", async () => {
      const s = await second.json("GET", "/queue/concert/status");
      assert.equal(s.status, 200, s.text);
      return { done: s.json.state === "admitted", state: s.json.state, body: s.json };
    });
    assert.ok(second.cookies.has("wr_entry_concert"));
    assertReachedOrigin(await second.page("/book/concert/none"), "second visitor, admitted (cookie)");
    assertReachedOrigin(await second.json("GET", "/api/seats"), "second visitor, admitted (API)");

    // An app carries the token in a header instead of a cookie.
    const app = new Visitor(closed.url);
    assertReachedOrigin(
      await app.json("GET", "/api/seats", { "Entry-Token": admitted.body.entry_token }),
      "Entry-Token header",
    );

    // Forged, tampered and wrong-kind tokens for the same room are refused.
    const real = admitted.body.entry_token;
    const ticket = second.cookies.get("wr_ticket_concert");
    for (const [what, token] of [
      ["forged (foreign key)", forge(real, "someone-elses-secret-0123456789")],
      ["tampered (expiry pushed out)", tamper(real)],
      ["a ticket is not an entry token", ticket],
      ["garbage", "not-a-token"],
    ]) {
      const browser = new Visitor(closed.url);
      browser.cookies.set("wr_entry_concert", token);
      assertWaitingPage(await browser.page("/book/concert"), what);
      assertInQueue(await new Visitor(closed.url).json("GET", "/api/seats", { "Entry-Token": token }), what);
    }
  });

  test("a join challenge passes through: the 428, a refused and a solved join", async () => {
    const solves = (solution, bits) => createHash("sha256").update(solution).digest().readUInt32BE(0) >>> (32 - bits) === 0;
    const v = new Visitor(closed.url);
    const join = `/queue/${POW_ROOM}/join`;
    const first = await v.json("POST", join);
    assert.equal(first.status, 428, first.text);
    assert.equal(first.json.error.code, "challenge_required");
    const { kind, seed, bits, expires_at: expires } = first.json.challenge;
    assert.equal(kind, "pow");
    assert.equal(bits, 12);
    assert.ok(Date.parse(expires) > Date.now(), expires);
    let nonce = 0;
    while (!solves(`${seed}.${nonce}`, bits)) nonce += 1;
    let wrong = nonce + 1;
    while (solves(`${seed}.${wrong}`, bits)) wrong += 1;
    const refused = await v.json("POST", join, { "Waiting-Room-Challenge": `${seed}.${wrong}` });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json.error.code, "challenge_failed");
    const solved = await v.json("POST", join, { "Waiting-Room-Challenge": `${seed}.${nonce}` });
    assert.equal(solved.status, 200, solved.text);
    assert.ok(["waiting", "admitted"].includes(solved.json.state), solved.text);
    assert.equal(typeof solved.json.ticket, "string");
  });

  test("the bypass secret passes, a wrong one does not", async () => {
    const v = new Visitor(closed.url);
    assertReachedOrigin(await v.page("/book/concert/none", { "Waiting-Room-Bypass": BYPASS_SECRET }), "bypass secret");
    assertWaitingPage(await v.page("/book/concert", { "Waiting-Room-Bypass": BYPASS_SECRET + "x" }), "wrong secret");
  });

  test("odd paths, a bare OPTIONS and /admin are held or refused, never forwarded", async () => {
    echoed = [];
    const v = new Visitor(echoEdge.url);
    assertWaitingPage(await v.page("/static/..;/book/concert"), "..; out of a bypass path");
    assertWaitingPage(await v.page("/book;jsessionid=1/concert"), ";params on a room's folder");
    const long = await v.json("GET", `/x/${"a".repeat(2100)}/..%2f..%2fbook/concert`);
    assert.equal(long.status, 414, "an over-long path is refused, not cut short");
    assert.equal(long.json.error.code, "uri_too_long");
    assertInQueue(await v.json("OPTIONS", "/api/seats"), "OPTIONS without preflight headers");
    for (const path of ["/admin/rooms", "/ADMIN/rooms", "/static/..;/admin/rooms"]) {
      const res = await v.json("GET", path);
      assert.equal(res.status, 404, path);
      assert.equal(res.json.error.code, "not_found", path);
    }
    assert.deepEqual(echoed.map((r) => r.url), [], "none of these reached the origin");
    const staff = await v.json("GET", "/admin/rooms", { "Waiting-Room-Bypass": BYPASS_SECRET });
    assert.equal(staff.status, 201, "the bypass secret reaches the admin API");
    assert.equal(echoed.at(-1).url, "/admin/rooms");
  });

  test("the waiting page route sends admitted visitors to same-site paths only", async () => {
    const v = new Visitor(closed.url);
    const good = await v.page("/waiting-room/concert?to=%2Fbook%2Fconcert%3Fseat%3D1");
    assertWaitingPage(good, "page route");
    assert.equal(pageConfig(good.text).target, "/book/concert?seat=1");
    for (const evil of ["//evil.example/", "%2F%2Fevil.example", "https://evil.example/", "/%5Cevil.example", "%5C%5Cevil.example", "javascript:alert(1)", "/%09/evil.example"]) {
      const res = await v.page(`/waiting-room/concert?to=${encodeURIComponent(evil)}`);
      assert.equal(pageConfig(res.text).target, "/", `target ${evil}`);
    }
    const unknown = await v.page("/waiting-room/nope");
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, "unknown_room");
  });

  test("forwarding keeps the request and response, adds only the edge secret", async () => {
    echoed = [];
    const v = new Visitor(echoEdge.url);
    const res = await v.request("POST", "/elsewhere/x?y=1&z=%2F", {
      headers: { "Content-Type": "text/plain", "X-Test": "kept", "Waiting-Room-Edge": "spoofed", Cookie: "c=3" },
      body: "hello body",
    });
    assert.equal(res.status, 201);
    assert.equal(res.text, "echo");
    assert.equal(res.headers.get("x-echo"), "yes");
    assert.deepEqual(res.headers.getSetCookie(), ["a=1; Path=/", "b=2; Path=/"]);
    const seen = echoed.at(-1);
    assert.equal(seen.method, "POST");
    assert.equal(seen.url, "/elsewhere/x?y=1&z=%2F");
    assert.equal(seen.body, "hello body");
    assert.equal(seen.headers["x-test"], "kept");
    assert.equal(seen.headers.cookie, "c=3");
    assert.equal(seen.headers["waiting-room-edge"], EDGE_SECRET, "the edge's secret, not the client's");

    await v.page("/book/concert", { "Waiting-Room-Bypass": BYPASS_SECRET });
    assert.equal(echoed.at(-1).url, "/book/concert");
    assert.equal(echoed.at(-1).headers["waiting-room-bypass"], undefined, "the bypass secret stays at the edge");

    const redirect = await v.page("/redirect");
    assert.equal(redirect.status, 302, "redirects are handed back, not followed");
    assert.equal(redirect.headers.get("location"), "/elsewhere");
  });

  test("a broken setting refuses every request and names the variable in the log", async () => {
    for (const path of ["/book/concert", "/elsewhere", "/queue/concert/status"]) {
      const res = await new Visitor(broken.url).json("GET", path);
      assert.equal(res.status, 500, path);
      assert.equal(res.json.error.code, "edge_misconfigured");
      assert.doesNotMatch(res.text, /FAIL_MODE/, "no detail for the visitor");
    }
    await eventually("the log names FAIL_MODE", async () => ({
      done: /FAIL_MODE is invalid: must be "open" or "closed"/.test(readFileSync(broken.entry.logFile, "utf8")),
    }), 5000);
  });

  test("queue down (Redis stopped): open lets through, closed holds", async () => {
    await stop(redis.entry);
    // Closed never asks: the page (which keeps retrying) and the 429.
    assertWaitingPage(await new Visitor(closed.url).page("/book/concert"), "closed, page");
    assertInQueue(await new Visitor(closed.url).json("GET", "/api/seats"), "closed, api");
    const queue = await new Visitor(closed.url).json("POST", "/queue/concert/join");
    assert.equal(queue.status, 503, "the origin's own answer passes through");
    // Open notices within the health memory's few seconds.
    await eventually("fail-open passes", async () => {
      const res = await new Visitor(open.url).page("/book/concert/none");
      return { done: reachedOrigin(res), status: res.status };
    });
    assertReachedOrigin(await new Visitor(open.url).json("GET", "/api/seats"), "open, api");
  });

  test("origin stopped: open forwards (and reports it unreachable), closed holds", async () => {
    await stop(origin.entry);
    assertWaitingPage(await new Visitor(closed.url).page("/book/concert"), "closed, page");
    assertInQueue(await new Visitor(closed.url).json("GET", "/api/seats"), "closed, api");
    const queue = await new Visitor(closed.url).json("POST", "/queue/concert/join");
    assert.equal(queue.status, 502);
    assert.equal(queue.json.error.code, "queue_unavailable");
    assert.equal(queue.headers.get("retry-after"), "2");
    await eventually("fail-open forwards", async () => {
      const res = await new Visitor(open.url).page("/book/concert");
      return { done: res.status === 502 && res.json && res.json.error.code === "origin_unreachable", status: res.status };
    });
  });
});
