// The room list's one script: each opening, a <time> whose text is its UTC
// time (what a visitor without script reads), rewritten in the visitor's own
// time zone with the zone named. Its config block (lobby-config) is {lang}.
"use strict";
(function () {
  var cfg = JSON.parse(document.getElementById("lobby-config").textContent);
  // The zone by name ("Korean Standard Time", "한국 표준시"): a list is read
  // at a glance, and an offset alone leaves the reader to work it out.
  var when = new Intl.DateTimeFormat(cfg.lang, {
    year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "long"
  });
  var times = document.querySelectorAll("#rooms time[datetime]");
  for (var i = 0; i < times.length; i++) {
    var at = Date.parse(times[i].getAttribute("datetime"));
    if (!isNaN(at)) { times[i].textContent = when.format(at); }
  }
})();
