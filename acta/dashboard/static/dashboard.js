// acta dashboard: the theme toggle, and the overview's live refresh (polling /api/overview).
// No inline script anywhere: the page's CSP allows only this file.
"use strict";
(function () {
  var root = document.documentElement;
  var base = root.getAttribute("data-base") || "";

  function applyTheme(theme) {
    if (theme === "light" || theme === "dark") { root.setAttribute("data-theme", theme); }
    else { root.removeAttribute("data-theme"); }
  }
  try { applyTheme(window.localStorage.getItem("acta-theme")); } catch (e) { /* storage off */ }

  function dark() {
    var set = root.getAttribute("data-theme");
    if (set) { return set === "dark"; }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function setText(id, text) {
    var el = document.getElementById(id);
    if (el && el.textContent !== String(text)) { el.textContent = String(text); }
  }

  function render(data) {
    var counts = data.counts_shown || {};  // "10,000+" past the cap, as the page shows
    Object.keys(counts).forEach(function (name) {
      var el = document.querySelector('[data-count="' + name + '"]');
      if (el) { el.textContent = String(counts[name]); }
    });
    var verdict = document.getElementById("verdict");
    if (verdict && data.verdict) {
      verdict.className = "verdict v-" + data.verdict.level;
      verdict.setAttribute("data-level", data.verdict.level);
      setText("verdict-headline", data.verdict.headline);
      var list = document.getElementById("verdict-reasons");
      if (list) {
        while (list.firstChild) { list.removeChild(list.firstChild); }
        (data.verdict.reasons || []).forEach(function (reason) {
          var li = document.createElement("li");
          li.textContent = reason;  // text, never HTML: job names stay inert
          list.appendChild(li);
        });
      }
    }
    if (data.throughput) {
      setText("throughput-succeeded", data.throughput.succeeded);
      setText("throughput-failed", data.throughput.failed);
      setText("throughput-cancelled", data.throughput.cancelled);
    }
    setText("as-of", data.now);
    var box = document.getElementById("overview");
    if (box) { box.setAttribute("data-refreshed-at", String(data.now)); }
  }

  function poll(every) {
    fetch(base + "/api/overview", { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) { if (data) { render(data); } })
      .catch(function () { /* the next poll tries again */ })
      .then(function () { window.setTimeout(function () { poll(every); }, every); });
  }

  // Instants: the page shows "5 min ago" with the exact UTC instant as the title (what a
  // browser without script shows on hover). Here the title gains the viewer's own time zone,
  // and a schedule's own zone where the element names one.
  function zoned(date, zone) {
    var options = { year: "numeric", month: "short", day: "numeric", hour: "2-digit",
      minute: "2-digit", second: "2-digit", timeZoneName: "short" };
    if (zone) { options.timeZone = zone; }
    try { return date.toLocaleString(undefined, options); } catch (e) { return null; }
  }

  function localTimes() {
    Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime()) || el.getAttribute("data-local")) { return; }
      var lines = [zoned(date, null)];
      var zone = el.getAttribute("data-zone");
      if (zone) { lines.push(zoned(date, zone) + " (" + zone + ")"); }
      lines.push(el.getAttribute("title") || "");
      el.setAttribute("title", lines.filter(Boolean).join("\n"));
      el.setAttribute("data-local", "1");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes();
    var toggle = document.getElementById("theme-toggle");
    if (toggle) {
      toggle.addEventListener("click", function () {
        var next = dark() ? "light" : "dark";
        applyTheme(next);
        try { window.localStorage.setItem("acta-theme", next); } catch (e) { /* storage off */ }
      });
    }
    if (document.body.getAttribute("data-page") === "overview") {
      var every = parseInt(document.body.getAttribute("data-refresh-ms") || "5000", 10);
      window.setTimeout(function () { poll(every); }, every);
    }
  });
})();
