// Live phase badges and the copy button; the pages work without it.
"use strict";
(function () {
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
    var live = document.querySelectorAll("[data-live]");
    if (live.length) {
      setInterval(function () { live.forEach(refresh); }, 2000);
    }
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var text = document.getElementById(button.dataset.copy).textContent;
        var status = document.getElementById("copy-status");
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
