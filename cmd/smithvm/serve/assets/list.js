// The run list refreshes itself every two seconds (the same page, fetched
// again), so new runs and status changes show without a reload.
"use strict";
(function () {
  async function tick() {
    try {
      const r = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (r.ok) {
        const doc = new DOMParser().parseFromString(await r.text(), "text/html");
        const fresh = doc.querySelector("main");
        const main = document.querySelector("main");
        if (fresh && main && fresh.innerHTML !== main.innerHTML) main.replaceWith(fresh);
      }
    } catch (e) { /* the server is gone or busy: try again */ }
    setTimeout(tick, 2000);
  }
  setTimeout(tick, 2000);
  // The workflow filter applies on choice (the list is refreshed in place,
  // so the handler is on the document).
  document.addEventListener("change", (ev) => {
    if (ev.target && ev.target.id === "workflow") ev.target.form.submit();
  });
})();
