// The waiting page's loop: join on load, poll status as the server says,
// back off with jitter on errors, go to the wanted page once admitted.
// Settings and strings come from the JSON block the page is rendered with
// (wr-config), by the edge or the origin:
// {room, target, lang, failOpen, api: {join, status}, turnstile?: {siteKey,
// script}, t: {...strings}}. The status's outlook (whether seats will be
// left at this visitor's turn) is said in words; when the seats will
// probably be gone first, the page offers to leave the line (POST leave,
// next to status). A join answered 428 challenge_required is
// solved (proof of work in a worker, or Cloudflare Turnstile) and sent again
// with the solution in the Waiting-Room-Challenge header.
"use strict";
(function () {
  var cfg = JSON.parse(document.getElementById("wr-config").textContent);
  var t = cfg.t;
  var $ = function (id) { return document.getElementById(id); };
  var num = new Intl.NumberFormat(cfg.lang);

  var MIN_POLL_MS = 1000;    // never faster than this, whatever a response says
  var MAX_BACKOFF_MS = 30000; // well under a room's abandon time
  var DOWN_RETRY_MAX_MS = 6000; // tries of a fail-open page while the queue is down
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
  var solution = null;       // sent with the next join only
  var freshSeeds = 0;        // joins sent again after challenge_failed
  var MAX_FRESH_SEEDS = 3;
  var stopSolver = null;
  var gone;                  // left the line: late answers are ignored

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
  var hhmm = new Intl.DateTimeFormat(cfg.lang, { hour: "numeric", minute: "2-digit" });
  function eta(seconds) {
    if (seconds === null || seconds === undefined) { return "–"; }
    if (seconds < 60) { return t.eta_under_minute; }
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) { return fill(t.eta_minutes, { n: num.format(minutes) }); }
    return fill(t.eta_hours, { h: num.format(Math.floor(minutes / 60)), m: num.format(minutes % 60) });
  }
  // The wait, and under it the clock time it ends: what a visitor plans by.
  // No number yet while in line (nothing measured at an opening): say so;
  // where the seats may run out first, the turn waits on holds ending.
  function showEta(seconds, waiting, outlook) {
    var dd = $("wr-eta");
    var none = outlook === "uncertain" || outlook === "unlikely" ? t.eta_seats : t.eta_estimating;
    dd.textContent = waiting && seconds === null ? none : eta(seconds);
    if (seconds >= 60) {
      var at = document.createElement("small");
      at.textContent = fill(t.eta_at, { time: hhmm.format(new Date(Date.now() + seconds * 1000)) });
      dd.appendChild(at);
    }
  }
  // The last answer's time and the line's length, beside a live dot.
  function updated(s) {
    var box = $("wr-updated");
    box.hidden = false;
    box.className = "updated";
    $("wr-updated-text").textContent = fill(t.msg_updated, {
      n: num.format(typeof s.waiting === "number" ? s.waiting : 0),
      time: new Date().toLocaleTimeString(cfg.lang)
    });
  }
  // The place's reference for support: its ticket's sequence number (the
  // ticket's payload: version, kind, kid length, kid, room length, room,
  // visitor id (16 bytes), seq (8, big-endian)), in base 36.
  function reference(ticket) {
    try {
      var b = atob(ticket.split(".")[0].replace(/-/g, "+").replace(/_/g, "/"));
      var i = 3 + b.charCodeAt(2);
      i += 1 + b.charCodeAt(i) + 16;
      var seq = 0;
      for (var k = 0; k < 8; k++) { seq = seq * 256 + b.charCodeAt(i + k); }
      var ref = seq.toString(36).toUpperCase();
      $("wr-ref").textContent = fill(t.msg_reference, { ref: ref.replace(/(.{4})(?=.)/g, "$1-") });
      $("wr-ref").hidden = false;
    } catch (e) { /* no reference shown */ }
  }

  function request(method, url, challenge) {
    var headers = { Accept: "application/json" };
    if (method === "GET") { headers.Prefer = "wait=" + HOLD_S; }
    if (challenge) { headers["Waiting-Room-Challenge"] = challenge; }
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
  // --- proof-of-work solver (tests/origin/pow-bench.mjs runs this part alone) ---
  // The search, self-contained: its source is also the worker's. Nonces are
  // decimal counters; a nonce solves when SHA-256("<seed>.<nonce>") starts
  // with `bits` zero bits. The plain SHA-256 below hashes about four times
  // as fast as WebCrypto in Chromium (one digest per call, even with 512
  // in flight; docs/challenge.md), so WebCrypto is used only when asked
  // (mode "subtle", for the benchmark) and present.
  function powKit(scope, mode) {
    var subtle = mode === "subtle" && scope.crypto && scope.crypto.subtle;
    var enc = new TextEncoder();
    var BATCH = subtle ? 512 : 4096;
    var K = [];
    var w = new Int32Array(64);
    for (var p = 2; K.length < 64; p++) {
      for (var d = 2; d * d <= p && p % d; d++) { /* trial division */ }
      if (d * d > p) { K.push((Math.cbrt(p) % 1) * 4294967296 | 0); }
    }
    var H = new Int32Array(8), buf = new Uint8Array(0);
    function rotr(x, n) { return x >>> n | x << (32 - n); }
    // SHA-256 (FIPS 180-4) of buf[0..n) into H; buf has room for the padding.
    function hash(n) {
      var end = (n + 72) & ~63, i;
      buf[n] = 0x80;
      for (i = n + 1; i < end - 4; i++) { buf[i] = 0; }
      buf[end - 4] = n >>> 21; buf[end - 3] = n >>> 13; buf[end - 2] = n >>> 5; buf[end - 1] = n << 3;
      H[0] = 0x6a09e667; H[1] = 0xbb67ae85; H[2] = 0x3c6ef372; H[3] = 0xa54ff53a;
      H[4] = 0x510e527f; H[5] = 0x9b05688c; H[6] = 0x1f83d9ab; H[7] = 0x5be0cd19;
      for (var o = 0; o < end; o += 64) {
        for (i = 0; i < 64; i++) {
          if (i < 16) { w[i] = buf[o + 4 * i] << 24 | buf[o + 4 * i + 1] << 16 | buf[o + 4 * i + 2] << 8 | buf[o + 4 * i + 3]; continue; }
          var x = w[i - 15], y = w[i - 2];
          w[i] = w[i - 16] + (rotr(x, 7) ^ rotr(x, 18) ^ x >>> 3) + w[i - 7] + (rotr(y, 17) ^ rotr(y, 19) ^ y >>> 10) | 0;
        }
        var a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
        for (i = 0; i < 64; i++) {
          var t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + (e & f ^ ~e & g) + K[i] + w[i] | 0;
          var t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + (a & b ^ a & c ^ b & c) | 0;
          h = g; g = f; f = e; e = d + t1 | 0; d = c; c = b; b = a; a = t1 + t2 | 0;
        }
        H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
      }
    }
    // Room for `n` message bytes and their padding.
    function room(n) { if (buf.length < n + 72) { buf = new Uint8Array(n + 136); } }
    function zeros(dg, bits) {
      var i = 0;
      for (; bits >= 8; bits -= 8, i++) { if (dg[i] !== 0) { return false; } }
      return bits === 0 || dg[i] >> (8 - bits) === 0;
    }
    // The index in [from, from + count) of the first nonce that solves, or -1.
    function batch(prefix, bits, from, count) {
      var i;
      if (!subtle) {
        var head = enc.encode(prefix), mask = bits === 32 ? -1 : ~(-1 >>> bits);
        room(head.length + 32);
        buf.set(head);
        for (i = 0; i < count; i++) {
          var digits = String(from + i), n = head.length;
          for (var k = 0; k < digits.length; k++) { buf[n++] = digits.charCodeAt(k); }
          hash(n);
          if ((H[0] & mask) === 0) { return Promise.resolve(i); }
        }
        return Promise.resolve(-1);
      }
      var jobs = [];
      for (i = 0; i < count; i++) { jobs.push(subtle.digest("SHA-256", enc.encode(prefix + (from + i)))); }
      return Promise.all(jobs).then(function (dgs) {
        for (var j = 0; j < dgs.length; j++) { if (zeros(new Uint8Array(dgs[j]), bits)) { return j; } }
        return -1;
      });
    }
    // Searches until solved: progress(tries) after each batch, done(nonce,
    // tries) at the end; `pause(next)` runs the next batch (the main thread
    // yields there). Returns a function that stops the search.
    function search(seed, bits, progress, done, pause) {
      var prefix = seed + ".", from = 0, stopped = false;
      var round = function () {
        if (stopped) { return; }
        batch(prefix, bits, from, BATCH).then(function (at) {
          if (stopped) { return; }
          if (at >= 0) { done(String(from + at), from + at + 1); return; }
          from += BATCH;
          progress(from);
          pause(round);
        });
      };
      round();
      return function () { stopped = true; };
    }
    return { search: search };
  }

  // Solves in a Web Worker made from powKit's own source (the page's CSP
  // allows blob: workers); where no worker can be made, on this thread in
  // slices. Returns a function that stops the search.
  function solve(seed, bits, progress, done, mode) {
    var src = "var kit=(" + powKit + ")(self," + JSON.stringify(mode || "") + ");onmessage=function(e){" +
      "kit.search(e.data.seed,e.data.bits,function(n){postMessage({tries:n})}," +
      "function(nonce,n){postMessage({nonce:nonce,tries:n})},function(f){f()})}";
    var worker = null, url = null, stop = null, over = false;
    var inline = function () {
      if (over || stop) { return; }
      if (worker) { worker.terminate(); worker = null; }
      stop = powKit(window, mode).search(seed, bits, progress, finish,
        function (next) { setTimeout(next, 0); });
    };
    var finish = function (nonce, tries) {
      if (over) { return; }
      over = true;
      if (worker) { worker.terminate(); }
      if (url) { URL.revokeObjectURL(url); }
      done(nonce, tries);
    };
    try {
      url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
      worker = new Worker(url);
      worker.onmessage = function (e) {
        if (e.data.nonce !== undefined) { finish(e.data.nonce, e.data.tries); } else { progress(e.data.tries); }
      };
      worker.onerror = inline;
      worker.postMessage({ seed: seed, bits: bits });
    } catch (e) {
      inline();
    }
    return function () {
      over = true;
      if (worker) { worker.terminate(); }
      if (stop) { stop(); }
    };
  }
  // --- end of the proof-of-work solver ---

  // A join answered 428 is solved and sent again with the solution; one
  // answered 403 challenge_failed (the seed expired meanwhile, say) is sent
  // again bare for a fresh seed, a few times at most. A solution is kept
  // for retries until the join is answered 200, 403 or 428.
  function step(kind) {
    var sent = Date.now();
    var call = kind === "join" ? request("POST", cfg.api.join, solution) : request("GET", cfg.api.status);
    call.then(function (r) {
      if (gone) { return; }
      var code = r.body && r.body.error ? r.body.error.code : null;
      if (kind === "join" && (r.status === 200 || r.status === 403 || r.status === 428)) { solution = null; }
      if (r.status === 200 && r.body && typeof r.body.state === "string") {
        errors = 0;
        counter("wr-down", 0);
        if (typeof r.body.ticket === "string") { reference(r.body.ticket); }
        updated(r.body);
        show(r.body, r.held ? sent : null);
      } else if (kind === "join" && r.status === 428 && r.body && r.body.challenge) {
        errors = 0;
        challenge(r.body.challenge);
      } else if (kind === "join" && r.status === 403 && code === "challenge_failed") {
        freshSeeds += 1;
        if (freshSeeds > MAX_FRESH_SEEDS) { giveUp(); return; }
        later(function () { step("join"); }, jitter(500, 0.5));
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
    $("wr-updated").className = "updated stale";
    var down = !r || (r.status >= 502 && r.status <= 504);
    if (down && cfg.failOpen) {
      // The edge lets visitors through while the queue is down: try the
      // wanted page, backing off across reloads so nobody loops fast, but
      // at most 6 s apart, so even a lone visitor's tries give the edge its
      // five failures within its 30-s window (edge/src/health.rs).
      var n = counter("wr-down", 1);
      later(function () { location.replace(cfg.target); },
        jitter(Math.min(DOWN_RETRY_MAX_MS, 2000 * Math.pow(2, Math.min(n, 5))), 0.25));
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
      var days = Math.floor(left / 86400);
      $("wr-clock").textContent = (days ? fill(t.countdown_days, { n: num.format(days) }) + " " : "") +
        pad(Math.floor(left / 3600) % 24) + ":" + pad(Math.floor(left / 60) % 60) + ":" + pad(left % 60);
      if (left === 0) { clearInterval(clock); }
    };
    box.hidden = false;
    tick();
    clock = setInterval(tick, 1000);
  }

  // heldSince: when a poll the origin held was sent (null: not held).
  // State "left" is the page's own, once it left the line.
  function show(s, heldSince) {
    var room = s.room || {};
    var opensAt = room.opens_at ? Date.parse(room.opens_at) : NaN;
    var prequeue = s.state === "waiting" && s.position === null && opensAt > Date.now() + skew;
    countdown(prequeue ? opensAt : null);
    // The bar and "keep this page open" only make sense while in line.
    var inLine = s.state === "waiting" || s.state === "admitted";
    $("wr-bar").hidden = !inLine;
    $("wr-note").hidden = !inLine;
    $("wr-waiting").textContent = "–";
    showEta(s.eta_seconds, s.state === "waiting" && typeof s.position === "number" && s.room && s.room.state === "open", s.outlook);
    $("wr-rejoin").hidden = true;
    // The outlook in words: t.likely, t.uncertain, t.unlikely.
    var words = s.state === "waiting" && t[s.outlook] || "";
    $("wr-outlook").textContent = words;
    $("wr-outlook").hidden = !words;
    // Leaving is always possible while in line; urged when seats will
    // probably be gone first.
    $("wr-leave").hidden = s.state !== "waiting";
    $("wr-leave").className = s.outlook === "unlikely" ? "" : "secondary";

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
        $("wr-waiting").textContent = num.format(s.position - 1);
        if (s.position !== lastPos) { announce(fill(t.announce_position, { n: num.format(s.position) })); }
        lastPos = s.position;
      } else {
        $("wr-pos").textContent = prequeue ? t.position_draw : "–";
      }
      if (room.state === "paused") {
        say(t.msg_paused);
      } else if (prequeue) {
        say(fill(t.msg_prequeue, { time: new Date(opensAt).toLocaleString(cfg.lang, {
          year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short"
        }) }));
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
    if (s.state === "expired" || s.state === "left") {
      say(s.state === "left" ? t.msg_left : t.msg_expired);
      $("wr-rejoin").hidden = false;
    } else if (s.state === "sold_out") {
      say(t.msg_sold_out);
    } else {
      say(t.msg_closed);
    }
    announce($("wr-msg").textContent);
  }

  function giveUp() {
    $("wr-bar").hidden = true;
    say(t.msg_challenge_failed);
    announce(t.msg_challenge_failed);
    $("wr-rejoin").hidden = false;
  }

  // The room asks for a check before it gives a place.
  function challenge(c) {
    if (c.kind === "pow" && typeof c.seed === "string" && c.bits > 0 && c.bits <= 32) {
      pow(c.seed, c.bits);
    } else if (c.kind === "turnstile") {
      turnstile(c.site_key);
    } else {
      giveUp();
    }
  }

  // Shows the check's progress: a search for 2^bits tries on average is
  // done by `tries` with probability 1 - e^(-tries / 2^bits).
  function pow(seed, bits) {
    var expected = Math.pow(2, bits), began = Date.now();
    $("wr-bar").hidden = false;
    $("wr-pos").textContent = "–";
    say(t.msg_checking);
    announce(t.msg_checking);
    progress(0);
    if (stopSolver) { stopSolver(); }
    stopSolver = solve(seed, bits, function (tries) {
      progress(100 * (1 - Math.exp(-tries / expected)));
    }, function (nonce) {
      stopSolver = null;
      document.documentElement.setAttribute("data-wr-solved-ms", String(Date.now() - began));
      progress(100);
      say(t.msg_connecting);
      solution = seed + "." + nonce;
      step("join");
    });
  }

  // Turnstile: the widget where the page may load it (rendered with a site
  // key); elsewhere the waiting page that is, once per visit.
  var widget = null;
  function turnstile(siteKey) {
    var ts = cfg.turnstile;
    if (!ts) {
      if (counter("wr-ts-moved", 1) > 1) { counter("wr-ts-moved", 0); giveUp(); return; }
      location.replace("/waiting-room/" + encodeURIComponent(cfg.room) + "?to=" +
        encodeURIComponent(cfg.target) + "&lang=" + encodeURIComponent(cfg.lang));
      return;
    }
    counter("wr-ts-moved", 0);
    $("wr-bar").hidden = true;
    say(t.msg_turnstile);
    announce(t.msg_turnstile);
    var box = $("wr-turnstile");
    box.hidden = false;
    var render = function () {
      var api = window.turnstile;
      if (widget !== null) { api.reset(widget); return; }
      widget = api.render(box, {
        sitekey: siteKey || ts.siteKey,
        language: cfg.lang,
        callback: function (token) {
          box.hidden = true;
          say(t.msg_connecting);
          solution = token;
          step("join");
        },
        "error-callback": function () { say(t.msg_challenge_failed); },
        "expired-callback": function () { api.reset(widget); }
      });
    };
    if (window.turnstile) { render(); return; }
    var tag = document.createElement("script");
    tag.src = ts.script;
    tag.async = true;
    tag.onload = render;
    tag.onerror = function () { failed(null, "join"); };
    document.head.appendChild(tag);
  }

  // The room's name, colour and logo (its about route, beside status).
  function applyLook() {
    fetch(cfg.api.status.replace(/status$/, "about")).then(function (r) {
      return r.ok ? r.json() : {};
    }).then(function (k) {
      if (k.name) { $("wr-room").textContent = k.name; document.title = k.name + " – " + document.title; }
      if (k.color) { document.documentElement.style.setProperty("--accent", k.color); }
      if (k.session_seconds) {
        $("wr-visit").textContent = fill(t.msg_visit, { n: num.format(Math.max(1, Math.round(k.session_seconds / 60))) });
        $("wr-visit").hidden = false;
      }
      if (k.max_line) {
        $("wr-cap").textContent = fill(t.msg_cap, { n: num.format(k.max_line) });
        $("wr-cap").hidden = false;
      }
      if (k.logo) {
        var img = document.createElement("img");
        img.className = "logo"; img.alt = ""; img.src = k.logo;
        $("wr-title").before(img);
      }
    }).catch(function () {});
  }

  // Leaving gives the place to those behind; a failed leave polls on.
  $("wr-leave").addEventListener("click", function () {
    gone = true;
    clearTimeout(timer);
    fetch(cfg.api.status.replace(/status$/, "leave"), { method: "POST" }).then(function (res) {
      if (!res.ok) { throw res; }
      show({ state: "left" });
    }).catch(function () { gone = false; failed(null, "status"); });
  });

  $("wr-rejoin").addEventListener("click", function () {
    gone = false;
    $("wr-rejoin").hidden = true;
    retriedJoin = false;
    freshSeeds = 0;
    firstPos = null;
    say(t.msg_connecting);
    step("join");
  });
  applyLook();
  step("join");
})();
