// Live phase badges, the cluster page's tabs and the copy button; the pages work without it
// (without it every tab's panel shows, one under the other).
"use strict";
(function () {
  function tabs(list) {
    var links = Array.prototype.slice.call(list.querySelectorAll("[role=tab]"));
    function panel(link) { return document.getElementById(link.getAttribute("aria-controls")); }
    function show(chosen, focus) {
      links.forEach(function (link) {
        var on = link === chosen;
        link.setAttribute("aria-selected", on ? "true" : "false");
        link.tabIndex = on ? 0 : -1;
        panel(link).hidden = !on;
      });
      if (focus) { chosen.focus(); }
    }
    function byHash() {
      return links.filter(function (l) { return l.hash && l.hash === location.hash; })[0];
    }
    // The tab the address names, else the one holding a refusal, else the first.
    var start = byHash() || links.filter(function (l) {
      return panel(l).querySelector("[role=alert]");
    })[0] || links[0];
    show(start, false);
    links.forEach(function (link, i) {
      link.addEventListener("click", function (event) {
        event.preventDefault();
        show(link, false);
        history.replaceState(null, "", link.hash);
      });
      link.addEventListener("keydown", function (event) {
        var step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
        if (step) {
          event.preventDefault();
          var next = links[(i + step + links.length) % links.length];
          show(next, true);
          history.replaceState(null, "", next.hash);
        }
      });
    });
    window.addEventListener("hashchange", function () { var l = byHash(); if (l) { show(l, false); } });
  }
  function refresh(el) {
    fetch(el.dataset.live, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        if (r.redirected || !r.ok) { throw new Error("HTTP " + r.status); }
        return r.text();
      })
      .then(function (html) { if (el.innerHTML.trim() !== html.trim()) { el.innerHTML = html; } })
      .catch(function () { /* keep what is shown; try again at the next tick */ });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-tabs]").forEach(tabs);
    var live = document.querySelectorAll("[data-live]");
    if (live.length) {
      setInterval(function () { live.forEach(refresh); }, 2000);
    }
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var text = document.getElementById(button.dataset.copy).textContent;
        var status = document.getElementById(button.dataset.copyStatus || "copy-status");
        function done(ok) {
          button.dataset.copied = ok ? text : "";
          if (status) { status.textContent = ok ? "Copied" : "Select the command and copy it"; }
        }
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(function () { done(true); },
                                                   function () { done(false); });
        } else {
          var range = document.createRange();
          range.selectNodeContents(document.getElementById(button.dataset.copy));
          var selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
          done(document.execCommand("copy"));
        }
      });
    });
  });
})();
