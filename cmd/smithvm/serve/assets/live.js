// The run page's live panel: each step's output lines and, for the agent
// CLIs, what the agent did (message, tool, command, read, edit), from
// /api/runs/ID/live, polled by offset every half second while the run
// runs (no connection held between polls), once otherwise.
"use strict";
(function () {
  const runID = document.body.dataset.run;
  const api = "/api/runs/" + encodeURIComponent(runID) + "/live";
  const body = document.querySelector("#livelog tbody");
  const count = document.querySelector("#livecount");
  const pick = document.querySelector("#livestep");
  const box = document.querySelector("#livelog");
  const maxRows = 5000;
  const poll = 500;
  let next = 0;
  let rows = 0;
  const steps = new Set();

  function row(l) {
    const tr = document.createElement("tr");
    tr.className = "k-" + l.kind;
    tr.dataset.step = l.step;
    tr.dataset.kind = l.kind;
    if (pick.value && pick.value !== l.step) tr.hidden = true;
    const t = new Date(l.time);
    for (const [cls, text] of [["mono muted", isNaN(t) ? l.time : t.toISOString().slice(11, 23)], ["mono", l.thread ? l.step + " [" + l.thread + "]" : l.step], ["kind", l.kind], ["mono text", l.text]]) {
      const td = document.createElement("td");
      td.className = cls;
      td.textContent = text;
      tr.append(td);
    }
    if (!steps.has(l.step)) {
      steps.add(l.step);
      const o = document.createElement("option");
      o.value = o.textContent = l.step;
      pick.append(o);
    }
    return tr;
  }

  async function fetchLive() {
    let r;
    try {
      const resp = await fetch(api + "?after=" + next, { credentials: "same-origin", cache: "no-store" });
      if (!resp.ok) return;
      r = await resp.json();
    } catch (e) {
      return;
    }
    if (r.next < next) { body.replaceChildren(); rows = 0; }
    next = r.next;
    if (!r.lines.length) return;
    const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    body.append(...r.lines.map(row));
    rows += r.lines.length;
    while (rows > maxRows) { body.firstElementChild.remove(); rows--; }
    count.textContent = rows + " lines";
    if (atEnd) box.scrollTop = box.scrollHeight;
  }

  pick.addEventListener("change", () => {
    for (const tr of body.children) tr.hidden = !!pick.value && tr.dataset.step !== pick.value;
  });

  // Polls while the run runs (the header's badge, which run.js keeps
  // current), and once more after it stopped, for the last lines.
  let last = false;
  async function loop() {
    await fetchLive();
    const running = document.querySelector("#runstatus").textContent.trim() === "running";
    if (running) last = false;
    if (running || !last) {
      last = !running;
      setTimeout(loop, poll);
    } else {
      setTimeout(loop, 5000); // a resume may start it again
    }
  }
  loop();
})();
