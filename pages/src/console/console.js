// The operator's console: asks for the admin key once (kept in this tab's
// sessionStorage only: never in a URL or a cookie), then every few seconds
// reads every room (GET /admin/rooms) and each room's new history samples
// (GET /admin/rooms/{room}/history?since_ms=), draws the figures and the
// last 30 minutes as inline SVG, and sends the operator's changes to the
// admin API (pause, resume, close, PATCH settings), showing the API's own
// refusals next to the field they name. A 401 hides everything and asks for
// the key again. Nothing runs until the key is given, and nothing polls once
// the tab is closed: the origin does no work for a console nobody watches.
// Settings and strings come from the JSON block the page renders (co-config):
// {lang, api, t: {...strings}}.
"use strict";
(function () {
  var cfg = JSON.parse(document.getElementById("co-config").textContent);
  var t = cfg.t;
  var $ = function (id) { return document.getElementById(id); };
  var SVG = "http://www.w3.org/2000/svg";

  var TICK_MS = 3000;           // how often the figures are read
  var MAX_BACKOFF_MS = 30000;   // after errors, never slower than this
  var SPAN_MS = 30 * 60 * 1000; // what the charts show at most
  var MIN_SPAN_MS = 60 * 1000;  // and at least
  var KEY = "wr-admin-key";     // sessionStorage: this tab only
  var RATE_WINDOW_MS = 10000;   // the achieved rate's window (said in its label)
  var FIELDS = ["capacity", "admit_per_second", "session_seconds", "abandon_seconds", "identity",
    "challenge", "challenge_bits", "challenge_fail", "display_name", "color", "logo", "currency"];
  // Fields typed as text; an emptied one is sent as null (the default).
  var TEXTS = { display_name: true, color: true, logo: true, currency: true };
  function shown(v) { return v === null || v === undefined ? "" : String(v); }
  // Fields picked from a list (a select) rather than typed; sent as text.
  var CHOICES = {
    identity: ["off", "optional", "required"],
    challenge: ["off", "pow", "turnstile"],
    challenge_fail: ["closed", "open"]
  };

  var num = new Intl.NumberFormat(cfg.lang, { maximumFractionDigits: 1 });
  var clockTime = new Intl.DateTimeFormat(cfg.lang, { hour: "numeric", minute: "2-digit", second: "2-digit" });
  // An opening time, with the operator's own time zone named.
  var dateTime = new Intl.DateTimeFormat(cfg.lang, {
    year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short"
  });

  var key = null;       // the admin key, once given
  var rooms = {};       // id -> {el, parts, samples, since, dirty, room}
  var timer = null;
  var errors = 0;       // failed reads in a row
  var reading = false;

  function fill(s, vars) {
    return s.replace(/\{(\w+)\}/g, function (_, k) { return vars[k] === undefined ? "" : vars[k]; });
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function saved() { try { return sessionStorage.getItem(KEY); } catch (e) { return null; } }
  function save(value) {
    // sessionStorage can throw (privacy modes): then the key lives in this
    // page's memory only, and a reload asks again.
    try { if (value === null) sessionStorage.removeItem(KEY); else sessionStorage.setItem(KEY, value); } catch (e) { /* memory only */ }
  }
  function duration(s) {
    if (s === null || s === undefined || !isFinite(s)) return "–";
    s = Math.round(s);
    if (s < 60) return fill(t.fmt_seconds, { n: s });
    if (s < 3600 && s % 60 === 0) return fill(t.fmt_whole_minutes, { m: s / 60 });
    if (s < 3600) return fill(t.fmt_minutes, { m: Math.floor(s / 60), s: s % 60 });
    return fill(t.fmt_hours, { h: Math.floor(s / 3600), m: Math.floor(s / 60) % 60 });
  }

  // ---- the API ----------------------------------------------------------

  // Resolves to {status, body}; rejects only when the origin cannot be reached.
  function call(method, path, body) {
    var init = { method: method, headers: { Authorization: "Bearer " + key, Accept: "application/json" }, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(cfg.api + path, init).then(function (res) {
      return res.text().then(function (text) {
        var json = null;
        try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
        if (res.status === 401) refused(json);
        return { status: res.status, body: json };
      });
    });
  }
  function errorOf(reply) {
    var e = reply.body && reply.body.error;
    return e ? e.message : fill(t.msg_http, { status: reply.status });
  }

  // ---- the key ----------------------------------------------------------

  function showLogin(message) {
    stop();
    key = null;
    save(null);
    rooms = {};
    $("rooms").textContent = "";
    $("console").hidden = true;
    $("logout").hidden = true;
    $("login").hidden = false;
    var m = $("login-error");
    m.textContent = message || "";
    m.hidden = !message;
    $("admin-key").value = "";
    $("admin-key").focus();
  }
  // A 401 anywhere: the key is wrong (or was changed); show nothing more.
  function refused(json) {
    var code = json && json.error && json.error.code;
    showLogin(code === "admin_disabled" ? t.msg_admin_disabled : code === "missing_admin_key" ? t.msg_key_missing : t.msg_key_wrong);
  }
  function signIn(candidate) {
    key = candidate;
    $("login-error").hidden = true;
    $("login-button").disabled = true;
    call("GET", "/rooms").then(function (reply) {
      $("login-button").disabled = false;
      if (reply.status === 401) return;
      save(key);
      $("login").hidden = true;
      $("console").hidden = false;
      $("logout").hidden = false;
      if (reply.status === 200) show(reply.body.rooms); else status(errorOf(reply), "error");
      schedule(0); // the histories at once, then every tick
    }, function () {
      $("login-button").disabled = false;
      key = null;
      var m = $("login-error");
      m.textContent = t.msg_unreachable;
      m.hidden = false;
    });
  }

  // ---- the loop ---------------------------------------------------------

  function stop() { if (timer) clearTimeout(timer); timer = null; }
  function schedule(ms) { stop(); if (key) timer = setTimeout(tick, ms); }
  function status(text, kind) {
    var s = $("status");
    s.textContent = text;
    s.setAttribute("data-kind", kind || "info");
  }
  function tick() {
    if (!key || reading) return;
    reading = true;
    call("GET", "/rooms").then(function (reply) {
      if (reply.status === 401) return null;
      if (reply.status !== 200) throw new Error(errorOf(reply));
      show(reply.body.rooms);
      return Promise.all(Object.keys(rooms).map(history));
    }).then(function (done) {
      reading = false;
      if (done === null) return;
      errors = 0;
      status(fill(t.msg_updated, { time: clockTime.format(new Date()) }), "ok");
      schedule(TICK_MS);
    }, function (e) {
      reading = false;
      errors += 1;
      status(e && e.message && e.message !== "Failed to fetch" ? e.message : t.msg_unreachable, "error");
      schedule(Math.min(MAX_BACKOFF_MS, TICK_MS * Math.pow(2, errors)));
    });
  }
  function history(id) {
    var r = rooms[id];
    return call("GET", "/rooms/" + encodeURIComponent(id) + "/history?since_ms=" + r.since).then(function (reply) {
      if (reply.status !== 200 || !rooms[id]) return;
      var fresh = reply.body.samples;
      if (fresh.length) {
        r.samples = r.samples.concat(fresh);
        r.since = fresh[fresh.length - 1].at_ms;
        var from = r.since - SPAN_MS;
        while (r.samples.length && r.samples[0].at_ms <= from) r.samples.shift();
      }
      draw(r);
    });
  }

  // ---- drawing ----------------------------------------------------------

  function show(list) {
    list.sort(function (a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; });
    var seen = {};
    $("empty").hidden = list.length > 0;
    list.forEach(function (room) {
      seen[room.id] = true;
      var r = rooms[room.id] || (rooms[room.id] = build(room.id));
      r.room = room;
      // The admissions counted at each read, for the achieved rate.
      r.reads.push([Date.now(), room.live.admitted_total]);
      while (r.reads.length > 2 && r.reads[1][0] <= Date.now() - RATE_WINDOW_MS) r.reads.shift();
      figures(r);
    });
    Object.keys(rooms).forEach(function (id) {
      if (!seen[id]) { rooms[id].el.remove(); delete rooms[id]; }
    });
  }

  function build(id) {
    var parts = {};
    var section = el("section", { "class": "room", "data-room": id, "aria-labelledby": "room-" + id });
    var head = el("div", { "class": "room-head" });
    var h = el("h2", { id: "room-" + id }, id + " ");
    parts.state = el("span", { "class": "badge", "data-field": "state" });
    h.appendChild(parts.state);
    head.appendChild(h);
    var actions = el("div", { "class": "actions" });
    parts.pause = button(t.label_pause, "pause", function () { act(r, "pause"); });
    parts.resume = button(t.label_resume, "resume", function () { act(r, "resume"); });
    parts.close = button(t.label_close, "close", function () { confirmClose(r, true); }, "danger");
    [parts.pause, parts.resume, parts.close].forEach(function (b) { actions.appendChild(b); });
    head.appendChild(actions);
    section.appendChild(head);

    parts.confirm = el("div", { "class": "confirm", role: "alertdialog", "aria-labelledby": "confirm-" + id });
    parts.confirm.hidden = true;
    parts.confirm.appendChild(el("p", { id: "confirm-" + id }, fill(t.msg_confirm_close, { room: id })));
    var yes = button(t.label_close_confirm, "close-confirm", function () { confirmClose(r, false); act(r, "close"); }, "danger");
    var no = button(t.label_cancel, "close-cancel", function () { confirmClose(r, false); parts.close.focus(); }, "secondary");
    parts.confirm.appendChild(yes);
    parts.confirm.appendChild(no);
    parts.confirmYes = yes;
    section.appendChild(parts.confirm);
    parts.message = el("p", { "class": "msg", role: "status", "aria-live": "polite", "data-field": "message" });
    parts.message.hidden = true;
    section.appendChild(parts.message);

    var dl = el("dl", { "class": "figures" });
    [["waiting", t.label_waiting], ["inside", t.label_inside], ["rate", t.label_rate],
     ["oldest", t.label_oldest_wait], ["eta", t.label_eta_last], ["abandoned", t.label_abandoned],
     ["seats", t.label_seats]].forEach(function (f) {
      var box = el("div", { "data-figure": f[0] });
      box.appendChild(el("dt", {}, f[1]));
      parts[f[0]] = el("dd", { "data-field": f[0] });
      box.appendChild(parts[f[0]]);
      dl.appendChild(box);
      if (f[0] === "seats") parts.seatsBox = box;
    });
    section.appendChild(dl);

    var charts = el("div", { "class": "charts" });
    parts.charts = {};
    [["waiting", t.chart_waiting, t.unit_people], ["inside", t.chart_inside, t.unit_people],
     ["rate", t.chart_rate, t.unit_rate], ["seats", t.chart_seats, t.unit_seats]].forEach(function (c) {
      var fig = el("figure", { "class": "chart", "data-chart": c[0] });
      var cap = el("figcaption", {}, c[1]);
      var svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("viewBox", "0 0 300 80");
      svg.setAttribute("preserveAspectRatio", "none");
      svg.setAttribute("role", "img");
      fig.appendChild(cap);
      // The axes in HTML beside the drawing (text in a stretched SVG
      // would stretch too): the scale's top and 0, then the time span.
      var plot = el("div", { "class": "plot" });
      var yaxis = el("div", { "class": "yaxis", "aria-hidden": "true" });
      var ymax = el("span", { "data-axis": "ymax" });
      yaxis.appendChild(ymax);
      yaxis.appendChild(el("span", { "data-axis": "ymin" }, "0"));
      plot.appendChild(yaxis);
      plot.appendChild(svg);
      plot.appendChild(el("span", {}));
      var xaxis = el("div", { "class": "xaxis", "aria-hidden": "true" });
      var xfrom = el("span", { "data-axis": "xfrom" });
      xaxis.appendChild(xfrom);
      xaxis.appendChild(el("span", { "data-axis": "xto" }, t.axis_now));
      plot.appendChild(xaxis);
      fig.appendChild(plot);
      var legend = el("p", { "class": "legend" });
      fig.appendChild(legend);
      charts.appendChild(fig);
      parts.charts[c[0]] = { fig: fig, svg: svg, legend: legend, caption: cap, title: c[1], ymax: ymax, xfrom: xfrom, unit: c[2] };
    });
    section.appendChild(charts);

    var form = el("form", { "class": "settings", novalidate: "" });
    form.appendChild(el("h3", {}, t.label_settings));
    var grid = el("div", { "class": "fields" });
    parts.inputs = {};
    parts.fieldErrors = {};
    FIELDS.forEach(function (name) {
      var fid = "f-" + id + "-" + name;
      var box = el("div", { "class": "field" });
      box.appendChild(el("label", { "for": fid }, t["field_" + name]));
      var input;
      if (CHOICES[name]) {
        input = el("select", { id: fid, name: name, "aria-describedby": fid + "-error" });
        CHOICES[name].forEach(function (v) { input.appendChild(el("option", { value: v }, t[name + "_" + v])); });
        input.addEventListener("change", function () { r.dirty = true; });
      } else if (TEXTS[name]) {
        input = el("input", { id: fid, name: name, type: "text", autocomplete: "off", "aria-describedby": fid + "-error" });
        input.addEventListener("input", function () { r.dirty = true; });
      } else {
        input = el("input", { id: fid, name: name, type: "text", inputmode: name === "admit_per_second" ? "decimal" : "numeric", autocomplete: "off", "aria-describedby": fid + "-error" });
        input.addEventListener("input", function () { r.dirty = true; });
      }
      box.appendChild(input);
      var err = el("p", { id: fid + "-error", "class": "field-error", "data-error-for": name });
      err.hidden = true;
      box.appendChild(err);
      grid.appendChild(box);
      parts.inputs[name] = input;
      parts.fieldErrors[name] = err;
    });
    form.appendChild(grid);
    parts.formError = el("p", { "class": "field-error", "data-error-for": "form", role: "alert" });
    parts.formError.hidden = true;
    form.appendChild(parts.formError);
    var apply = el("button", { type: "submit", "data-action": "apply" }, t.label_apply);
    form.appendChild(apply);
    form.addEventListener("submit", function (e) { e.preventDefault(); patch(r); });
    section.appendChild(form);

    var r = { id: id, el: section, parts: parts, samples: [], since: 0, dirty: false, room: null, busy: false, reads: [] };
    $("rooms").appendChild(section);
    return r;
  }

  function button(label, action, onClick, kind) {
    var b = el("button", { type: "button", "data-action": action, "class": kind || "" }, label);
    b.addEventListener("click", onClick);
    return b;
  }

  function confirmClose(r, open) {
    r.parts.confirm.hidden = !open;
    if (open) r.parts.confirmYes.focus();
  }

  function latestSeats(r) {
    var last = r.samples[r.samples.length - 1];
    return last ? last.seats : null;
  }

  // Admissions per second over the last RATE_WINDOW_MS, from the counts
  // this page read (the API's own figure is a longer average that decays
  // after the line empties); null until two reads a few seconds apart.
  function achieved(r) {
    var reads = r.reads, last = reads[reads.length - 1], first = reads[0];
    if (!last || last[0] - first[0] < 2000) return null;
    return Math.max(0, last[1] - first[1]) / ((last[0] - first[0]) / 1000);
  }

  // The room's state as a word: an open room before its opening says when
  // it opens, in the operator's time zone.
  function stateWord(room) {
    var opens = Date.parse((room.settings && room.settings.opens_at) || "");
    if (room.state === "open" && opens > Date.now()) {
      return { key: "opens", text: fill(t.state_opens, { time: dateTime.format(opens) }) };
    }
    return { key: room.state, text: t["state_" + room.state] };
  }

  function figures(r) {
    var room = r.room, p = r.parts, live = room.live, s = room.settings;
    r.el.setAttribute("data-state", room.state);
    var word = stateWord(room);
    p.state.textContent = word.text;
    p.state.setAttribute("data-state", word.key);
    p.pause.disabled = r.busy || room.state !== "open";
    p.resume.disabled = r.busy || room.state === "open";
    p.close.disabled = r.busy || room.state === "closed";
    p.waiting.textContent = num.format(live.waiting);
    p.waiting.setAttribute("data-value", live.waiting);
    p.inside.textContent = num.format(live.active) + " / " + num.format(s.capacity);
    // Nobody waiting: nothing to achieve, so no rate (not a low one).
    var rate = live.waiting === 0 ? null : achieved(r);
    p.rate.textContent = (rate === null ? "—" : num.format(rate)) + " / " + num.format(s.admit_per_second);
    p.rate.setAttribute("data-value", rate === null ? "" : String(rate));
    p.oldest.textContent = duration(live.oldest_wait_seconds);
    // The last in line gets in after everyone ahead, at the rate achieved.
    var pace = rate === null ? live.admit_rate : rate;
    p.eta.textContent = live.waiting === 0 ? "—" : pace > 0 ? duration(live.waiting / pace) : t.msg_no_admissions;
    p.abandoned.textContent = num.format(live.abandoned_total);
    // Live counts when the API gives them, else the last sample's.
    var seats = live.seats !== undefined ? live.seats : latestSeats(r);
    p.seatsBox.hidden = !seats;
    if (seats) p.seats.textContent = [seats.available, seats.held, seats.booked].map(num.format).join(" / ");
    if (!r.dirty) {
      FIELDS.forEach(function (name) {
        if (document.activeElement !== p.inputs[name]) p.inputs[name].value = shown(s[name]);
      });
    }
  }

  // The smallest 1, 2 or 5 times a power of ten at or above v: a scale
  // whose top reads as a round number.
  function roundUp(v) {
    if (!(v > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log(v) / Math.LN10));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= v * 0.9999) return steps[i] * p;
    return 10 * p;
  }

  // One chart: a line per series over the last 30 minutes, on a scale from
  // 0 to a round top, both named with their unit.
  function chart(c, series, from, now) {
    var svg = c.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var max = 0;
    series.forEach(function (s) { s.points.forEach(function (p) { if (p[1] > max) max = p[1]; }); });
    max = roundUp(max);
    c.ymax.textContent = fill(c.unit, { n: num.format(max) });
    c.xfrom.textContent = fill(t.axis_ago, { d: duration(Math.round((now - from) / 60000) * 60) });
    [79.5, 4.5].forEach(function (y, i) {
      var grid = document.createElementNS(SVG, "line");
      grid.setAttribute("x1", 0); grid.setAttribute("x2", 300); grid.setAttribute("y1", y); grid.setAttribute("y2", y);
      grid.setAttribute("class", i ? "axis top" : "axis");
      grid.setAttribute("vector-effect", "non-scaling-stroke");
      svg.appendChild(grid);
    });
    var words = [];
    series.forEach(function (s) {
      if (!s.points.length) return;
      var pts = s.points.map(function (p) {
        var x = 300 - (now - p[0]) / (now - from) * 300;
        var y = 78 - p[1] / max * 74;
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      if (pts.length === 1) pts.push(pts[0]);
      var line = document.createElementNS(SVG, "polyline");
      line.setAttribute("points", pts.join(" "));
      line.setAttribute("class", "series " + s.cls);
      line.setAttribute("vector-effect", "non-scaling-stroke");
      svg.appendChild(line);
      words.push(s.label + " " + num.format(s.points[s.points.length - 1][1]));
    });
    c.caption.textContent = c.title + " · " + fill(t.fmt_span, { d: duration(Math.round((now - from) / 60000) * 60) });
    var summary = words.length ? c.title + ": " + words.join(", ") : c.title + ": " + t.msg_no_history;
    svg.setAttribute("aria-label", summary);
    c.legend.textContent = "";
    series.forEach(function (s) {
      var item = el("span", { "class": "key " + s.cls });
      item.textContent = s.label + (s.points.length ? " " + num.format(s.points[s.points.length - 1][1]) : "");
      c.legend.appendChild(item);
    });
  }

  function draw(r) {
    var xs = r.samples;
    var now = xs.length ? Math.max(xs[xs.length - 1].at_ms, Date.now()) : Date.now();
    // The charts reach back 30 minutes once there is that much history;
    // until then they span what there is (a minute at least), so a young
    // history is not a sliver at the right edge.
    var from = Math.max(now - SPAN_MS, Math.min(xs.length ? xs[0].at_ms : now, now - MIN_SPAN_MS));
    var pick = function (f) { return xs.map(function (s) { return [s.at_ms, f(s)]; }); };
    var c = r.parts.charts;
    chart(c.waiting, [{ label: t.label_waiting, cls: "s1", points: pick(function (s) { return s.waiting; }) }], from, now);
    chart(c.inside, [
      { label: t.series_inside, cls: "s1", points: pick(function (s) { return s.active; }) },
      { label: t.series_capacity, cls: "s2", points: pick(function (s) { return s.capacity; }) }], from, now);
    // Achieved: the admissions between one sample and the next, per second.
    var admitted = [];
    for (var i = 1; i < xs.length; i++) {
      var dt = (xs[i].at_ms - xs[i - 1].at_ms) / 1000;
      if (dt > 0) admitted.push([xs[i].at_ms, Math.max(0, xs[i].admitted_total - xs[i - 1].admitted_total) / dt]);
    }
    chart(c.rate, [
      { label: t.series_achieved, cls: "s1", points: admitted },
      { label: t.series_configured, cls: "s2", points: pick(function (s) { return s.admit_per_second; }) }], from, now);
    var withSeats = xs.filter(function (s) { return s.seats; });
    c.seats.fig.hidden = withSeats.length === 0;
    if (withSeats.length) {
      var sp = function (f) { return withSeats.map(function (s) { return [s.at_ms, f(s.seats)]; }); };
      chart(c.seats, [
        { label: t.series_available, cls: "s1", points: sp(function (s) { return s.available; }) },
        { label: t.series_held, cls: "s3", points: sp(function (s) { return s.held; }) },
        { label: t.series_booked, cls: "s2", points: sp(function (s) { return s.booked; }) }], from, now);
    }
    if (r.room) figures(r);
  }

  // ---- controls ---------------------------------------------------------

  function say(r, text, kind) {
    var m = r.parts.message;
    m.textContent = text;
    m.setAttribute("data-kind", kind);
    m.hidden = !text;
  }
  function busy(r, on) {
    r.busy = on;
    if (r.room) figures(r);
  }

  function act(r, verb) {
    busy(r, true);
    call("POST", "/rooms/" + encodeURIComponent(r.id) + "/" + verb).then(function (reply) {
      busy(r, false);
      if (reply.status === 401) return;
      if (reply.status === 200) {
        r.room = reply.body;
        figures(r);
        say(r, fill(t["msg_" + verb + "d"], { room: r.id }), "ok");
      } else {
        say(r, errorOf(reply), "error");
      }
    }, function () { busy(r, false); say(r, t.msg_unreachable, "error"); });
  }

  function clearErrors(r) {
    FIELDS.forEach(function (name) {
      r.parts.fieldErrors[name].hidden = true;
      r.parts.inputs[name].removeAttribute("aria-invalid");
    });
    r.parts.formError.hidden = true;
  }

  function patch(r) {
    clearErrors(r);
    var body = {}, current = r.room ? r.room.settings : {};
    for (var i = 0; i < FIELDS.length; i++) {
      var name = FIELDS[i], raw = r.parts.inputs[name].value.trim();
      if (raw === shown(current[name])) continue;
      if (TEXTS[name]) { body[name] = raw === "" ? null : raw; continue; }
      // Sent as typed when it is a number at all, so the API's own rules
      // (ranges, whole numbers) decide and its words are shown; only text
      // that is no number is sent as text, which the API refuses too.
      var n = Number(raw);
      body[name] = !CHOICES[name] && raw !== "" && isFinite(n) ? n : raw;
    }
    if (!Object.keys(body).length) { r.dirty = false; say(r, t.msg_no_change, "info"); return; }
    busy(r, true);
    call("PATCH", "/rooms/" + encodeURIComponent(r.id), body).then(function (reply) {
      busy(r, false);
      if (reply.status === 401) return;
      if (reply.status === 200) {
        r.dirty = false;
        r.room = reply.body;
        figures(r);
        say(r, fill(t.msg_saved, { room: r.id }), "ok");
        return;
      }
      var message = errorOf(reply);
      // The API names the field first ("invalid request body: capacity: ...").
      var field = FIELDS.filter(function (f) { return message.indexOf(f + ":") !== -1 || message.indexOf("`" + f + "`") !== -1; })[0];
      var target = field ? r.parts.fieldErrors[field] : r.parts.formError;
      target.textContent = message;
      target.hidden = false;
      if (field) {
        r.parts.inputs[field].setAttribute("aria-invalid", "true");
        r.parts.inputs[field].focus();
      }
      say(r, "", "info");
    }, function () { busy(r, false); say(r, t.msg_unreachable, "error"); });
  }

  // ---- start ------------------------------------------------------------

  $("login").addEventListener("submit", function (e) {
    e.preventDefault();
    var candidate = $("admin-key").value.trim();
    if (!candidate) {
      var m = $("login-error");
      m.textContent = t.msg_key_missing;
      m.hidden = false;
      return;
    }
    signIn(candidate);
  });
  $("logout").addEventListener("click", function () { showLogin(""); });
  // A hidden tab need not be fed: reading resumes when it is shown again.
  document.addEventListener("visibilitychange", function () {
    if (!key) return;
    if (document.hidden) stop(); else schedule(0);
  });
  var remembered = saved();
  if (remembered) signIn(remembered); else showLogin("");
})();
