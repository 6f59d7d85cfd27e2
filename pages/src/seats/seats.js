// The seat page's script: pick a performance, keep its seat map fresh (its
// layout once, then the seats' state by conditional GET with the last
// ETag), select seats, hold them, count the hold down, confirm with an
// idempotency key, show the booking.
// Settings and strings come from the JSON block the page renders (bk-config):
// {room, lang, currency, titled, maxSeats, api, waiting, t: {...strings}}.
// Every request is same-origin: the entry-token cookie goes along by itself.
"use strict";
(function () {
  var cfg = JSON.parse(document.getElementById("bk-config").textContent);
  var t = cfg.t;
  var $ = function (id) { return document.getElementById(id); };

  var REFRESH_MS = 3000;       // the seat map's refresh while choosing
                               // (the origin allows a session 120 loads a
                               // minute; unchanged maps, 304, do not count)
  var MAX_BACKOFF_MS = 30000;  // after errors, never slower than this
  var HOLD_KEY = "bk-hold:" + cfg.room + ":"; // + performance: a hold survives a reload

  var num = new Intl.NumberFormat(cfg.lang);
  var money = moneyFormat(cfg.lang, cfg.currency);
  // Prices are integers in the currency's minor unit (KRW has none, USD cents).
  var minor = Math.pow(10, money.digits);
  var when = new Intl.DateTimeFormat(cfg.lang, { dateStyle: "medium", timeStyle: "short" });
  var clockTime = new Intl.DateTimeFormat(cfg.lang, { hour: "numeric", minute: "2-digit", second: "2-digit" });

  var perfs = [];        // the performances, as listed
  var perf = null;       // the chosen one
  var maxSeats = cfg.maxSeats;
  var seats = {};        // id -> seat as last listed
  var buttons = {};      // id -> its button
  var layout = "";       // the ids of the drawn map, to know when to redraw
  var selected = [];     // ids, in the order chosen
  var hold = null;       // the live hold as the API gave it
  var attempt = null;    // the confirm in flight or to retry: {key, hold, token}
  var etag = null;       // the state's, for If-None-Match
  var plan = null;       // the layout: {layout, sections: [{name, rows, seats_per_row, price}]}
  var busy = false;      // an action is in flight
  var blockedUntil = 0;  // 429: no action before this (ms)
  var ended = false;     // the session is over: nothing more to do here
  var errors = 0;        // failed refreshes in a row
  var skew = 0;          // server clock minus ours, from the Date header
  var refreshTimer = null;
  var countdownTimer = null;

  // Money as the visitor's language writes it: won in Korean as "110,000원";
  // a language's own currency by its symbol; any other by its code
  // ("KRW 110,000" in English), since a bare ₩ or $ misleads a reader
  // who does not expect that currency.
  function moneyFormat(lang, currency) {
    var HOME = { en: "USD", ko: "KRW" };
    var base = lang.split("-")[0];
    var intl = new Intl.NumberFormat(lang, {
      style: "currency", currency: currency, currencyDisplay: HOME[base] === currency ? "symbol" : "code"
    });
    var digits = intl.resolvedOptions().maximumFractionDigits || 0;
    if (base === "ko" && currency === "KRW") {
      var whole = new Intl.NumberFormat(lang, { maximumFractionDigits: 0 });
      return { digits: digits, format: function (x) { return whole.format(x) + "원"; } };
    }
    return { digits: digits, format: function (x) { return intl.format(x); } };
  }
  function fill(s, vars) {
    return s.replace(/\{(\w+)\}/g, function (_, k) { return vars[k] === undefined ? "" : vars[k]; });
  }
  function price(n) { return typeof n === "number" ? money.format(n / minor) : "–"; }
  function now() { return Date.now() + skew; }
  function say(text, kind, code) {
    var m = $("message");
    m.textContent = text;
    m.setAttribute("data-kind", kind || "info");
    m.setAttribute("data-code", code || "");
  }
  function announce(text) { $("live").textContent = text; }
  // The page's state, and (unless the operator titled the page) its
  // heading and the tab's title, so each state reads as itself.
  function phase(p) {
    $("app").setAttribute("data-phase", p);
    if (cfg.titled) { return; }
    var title = p === "held" ? t.title_held : p === "booked" ? t.title_booked : t.default_title;
    $("bk-title").textContent = title;
    document.title = title;
  }
  // A payment's trouble, beside the pay button where the visitor looks:
  // shown, announced (role=alert) and focused. Also the page's message.
  function payError(text, why) {
    say(text, "error", why);
    var box = $("pay-error");
    box.textContent = text;
    box.setAttribute("data-code", why);
    box.hidden = false;
    box.focus();
  }
  function clearPayError() {
    $("pay-error").hidden = true;
    $("pay-error").textContent = "";
  }
  function seatList(ids) { return ids.join(", "); }
  function store(key, value) {
    // sessionStorage can throw (privacy modes): a lost hold record only
    // means a reload does not show the hold.
    try {
      if (value === null) { sessionStorage.removeItem(key); } else { sessionStorage.setItem(key, JSON.stringify(value)); }
    } catch (e) { /* ignored on purpose */ }
  }
  function stored(key) {
    try { return JSON.parse(sessionStorage.getItem(key) || "null"); } catch (e) { return null; }
  }
  function uuid() {
    if (window.crypto && typeof crypto.randomUUID === "function") { return crypto.randomUUID(); }
    // randomUUID needs a secure context; getRandomValues does not.
    var b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 15) | 64;
    b[8] = (b[8] & 63) | 128;
    var h = Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join("");
    return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
  }
  function retryAfter(r) {
    var s = parseInt(r && r.retryAfter, 10);
    return s > 0 ? Math.min(s, 300) : 2;
  }

  // One API call; resolves to {status, body, etag, retryAfter}, rejects
  // only when no answer came (network error). `cache` is fetch's mode
  // (default "no-store": answers change with every hold).
  function api(method, path, body, headers, cache) {
    var h = { Accept: "application/json" };
    var k;
    for (k in headers || {}) { if (Object.prototype.hasOwnProperty.call(headers, k)) { h[k] = headers[k]; } }
    if (body !== undefined) { h["Content-Type"] = "application/json"; }
    return fetch(cfg.api + path, {
      method: method,
      credentials: "same-origin",
      cache: cache || "no-store",
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (res) {
      // The Date header has whole seconds: the server's clock is half a
      // second past it on average. Only a clock that is clearly off is
      // corrected, so a countdown does not jitter (or start above the
      // hold's length) by the header's rounding, or by an answer that sat
      // a second or two in a busy browser, alone.
      var date = Date.parse(res.headers.get("Date") || "");
      if (!isNaN(date)) {
        var off = date + 500 - Date.now();
        skew = Math.abs(off) > 5000 ? off : 0;
      }
      return res.text().then(function (text) {
        var parsed = null;
        try { parsed = text ? JSON.parse(text) : null; } catch (e) { parsed = null; }
        return { status: res.status, body: parsed, etag: res.headers.get("ETag"), retryAfter: res.headers.get("Retry-After") };
      });
    });
  }
  function code(r) {
    return (r && r.body && r.body.error && r.body.error.code) || (r ? "http_" + r.status : "network");
  }
  function serverMessage(r) {
    return (r && r.body && r.body.error && r.body.error.message) || "";
  }

  // The answers every call treats alike. Returns true when handled.
  function common(r) {
    if (!r) { say(t.msg_network, "error", "network"); return true; }
    if (r.status === 401) { endSession(code(r)); return true; }
    if (r.status === 429) {
      var s = retryAfter(r);
      blockedUntil = Date.now() + s * 1000;
      say(fill(t.msg_rate_limited, { n: num.format(s) }), "error", code(r));
      setTimeout(controls, s * 1000 + 50);
      return true;
    }
    if (r.status === 503 || r.status === 502 || r.status === 504) { say(t.msg_unavailable, "error", code(r)); return true; }
    return false;
  }
  function other(r) {
    if (r.status === 422) {
      say(fill(t.msg_invalid, { reason: serverMessage(r) || code(r) }), "error", code(r));
    } else {
      say(fill(t.msg_error, { code: code(r) }), "error", code(r));
    }
  }

  function endSession(why) {
    ended = true;
    clearTimeout(refreshTimer);
    clearInterval(countdownTimer);
    hold = null;
    say(t.msg_session_ended, "error", why);
    $("back").hidden = false;
    phase("ended");
    controls();
  }

  // Enables exactly what can be done now.
  function controls() {
    var blocked = Date.now() < blockedUntil;
    var choosing = !!perf && !hold && !ended && $("booking").hidden;
    $("hold-button").disabled = busy || blocked || !choosing || selected.length === 0;
    $("clear-button").disabled = busy || !choosing || selected.length === 0;
    $("confirm").disabled = busy || blocked || !hold || ended;
    $("release").disabled = busy || !hold || ended;
    $("payment-token").disabled = !hold || ended;
    // Once seats are held the hold's panel lists them: no empty choice.
    $("selection").hidden = !!hold;
    Array.prototype.forEach.call($("performance-list").children, function (b) {
      b.disabled = busy || !!hold || ended;
    });
    var id;
    for (id in buttons) {
      if (Object.prototype.hasOwnProperty.call(buttons, id)) { drawSeat(id); }
    }
  }

  // ---- performances -------------------------------------------------------

  function loadPerformances() {
    phase("loading");
    api("GET", "/performances").then(function (r) {
      if (r.status === 200 && r.body && Array.isArray(r.body.performances)) {
        errors = 0;
        showPerformances(r.body.performances);
      } else if (r.status === 429 || r.status >= 500) {
        common(r);
        laterRetry(loadPerformances, r);
      } else if (!common(r)) {
        other(r);
      }
    }, function () { common(null); laterRetry(loadPerformances, null); });
  }

  function laterRetry(fn, r) {
    errors += 1;
    var delay = Math.max(1000, Math.random() * Math.min(MAX_BACKOFF_MS, 1000 * Math.pow(2, errors)));
    if (r && r.retryAfter) { delay = Math.max(delay, retryAfter(r) * 1000); }
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(fn, delay);
  }

  function showPerformances(list) {
    perfs = list;
    var box = $("performance-list");
    box.textContent = "";
    if (list.length === 0) {
      $("performances").hidden = true;
      say(t.msg_no_performances, "info", "no_performances");
      phase("empty");
      return;
    }
    list.forEach(function (p) {
      var b = document.createElement("button");
      b.type = "button";
      b.setAttribute("data-performance", p.id);
      b.setAttribute("aria-pressed", "false");
      var name = document.createElement("span");
      name.textContent = p.title || p.id;
      var info = document.createElement("small");
      var starts = Date.parse(p.starts_at || "");
      info.textContent = (isNaN(starts) ? "" : when.format(starts) + " · ") +
        fill(t.seats_left, { n: num.format(p.available || 0) });
      b.appendChild(name);
      b.appendChild(info);
      b.addEventListener("click", function () { choose(p); });
      box.appendChild(b);
    });
    // One performance needs no choosing.
    $("performances").hidden = list.length === 1;
    if (list.length === 1) {
      choose(list[0]);
    } else {
      phase("performances");
      say(t.msg_choose_performance);
    }
  }

  function choose(p) {
    if (hold || ended) { return; }
    perf = p;
    maxSeats = p.max_seats_per_hold > 0 ? p.max_seats_per_hold : cfg.maxSeats;
    Array.prototype.forEach.call($("performance-list").children, function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-performance") === p.id));
    });
    $("performance-title").textContent = p.title || p.id;
    $("seating").hidden = false;
    selected = [];
    seats = {};
    buttons = {};
    layout = "";
    etag = null;
    plan = null;
    $("seatmap").textContent = "";
    var saved = stored(HOLD_KEY + p.id);
    if (saved && Date.parse(saved.expires_at) > now()) {
      setHold(saved, true);
    } else {
      store(HOLD_KEY + p.id, null);
      phase("seats");
      say(fill(t.msg_choose_seats, { max: num.format(maxSeats) }));
    }
    updateSelection();
    refresh();
  }

  // ---- the seat map -------------------------------------------------------

  // The map comes in two parts: the layout (sections, rows, prices), which
  // the browser may keep, and the state, one letter a seat in the layout's
  // order, which is all that changes. A state naming another layout than
  // the one in hand loads the layout again, past the browser's copy.
  function loadPlan(fresh) {
    var path = "/performances/" + encodeURIComponent(perf.id) + "/layout";
    return api("GET", path, undefined, {}, fresh ? "no-cache" : "default").then(function (r) {
      if (r.status === 200 && r.body && Array.isArray(r.body.sections)) {
        plan = r.body;
        return null;
      }
      return r;
    });
  }

  var WORDS = { a: "available", h: "held", b: "booked" };

  // The seats as the listing has them, from the layout and the letters.
  function seatsOf(letters) {
    var list = [];
    plan.sections.forEach(function (s) {
      for (var row = 1; row <= s.rows; row++) {
        for (var number = 1; number <= s.seats_per_row; number++) {
          list.push({
            id: s.name + "-" + row + "-" + number, section: s.name, row: row, number: number,
            price: s.price, state: WORDS[letters.charAt(list.length)] || "available"
          });
        }
      }
    });
    return list;
  }

  function refresh() {
    clearTimeout(refreshTimer);
    if (!perf || ended || !$("booking").hidden) { return; }
    var chosen = perf;
    var headers = etag ? { "If-None-Match": etag } : {};
    var ready = plan ? Promise.resolve(null) : loadPlan(false);
    ready.then(function (failed) {
      if (failed) { return failed; }
      return api("GET", "/performances/" + encodeURIComponent(chosen.id) + "/state", undefined, headers).then(function (r) {
        if (r.status !== 200 || !r.body || typeof r.body.states !== "string" || r.body.layout === plan.layout) { return r; }
        // The layout changed: load it again, then take this state.
        return loadPlan(true).then(function (failedAgain) { return failedAgain || r; });
      });
    }).then(function (r) {
      if (perf !== chosen) { return; }
      if (r.status === 304) {
        errors = 0;
      } else if (r.status === 200 && r.body && typeof r.body.states === "string" && plan && r.body.layout === plan.layout) {
        errors = 0;
        etag = r.etag;
        applySeats(seatsOf(r.body.states));
      } else if (r.status === 200) {
        // Layout and state disagree (changed in between): ask again soon.
        etag = null;
        plan = null;
      } else if (r.status === 404) {
        // The performance is gone (replaced or removed): list them again.
        perf = null;
        $("seating").hidden = true;
        loadPerformances();
        return;
      } else {
        if (r.status === 401) { common(r); return; }
        if (r.status === 429 || r.status >= 500) { common(r); laterRetry(refresh, r); return; }
        other(r);
      }
      refreshTimer = setTimeout(refresh, REFRESH_MS);
    }, function () {
      common(null);
      laterRetry(refresh, null);
    });
  }

  function seatOrder(a, b) {
    return (a.row - b.row) || (a.number - b.number) || (a.id < b.id ? -1 : 1);
  }

  function applySeats(list) {
    var ids = list.map(function (s) { return s.id; }).join(",");
    var changed = 0;
    var taken = [];
    var next = {};
    list.forEach(function (s) {
      var old = seats[s.id];
      if (old && old.state !== s.state) { changed += 1; }
      next[s.id] = s;
    });
    seats = next;
    if (ids !== layout) { draw(list); layout = ids; }
    selected = selected.filter(function (id) {
      var ok = seats[id] && seats[id].state === "available";
      if (!ok) { taken.push(id); }
      return ok;
    });
    controls();
    updateSelection();
    if (taken.length) {
      say(fill(t.msg_seat_taken, { seats: seatList(taken) }), "error", "seat_unavailable");
    } else if (changed) {
      announce(fill(t.announce_updated, { n: num.format(changed) }));
    }
  }

  // Draws the map: sections in the order listed, rows and seats by number.
  // Redrawn only when the seats themselves change; states update in place.
  function draw(list) {
    var focused = document.activeElement && document.activeElement.getAttribute("data-seat");
    var map = $("seatmap");
    map.textContent = "";
    buttons = {};
    var sections = [];
    var bySection = {};
    list.forEach(function (s) {
      if (!bySection[s.section]) { bySection[s.section] = []; sections.push(s.section); }
      bySection[s.section].push(s);
    });
    sections.forEach(function (name) {
      var group = bySection[name].slice().sort(seatOrder);
      var block = document.createElement("section");
      block.className = "block";
      block.setAttribute("data-section", name);
      var h = document.createElement("h3");
      h.textContent = fill(t.section, { section: name }) + " ";
      var prices = group.map(function (s) { return s.price; });
      var low = Math.min.apply(null, prices);
      var high = Math.max.apply(null, prices);
      var sub = document.createElement("span");
      sub.className = "sub";
      sub.textContent = low === high ? price(low) : price(low) + " – " + price(high);
      h.appendChild(sub);
      block.appendChild(h);
      var rowBox = null;
      var rowSeats = null;
      var lastRow = null;
      group.forEach(function (s) {
        if (s.row !== lastRow) {
          lastRow = s.row;
          rowBox = document.createElement("div");
          rowBox.className = "row";
          rowBox.setAttribute("role", "group");
          rowBox.setAttribute("data-row", String(s.row));
          rowBox.setAttribute("aria-label", fill(t.section, { section: name }) + ", " + fill(t.row, { row: s.row }));
          var label = document.createElement("span");
          label.className = "row-label";
          label.setAttribute("aria-hidden", "true");
          label.textContent = String(s.row);
          rowSeats = document.createElement("div");
          rowSeats.className = "row-seats";
          rowBox.appendChild(label);
          rowBox.appendChild(rowSeats);
          block.appendChild(rowBox);
        }
        var b = document.createElement("button");
        b.type = "button";
        b.className = "seat";
        b.setAttribute("data-seat", s.id);
        b.textContent = String(s.number);
        b.addEventListener("click", function () { toggle(s.id); });
        rowSeats.appendChild(b);
        buttons[s.id] = b;
      });
      map.appendChild(block);
    });
    controls();
    if (focused && buttons[focused]) { buttons[focused].focus(); }
  }

  function mine(id) { return !!hold && hold.seats.indexOf(id) >= 0; }

  function drawSeat(id) {
    var s = seats[id];
    var b = buttons[id];
    if (!s || !b) { return; }
    var state = mine(id) ? "mine" : selected.indexOf(id) >= 0 ? "selected" : s.state;
    var words = { available: t.state_available, selected: t.state_selected, held: t.state_held, booked: t.state_booked, mine: t.state_mine };
    b.setAttribute("data-state", state);
    b.setAttribute("aria-pressed", String(state === "selected"));
    b.setAttribute("aria-label", fill(t.seat_label, {
      section: s.section, row: s.row, number: s.number, price: price(s.price), state: words[state] || s.state
    }));
    b.disabled = ended || !!hold || (state !== "available" && state !== "selected");
  }

  function toggle(id) {
    if (hold || ended || busy) { return; }
    var at = selected.indexOf(id);
    if (at >= 0) {
      selected.splice(at, 1);
      announce(fill(t.announce_deselected, { seat: id }));
    } else if (!seats[id] || seats[id].state !== "available") {
      return;
    } else if (selected.length >= maxSeats) {
      say(fill(t.msg_max_seats, { max: num.format(maxSeats) }), "error", "too_many_seats");
      return;
    } else {
      selected.push(id);
      announce(fill(t.announce_selected, { seat: id, n: num.format(selected.length), max: num.format(maxSeats) }));
    }
    drawSeat(id);
    updateSelection();
    controls();
  }

  function updateSelection() {
    var total = selected.reduce(function (sum, id) { return sum + (seats[id] ? seats[id].price : 0); }, 0);
    $("selected-seats").textContent = selected.length ? seatList(selected) : t.none_selected;
    $("selected-total").textContent = selected.length ? price(total) : "–";
  }

  // ---- hold, confirm, release ---------------------------------------------

  function act(run) {
    if (busy || ended) { return; }
    busy = true;
    controls();
    run().then(done, function () { common(null); done(); });
    function done() { busy = false; controls(); }
  }

  function holdSeats() {
    if (!perf || !selected.length) { return; }
    var wanted = selected.slice();
    say(t.msg_holding);
    act(function () {
      return api("POST", "/performances/" + encodeURIComponent(perf.id) + "/holds", { seats: wanted }).then(function (r) {
        if ((r.status === 201 || r.status === 200) && r.body && r.body.hold_id) {
          selected = [];
          setHold(r.body, false);
          refresh();
        } else if (code(r) === "seat_unavailable") {
          var gone = r.body && Array.isArray(r.body.seats) ? r.body.seats : [];
          gone.forEach(function (id) { if (seats[id]) { seats[id].state = "held"; } });
          selected = selected.filter(function (id) { return gone.indexOf(id) < 0; });
          updateSelection();
          say(fill(t.msg_seat_taken, { seats: seatList(gone) }), "error", "seat_unavailable");
          etag = null;
          refresh();
        } else if (code(r) === "hold_exists") {
          say(t.msg_hold_exists, "error", "hold_exists");
        } else if (code(r) === "account_limit") {
          say(t.msg_account_limit, "error", "account_limit");
        } else if (!common(r)) {
          other(r);
        }
      });
    });
  }

  function setHold(h, restored) {
    hold = h;
    store(HOLD_KEY + h.performance, h);
    $("hold").hidden = false;
    $("hold").setAttribute("data-hold-id", h.hold_id);
    $("hold-seats").textContent = seatList(h.seats);
    $("hold-total").textContent = price(h.total);
    phase("held");
    var until = Date.parse(h.expires_at);
    say(fill(t.msg_held, { time: isNaN(until) ? "" : clockTime.format(until) }), restored ? "info" : "ok", "held");
    clearInterval(countdownTimer);
    tick();
    countdownTimer = setInterval(tick, 1000);
    updateSelection();
    controls();
    if (!restored) { $("payment-token").focus(); }
  }

  function tick() {
    if (!hold) { return; }
    // Whole seconds left, never more time than there is.
    var left = Math.max(0, Math.floor((Date.parse(hold.expires_at) - now()) / 1000));
    var pad = function (v) { return (v < 10 ? "0" : "") + v; };
    $("countdown").textContent = pad(Math.floor(left / 60)) + ":" + pad(left % 60);
    if (left === 0) { holdEnded(); }
  }

  function clearHold() {
    if (hold) { store(HOLD_KEY + hold.performance, null); }
    hold = null;
    attempt = null;
    clearInterval(countdownTimer);
    clearPayError();
    $("hold").hidden = true;
    $("hold").removeAttribute("data-hold-id");
    phase(ended ? "ended" : "seats");
    etag = null;
  }

  function holdEnded() {
    clearHold();
    say(t.msg_hold_expired, "error", "hold_expired");
    controls();
    refresh();
  }

  function confirm() {
    if (!hold) { return; }
    var token = $("payment-token").value.trim() || "tok_visa";
    // One key per attempt; a retry after no answer (network, 5xx, 429)
    // is the same attempt and sends the same key, so it can never pay twice.
    if (!attempt || attempt.hold !== hold.hold_id || attempt.token !== token) {
      attempt = { key: uuid(), hold: hold.hold_id, token: token };
    }
    var sent = attempt;
    clearPayError();
    say(t.msg_confirming);
    act(function () {
      return api("POST", "/holds/" + encodeURIComponent(sent.hold) + "/confirm",
        { payment_token: sent.token }, { "Idempotency-Key": sent.key }).then(function (r) {
        if ((r.status === 201 || r.status === 200) && r.body && r.body.booking_id) {
          showBooking(r.body);
          return;
        }
        var unanswered = r.status === 429 || r.status >= 500;
        if (!unanswered) { attempt = null; }
        if (code(r) === "payment_declined") {
          payError(t.msg_declined, "payment_declined");
        } else if (code(r) === "hold_expired" || r.status === 404) {
          holdEnded();
        } else if (!common(r)) {
          other(r);
        }
      }, function () {
        payError(t.msg_network_retry, "network");
      });
    });
  }

  function release() {
    if (!hold) { return; }
    var id = hold.hold_id;
    act(function () {
      return api("DELETE", "/holds/" + encodeURIComponent(id)).then(function (r) {
        if (r.status === 204 || r.status === 200 || r.status === 404) {
          clearHold();
          say(t.msg_released, "info", "released");
          refresh();
        } else if (!common(r)) {
          other(r);
        }
      });
    });
  }

  // Copies the booking number; where the browser will not (no clipboard
  // outside a secure context, or refused), selects it for the visitor.
  function copyId() {
    var id = $("booking-id").textContent;
    var said = function (text) { $("copied").textContent = text; };
    var select = function () {
      var range = document.createRange();
      range.selectNodeContents($("booking-id"));
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      said(t.msg_copy_failed);
    };
    if (navigator.clipboard && typeof navigator.clipboard.writeText === "function") {
      navigator.clipboard.writeText(id).then(function () { said(t.msg_copied); }, select);
    } else {
      select();
    }
  }

  function showBooking(b) {
    clearHold();
    clearTimeout(refreshTimer);
    $("seating").hidden = true;
    $("performances").hidden = true;
    var box = $("booking");
    box.hidden = false;
    box.setAttribute("data-booking-id", b.booking_id);
    $("booking-id").textContent = b.booking_id;
    $("copied").textContent = "";
    $("booking-seats").textContent = seatList(b.seats || []);
    $("booking-total").textContent = price(b.total);
    $("booking-status").textContent = b.status === "confirmed" ? t.status_confirmed : String(b.status);
    var created = Date.parse(b.created_at || "");
    $("booking-created").textContent = isNaN(created) ? "–" : when.format(created);
    phase("booked");
    say(fill(t.msg_booked, { id: b.booking_id }), "ok", "booked");
    controls();
    $("booking-heading").setAttribute("tabindex", "-1");
    $("booking-heading").focus();
  }

  $("hold-button").addEventListener("click", holdSeats);
  $("clear-button").addEventListener("click", function () {
    selected = [];
    updateSelection();
    controls();
  });
  $("pay-form").addEventListener("submit", function (e) { e.preventDefault(); confirm(); });
  $("release").addEventListener("click", release);
  $("copy-id").addEventListener("click", copyId);
  loadPerformances();
})();
