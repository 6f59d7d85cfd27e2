// The waiting page's loop: join on load, poll status as the server says,
// back off with jitter on errors, go to the wanted page once admitted.
// Settings and strings come from the JSON block the page is rendered with
// (wr-config), by the edge or the origin:
// {room, target, lang, failOpen, api: {join, status}, t: {...strings}}.
"use strict";
(function () {
  var cfg = JSON.parse(document.getElementById("wr-config").textContent);
  var t = cfg.t;
  var $ = function (id) { return document.getElementById(id); };
  var num = new Intl.NumberFormat(cfg.lang);

  var MIN_POLL_MS = 1000;    // never faster than this, whatever a response says
  var MAX_BACKOFF_MS = 30000; // well under a room's abandon time
  // Status polls ask the origin to hold them while the sale's last seats
  // are held (Prefer: wait, RFC 7240): a held answer comes when the sale
  // changes, so a sell-out is heard at once; the origin caps the hold.
  var HOLD_S = 20;
  var timer = null;          // the one pending step; a new one replaces it
  var clock = null;          // the pre-queue countdown's 1 s ticker
  var errors = 0;            // failures in a row, for the backoff
  var firstPos = null;       // the position first seen: the bar's 0 %
  var lastPos = null;
  var skew = 0;              // server clock minus ours, from the Date header
  var retriedJoin = false;

  // sessionStorage can throw (privacy modes); counters are a nicety.
  function counter(key, change) {
    try {
      var n = change === 0 ? 0 : (+sessionStorage.getItem(key) || 0) + change;
      if (change === 0) { sessionStorage.removeItem(key); } else { sessionStorage.setItem(key, String(n)); }
      return n;
    } catch (e) { return change; }
  }
  function fill(s, vars) {
    return s.replace(/\{(\w+)\}/g, function (_, k) { return vars[k] === undefined ? "" : vars[k]; });
  }
  function jitter(ms, spread) { return ms * (1 - spread + 2 * spread * Math.random()); }
  function later(fn, ms) { clearTimeout(timer); timer = setTimeout(fn, ms); }
  function say(text) { $("wr-msg").textContent = text; }
  function announce(text) { $("wr-live").textContent = text; }
  function progress(pct) {
    pct = Math.max(3, Math.min(100, pct));
    $("wr-fill").style.width = pct + "%";
    $("wr-bar").setAttribute("aria-valuenow", String(Math.round(pct)));
  }
  function eta(seconds) {
    if (seconds === null || seconds === undefined) { return "–"; }
    if (seconds < 60) { return t.eta_under_minute; }
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) { return fill(t.eta_minutes, { n: num.format(minutes) }); }
    return fill(t.eta_hours, { h: num.format(Math.floor(minutes / 60)), m: num.format(minutes % 60) });
  }

  function request(method, url) {
    var headers = { Accept: "application/json" };
    if (method === "GET") { headers.Prefer = "wait=" + HOLD_S; }
    return fetch(url, {
      method: method,
      credentials: "same-origin",
      cache: "no-store",
      headers: headers
    }).then(function (res) {
      var date = Date.parse(res.headers.get("Date") || "");
      if (!isNaN(date)) { skew = date - Date.now(); }
      return res.json().catch(function () { return null; }).then(function (body) {
        return { status: res.status, body: body, retryAfter: res.headers.get("Retry-After"),
          held: res.headers.get("Preference-Applied") !== null };
      });
    });
  }

  // One round trip. A join that meets 401 has had its bad ticket cookie
  // cleared by the origin, so it is tried once more; a status that meets
  // 401 has no ticket at all, so it joins.
  function step(kind) {
    var sent = Date.now();
    var call = kind === "join" ? request("POST", cfg.api.join) : request("GET", cfg.api.status);
    call.then(function (r) {
      if (r.status === 200 && r.body && typeof r.body.state === "string") {
        errors = 0;
        counter("wr-down", 0);
        show(r.body, r.held ? sent : null);
      } else if (r.status === 401 && (kind === "status" || !retriedJoin)) {
        retriedJoin = retriedJoin || kind === "join";
        later(function () { step("join"); }, jitter(500, 0.5));
      } else {
        failed(r, kind);
      }
    }, function () { failed(null, kind); });
  }

  // Exponential backoff with full jitter, at least 1 s, at least Retry-After.
  function failed(r, kind) {
    errors += 1;
    var delay = Math.max(MIN_POLL_MS, Math.random() * Math.min(MAX_BACKOFF_MS, 1000 * Math.pow(2, errors)));
    var after = r ? parseInt(r.retryAfter, 10) : NaN;
    if (after > 0) { delay = Math.max(delay, Math.min(after * 1000, MAX_BACKOFF_MS)); }
    say(t.msg_reconnecting);
    var down = !r || (r.status >= 502 && r.status <= 504);
    if (down && cfg.failOpen) {
      // The edge lets visitors through while the queue is down: try the
      // wanted page, backing off across reloads so nobody loops fast.
      var n = counter("wr-down", 1);
      later(function () { location.replace(cfg.target); },
        jitter(Math.min(MAX_BACKOFF_MS, 2000 * Math.pow(2, Math.min(n, 5))), 0.25));
      return;
    }
    later(function () { step(kind); }, delay);
  }

  function countdown(opensAt) {
    clearInterval(clock);
    var box = $("wr-countdown");
    if (!opensAt) { box.hidden = true; return; }
    var tick = function () {
      var left = Math.max(0, Math.round((opensAt - (Date.now() + skew)) / 1000));
      var pad = function (v) { return (v < 10 ? "0" : "") + v; };
      $("wr-clock").textContent = pad(Math.floor(left / 3600)) + ":" + pad(Math.floor(left / 60) % 60) + ":" + pad(left % 60);
      if (left === 0) { clearInterval(clock); }
    };
    box.hidden = false;
    tick();
    clock = setInterval(tick, 1000);
  }

  // heldSince: when a poll the origin held was sent (null: not held).
  function show(s, heldSince) {
    var room = s.room || {};
    var opensAt = room.opens_at ? Date.parse(room.opens_at) : NaN;
    var prequeue = s.state === "waiting" && s.position === null && opensAt > Date.now() + skew;
    countdown(prequeue ? opensAt : null);
    // The bar and "keep this page open" only make sense while in line.
    var inLine = s.state === "waiting" || s.state === "admitted";
    $("wr-bar").hidden = !inLine;
    $("wr-note").hidden = !inLine;
    $("wr-waiting").textContent = typeof s.waiting === "number" ? num.format(s.waiting) : "–";
    $("wr-eta").textContent = eta(s.eta_seconds);
    $("wr-rejoin").hidden = true;

    if (s.state === "admitted") {
      progress(100);
      say(t.msg_admitted);
      announce(t.msg_admitted);
      // A browser that drops the entry cookie would come straight back here.
      if (counter("wr-admitted", 1) > 3) { counter("wr-admitted", 0); say(t.msg_no_cookie); return; }
      later(function () { location.replace(cfg.target); }, 300);
      return;
    }
    counter("wr-admitted", 0);
    if (s.state === "waiting") {
      if (typeof s.position === "number") {
        if (firstPos === null || s.position > firstPos) { firstPos = s.position; }
        progress(100 * (firstPos - s.position + 1) / (firstPos + 1));
        $("wr-pos").textContent = num.format(s.position);
        if (s.position !== lastPos) { announce(fill(t.announce_position, { n: num.format(s.position) })); }
        lastPos = s.position;
      } else {
        $("wr-pos").textContent = prequeue ? t.position_draw : "–";
      }
      if (room.state === "paused") {
        say(t.msg_paused);
      } else if (prequeue) {
        say(fill(t.msg_prequeue, { time: new Date(opensAt).toLocaleString(cfg.lang) }));
      } else if (s.position === null) {
        say(t.msg_lottery);
      } else {
        say(t.msg_waiting);
      }
      // After a held answer, poll again at once (the floor still counts,
      // from when the held poll was sent); otherwise as the server says.
      var next = heldSince !== null ? Math.max(0, MIN_POLL_MS - (Date.now() - heldSince))
        : Math.max(MIN_POLL_MS, jitter(+s.poll_after_ms || 5000, 0.2));
      later(function () { step("status"); }, next);
      return;
    }
    $("wr-pos").textContent = "–";
    if (s.state === "expired") {
      say(t.msg_expired);
      $("wr-rejoin").hidden = false;
    } else if (s.state === "sold_out") {
      say(t.msg_sold_out);
    } else {
      say(t.msg_closed);
    }
    announce($("wr-msg").textContent);
  }

  $("wr-rejoin").addEventListener("click", function () {
    $("wr-rejoin").hidden = true;
    retriedJoin = false;
    firstPos = null;
    say(t.msg_connecting);
    step("join");
  });
  step("join");
})();
