// The run page: draws /api/runs/ID/view, renders the run's DOT with
// Graphviz (viz-global.js, embedded) and follows /api/runs/ID/events.
"use strict";
(function () {
  const runID = document.body.dataset.run;
  const api = "/api/runs/" + encodeURIComponent(runID);
  const $ = (sel) => document.querySelector(sel);
  let view = null;          // the last /view
  let graphView = null;     // "full", "overview" or "node:K"
  let lastDOT = "";
  let openLog = null;       // {step, what, path}
  let refreshTimer = null;
  let eventCount = 0;
  const maxEventRows = 5000;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) {
      if (k === undefined || k === null) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }
  const badge = (s) => el("span", { class: "status " + (s || "") }, s || "");
  // cost is a cost in US dollars as smithvm status prints it, "-" for none.
  const cost = (c) => !c ? "-" : (c < 0.0001 ? "<$0.0001" : "$" + c.toFixed(4));
  const secs = (d) => (d === undefined || d === null) ? "" : d.toFixed(1) + "s";

  async function getText(url) {
    const r = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    const t = await r.text();
    if (!r.ok) throw new Error(t.trim() || r.statusText);
    return t;
  }

  // ---- the state ------------------------------------------------------
  let refreshSeq = 0;
  async function refresh() {
    refreshTimer = null;
    const seq = ++refreshSeq;
    let v;
    try {
      v = JSON.parse(await getText(api + "/view"));
    } catch (e) {
      if (seq === refreshSeq) $("#summary").textContent = "Cannot read the run: " + e.message;
      return;
    }
    if (seq !== refreshSeq) return; // a newer refresh started meanwhile
    view = v;
    drawSummary();
    drawActions();
    drawFlag();
    drawSteps();
    drawPayload();
    if (graphView === null) {
      graphView = view.graph.start || "full";
      fillGraphViews();
    }
    drawGraph();
    if (openLog) showLog(openLog.step, openLog.what, openLog.path, true);
  }
  function scheduleRefresh() {
    if (refreshTimer === null) refreshTimer = setTimeout(refresh, 60);
  }

  function drawSummary() {
    const st = view.state;
    const s = $("#runstatus");
    s.className = "status " + st.status;
    s.textContent = view.cut_off ? st.status + " (" + view.cut_off + ")" : st.status;
    const started = st.started_at ? new Date(st.started_at) : null;
    const ended = st.ended_at ? new Date(st.ended_at) : null;
    let dur = "";
    if (started) dur = (((ended || (st.status === "running" ? new Date() : started)) - started) / 1000).toFixed(1) + "s";
    const items = [
      ["workflow", st.workflow_name], ["file", st.workflow_path], ["started", st.started_at],
      ["ended", st.ended_at], ["duration", dur], ["current step", currentStep(st)],
      ["tokens", st.stats ? st.stats.totalTokensUsed : 0], ["cost", cost(view.usage ? view.usage.cost_usd : 0)],
      ["lines written", st.stats ? st.stats.totalLinesWritten : 0],
    ];
    const box = $("#summary");
    box.replaceChildren(...items.filter(([, v]) => v !== undefined && v !== "").map(([k, v]) =>
      el("div", {}, el("span", {}, k), k === "current step" || k === "file" ? el("code", {}, v) : String(v))));
    if (view.diff) box.append(el("div", {}, el("span", {}, "changes"),
      el("a", { href: "#", id: "rundiff", onclick: (e) => { e.preventDefault(); showLog("", "rundiff"); } }, "the run's whole diff")));
  }

  // currentStep is the current step, with its attempt and how long it has
  // run while it runs (its running record, on disk before it started).
  function currentStep(st) {
    const r = (st.steps || {})[st.current_step];
    if (st.status !== "running" || view.cut_off || !r || r.status !== "running" || !r.started_at) return st.current_step;
    const secs = Math.max(0, (Date.now() - new Date(r.started_at)) / 1000);
    return st.current_step + " (attempt " + (r.attempts || 1) + ", running for " + secs.toFixed(1) + "s)";
  }

  function drawFlag() {
    const st = view.state;
    const box = $("#flag");
    if (!st.isHalted) {
      delete box.dataset.halted;
      box.replaceChildren(...(box.dataset.resumed ? [el("div", { class: "flag done", id: "resumed" }, box.dataset.resumed)] : []));
      return;
    }
    if (box.dataset.halted === st.halted_block + "/" + st.event_seq) return; // keep what the user typed
    box.dataset.halted = st.halted_block + "/" + st.event_seq;
    delete box.dataset.resumed;
    const last = (st.payload || []).slice(-1)[0];
    const kids = [
      el("strong", {}, "Halted at ", el("code", {}, st.halted_block), " awaiting resume."),
    ];
    if (last) kids.push(el("div", { class: "muted" }, "Last segment (" + last.type + "):"), el("pre", { class: "text" }, last.content));
    if (view.can_resume) {
      const list = el("datalist", { id: "signals" }, (view.signals || []).map((s) => el("option", { value: s })));
      const choices = el("div", { class: "choices", id: "signalchoices" }, (view.signals || []).map((s) =>
        el("button", { type: "button", class: "choice", "data-signal": s, onclick: () => { $("#signal").value = s; } }, s)));
      const form = el("form", { id: "resume", onsubmit: resume },
        el("label", { for: "signal" }, "Signal"),
        el("div", {}, el("input", { id: "signal", name: "signal", list: "signals", placeholder: "empty: run the halted block again", size: 40 }), list, choices,
          el("div", { class: "muted" }, "The signals this block accepts; takes its transition without running it (smithvm resume --signal). Any other is refused (E_UNKNOWN_SIGNAL).")),
        el("label", { for: "note" }, "Note"),
        el("div", {}, el("textarea", { id: "note", name: "note", placeholder: "your answer: appended to the payload as a USER_NOTE segment (--note)" })),
        el("span"), el("div", {}, el("button", { class: "primary", type: "submit", id: "resumebtn" }, "Resume run"), " ", el("span", { id: "resumemsg" })));
      kids.push(form);
    } else {
      kids.push(el("div", { class: "muted" }, "Resume with: smithvm resume " + st.run_id + " [--signal SIGNAL:X] [--note TEXT]"));
    }
    box.replaceChildren(el("div", { class: "flag" }, kids));
  }

  async function resume(ev) {
    ev.preventDefault();
    const form = ev.target;
    const msg = $("#resumemsg");
    const btn = $("#resumebtn");
    btn.disabled = true;
    msg.className = "";
    msg.textContent = "resuming…";
    try {
      const r = await fetch(api + "/resume", {
        method: "POST", credentials: "same-origin",
        body: new URLSearchParams(new FormData(form)),
      });
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || r.statusText);
      const sig = form.signal.value.trim();
      const text = "Resumed from this page at " + new Date().toLocaleTimeString() + (sig ? " with " + sig : " (the halted block runs again)") + "; the run continues in the server.";
      msg.className = "ok";
      msg.textContent = text;
      $("#flag").dataset.resumed = text;
      scheduleRefresh();
    } catch (e) {
      msg.className = "error";
      msg.textContent = e.message;
      btn.disabled = false;
    }
  }

  function drawSteps() {
    const body = $("#steps tbody");
    const rows = (view.steps || []).map((s) => {
      const links = [];
      if (s.stdout) links.push(el("a", { href: "#", onclick: (e) => { e.preventDefault(); showLog(s.name, "stdout"); } }, "stdout"));
      if (s.stderr) links.push(el("a", { href: "#", onclick: (e) => { e.preventDefault(); showLog(s.name, "stderr"); } }, "stderr"));
      if (s.commit) links.push(el("a", { href: "#", class: "diff", title: "commit " + s.commit, onclick: (e) => { e.preventDefault(); showLog(s.name, "diff"); } }, "diff"));
      for (const f of s.files || []) links.push(el("a", { href: "#", class: "mono", onclick: (e) => { e.preventDefault(); showLog(s.name, "file", f); } }, f));
      const detail = s.error ? s.error.code + ": " + s.error.message : (s.signal && s.signal !== "SIGNAL:SUCCESS" ? s.signal : (s.iterations ? s.iterations + " iterations" : ""));
      return el("tr", { "data-step": s.name, "data-status": s.status },
        el("td", { class: "mono" }, "\u2003".repeat(s.depth || 0) + s.name, detail ? el("div", { class: "muted" }, detail) : null),
        el("td", { class: "st" }, badge(s.status)),
        el("td", { class: "num" }, s.attempts || ""),
        el("td", { class: "num" }, secs(s.duration)),
        el("td", { class: "num" }, s.status === "running" || s.status === "skipped" ? "" : s.exit_code),
        el("td", {}, s.provider || ""),
        el("td", { class: "num tokens" }, s.tokens ? String(s.tokens) : "-"),
        el("td", { class: "num cost" }, cost(s.cost_usd)),
        el("td", {}, links.flatMap((l, i) => i ? [" · ", l] : [l])));
    });
    body.replaceChildren(...rows);
  }

  function drawPayload() {
    const segs = view.state.payload || [];
    $("#payloadsec").hidden = view.format !== "manifest" && segs.length === 0;
    $("#payload").replaceChildren(...(segs.length ? segs.map((s) =>
      el("div", { class: "seg" }, el("div", {}, el("strong", {}, s.type), " ", el("span", { class: "muted mono" }, s.timestamp || "")),
        el("pre", { class: "text" }, s.content))) : [el("span", { class: "muted" }, "empty")]));
  }

  async function showLog(step, what, path, quiet) {
    openLog = { step, what, path };
    const url = what === "rundiff" ? api + "/diff" :
      api + "/steps/" + encodeURIComponent(step) + "/" + (what === "file" ? "files/" + path.split("/").map(encodeURIComponent).join("/") : what);
    let text;
    try { text = await getText(url); } catch (e) { text = "(" + e.message + ")"; }
    const title = what === "rundiff" ? "the run's whole diff" : step + " · " + (what === "file" ? path : what);
    const box = $("#logview");
    const pre = box.querySelector("pre");
    if (quiet && pre && box.dataset.title === title) {
      if (pre.textContent !== text) pre.textContent = text;
      return;
    }
    box.dataset.title = title;
    box.replaceChildren(el("section", { id: "log" }, el("h2", {}, el("span", { class: "mono" }, title),
      el("span", { class: "tools" }, el("button", { onclick: () => { openLog = null; box.replaceChildren(); } }, "close"))),
      el("div", { class: "body" }, el("pre", { class: "text" }, text || "(empty)"))));
  }

  // ---- the graph ------------------------------------------------------
  let vizP = null;
  let drawSeq = 0;
  const tf = { s: 1, x: 0, y: 0 };
  let fitted = false;

  function fillGraphViews() {
    const sel = $("#graphview");
    const opts = [el("option", { value: "full" }, "whole graph (" + view.graph.blocks + " blocks)")];
    const cl = view.graph.clusters || [];
    if (cl.length > 1) {
      opts.push(el("option", { value: "overview" }, "overview: one box per node"));
      cl.forEach((c, k) => opts.push(el("option", { value: "node:" + k }, "node " + c)));
    }
    sel.replaceChildren(...opts);
    sel.value = graphView;
    sel.onchange = () => setGraphView(sel.value);
  }
  function setGraphView(v) {
    graphView = v;
    $("#graphview").value = v;
    fitted = false;
    lastDOT = "";
    drawGraph();
  }

  async function drawGraph() {
    if (!view || !view.graph.blocks) {
      $("#graph").replaceChildren(el("div", { class: "msg" }, "The run's workflow no longer compiles: no graph."));
      return;
    }
    // Draws may overlap (an event and a click): only the latest one, for
    // the view still chosen, replaces the picture.
    const want = graphView, seq = ++drawSeq;
    const stale = () => seq !== drawSeq || want !== graphView;
    let url = api + "/graph";
    if (want === "overview") url += "?view=overview";
    else if (want.startsWith("node:")) url += "?node=" + want.slice(5);
    let dot;
    try { dot = await getText(url); } catch (e) { if (!stale()) $("#graph").replaceChildren(el("div", { class: "msg" }, e.message)); return; }
    if (stale() || dot === lastDOT) return;
    if (!window.Viz) { $("#graph").replaceChildren(el("div", { class: "msg" }, "Graphviz did not load.")); return; }
    if (!vizP) vizP = Viz.instance();
    const viz = await vizP;
    if (stale()) return;
    lastDOT = dot;
    const t0 = performance.now();
    let svg;
    try { svg = viz.renderSVGElement(dot); } catch (e) { $("#graph").replaceChildren(el("div", { class: "msg" }, "Graphviz: " + e.message)); return; }
    const ms = Math.round(performance.now() - t0);
    window.smithGraph = { view: want, ms: ms, nodes: svg.querySelectorAll("g.node").length };
    $("#graphinfo").textContent = (want === "full" ? "" : want === "overview" ? "overview" : "node " + view.graph.clusters[+want.slice(5)]) + " · drawn in " + ms + " ms";
    const vb = svg.viewBox.baseVal;
    if (vb && vb.width) { svg.setAttribute("width", vb.width); svg.setAttribute("height", vb.height); }
    svg.id = "graphsvg";
    svg.dataset.view = want;
    if (want === "overview" || want.startsWith("node:")) {
      for (const g of svg.querySelectorAll("g.node")) {
        const t = g.querySelector("title");
        const m = t && /^c(\d+)$/.exec(t.textContent);
        if (m) { g.classList.add("clickable"); g.addEventListener("click", () => setGraphView("node:" + m[1])); }
      }
    }
    $("#graph").replaceChildren(svg);
    if (!fitted) { fit(); fitted = true; } else apply();
  }
  function apply() {
    const svg = $("#graphsvg");
    if (svg) svg.style.transform = "translate(" + tf.x + "px," + tf.y + "px) scale(" + tf.s + ")";
  }
  function fit() {
    const svg = $("#graphsvg");
    if (!svg) return;
    const box = $("#graph");
    const w = +svg.getAttribute("width") || 1, h = +svg.getAttribute("height") || 1;
    tf.s = Math.min(box.clientWidth / w, box.clientHeight / h, 1.5);
    tf.x = (box.clientWidth - w * tf.s) / 2;
    tf.y = Math.max(0, (box.clientHeight - h * tf.s) / 2);
    apply();
  }
  function zoom(f, cx, cy) {
    const box = $("#graph");
    if (cx === undefined) { cx = box.clientWidth / 2; cy = box.clientHeight / 2; }
    const s = Math.min(8, Math.max(0.02, tf.s * f));
    tf.x = cx - (cx - tf.x) * (s / tf.s);
    tf.y = cy - (cy - tf.y) * (s / tf.s);
    tf.s = s;
    apply();
  }
  function panZoom() {
    const box = $("#graph");
    box.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = box.getBoundingClientRect();
      zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    let drag = null;
    box.addEventListener("mousedown", (e) => { drag = { x: e.clientX - tf.x, y: e.clientY - tf.y, moved: false }; box.classList.add("dragging"); });
    window.addEventListener("mousemove", (e) => { if (!drag) return; tf.x = e.clientX - drag.x; tf.y = e.clientY - drag.y; apply(); });
    window.addEventListener("mouseup", () => { drag = null; box.classList.remove("dragging"); });
    $("#zoomin").onclick = () => zoom(1.3);
    $("#zoomout").onclick = () => zoom(1 / 1.3);
    $("#fit").onclick = fit;
  }

  // ---- events ---------------------------------------------------------
  function addEvent(ev, raw) {
    eventCount++;
    $("#eventcount").textContent = eventCount;
    const detail = [ev.message, ev.code, ev.signal, ev.exit_code !== undefined ? "exit " + ev.exit_code : "",
      ev.duration !== undefined ? ev.duration.toFixed(1) + "s" : "", ev.provider].filter(Boolean).join(" · ");
    const time = ev.timestamp ? ev.timestamp.replace(/^.*T/, "").replace(/(\.\d{3})\d*/, "$1") : "";
    const row = el("tr", { class: ev.level, "data-seq": ev.event_seq },
      el("td", { class: "num" }, ev.event_seq), el("td", { class: "mono" }, time), el("td", {}, ev.level),
      el("td", { class: "mono" }, ev.event), el("td", { class: "mono" }, ev.step || ""), el("td", {}, detail));
    row.title = raw;
    const box = $("#events");
    const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    const body = box.querySelector("tbody");
    body.append(row);
    // A long run has tens of thousands of events: the table keeps the last
    // maxEventRows (the API has them all).
    if (body.rows.length > maxEventRows) {
      body.rows[0].remove();
      $("#eventcount").textContent = eventCount + " (the last " + maxEventRows + " shown)";
    }
    if (atEnd) box.scrollTop = box.scrollHeight;
  }
  // Live updates by short polls (?poll=1): a page holds no connection
  // between polls, so any number of run pages stay live side by side (a
  // browser allows six connections per site, shared by all its tabs). The
  // ETag is the offset read up to in events.jsonl; after is the last
  // event_seq shown, so no event is shown twice, even across a restart of
  // the server.
  const pollEvery = 400;
  let lastSeq = 0;
  let etag = "";
  async function follow() {
    const live = $("#live");
    let wait = pollEvery;
    try {
      const headers = etag ? { "If-None-Match": etag } : {};
      const r = await fetch(api + "/events?poll=1&after=" + lastSeq, { credentials: "same-origin", cache: "no-store", headers });
      if (r.status === 200 || r.status === 204 || r.status === 304) {
        live.className = "live on";
        live.textContent = "live";
        etag = r.headers.get("ETag") || etag;
        if (r.status === 200) {
          const text = await r.text();
          let got = false;
          for (const line of text.split("\n")) {
            if (!line) continue;
            let ev;
            try { ev = JSON.parse(line); } catch { continue; }
            if (!(ev.event_seq > lastSeq)) continue;
            lastSeq = ev.event_seq;
            addEvent(ev, line);
            window.smithLastEvent = { seq: ev.event_seq, at: Date.now() };
            got = true;
          }
          if (got) scheduleRefresh();
          if (text.length > 1 << 20) wait = 0; // more to read
        }
      } else {
        throw new Error(r.statusText);
      }
    } catch (e) {
      live.className = "live";
      live.textContent = "reconnecting…";
      wait = 1000;
    }
    setTimeout(follow, wait);
  }

  // ---- actions: stop, retry ---------------------------------------------
  function drawActions() {
    const st = view.state;
    const box = $("#actions");
    const kids = [];
    if (view.driven && view.can_stop) {
      kids.push(el("button", { id: "stopbtn", onclick: () => act("stop", "stopping…", "Stop requested at ") }, "Stop run"));
    }
    if (!view.driven && view.can_resume && !st.isHalted && (st.status === "failed" || st.status === "interrupted" || st.status === "running")) {
      kids.push(el("button", { id: "retrybtn", class: "primary", onclick: () => act("retry", "retrying…", "Retried from this page at ") }, "Retry run"));
    }
    const msg = $("#actionmsg");
    box.replaceChildren(...kids, msg || el("span", { id: "actionmsg" }));
  }
  async function act(what, doing, done) {
    const msg = $("#actionmsg");
    for (const b of $("#actions").querySelectorAll("button")) b.disabled = true;
    msg.className = "";
    msg.textContent = doing;
    try {
      const r = await fetch(api + "/" + what, { method: "POST", credentials: "same-origin" });
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || r.statusText);
      msg.className = "ok";
      msg.textContent = done + new Date().toLocaleTimeString() + ".";
      scheduleRefresh();
    } catch (e) {
      msg.className = "error";
      msg.textContent = e.message;
      for (const b of $("#actions").querySelectorAll("button")) b.disabled = false;
    }
  }

  panZoom();
  // The elapsed times of a running run move on between events.
  setInterval(() => { if (view && view.state.status === "running") drawSummary(); }, 1000);
  refresh();
  follow();
})();
