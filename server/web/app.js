"use strict";
// The page of `sandboxctl serve`: upload a skill, watch its status, read
// its report, list recent traces. Same-origin calls only; the token stays
// in this tab (sessionStorage), the provider key in the form.
(() => {
  const $ = id => document.getElementById(id);
  let current = "";
  let timer = 0;
  let needsToken = false;

  const headers = () => {
    const h = {};
    const t = $("token").value.trim();
    if (t) h["Authorization"] = "Bearer " + t;
    return h;
  };

  async function api(path, opts = {}) {
    opts.headers = Object.assign(headers(), opts.headers || {});
    const r = await fetch(path, opts);
    let body = null;
    const ct = r.headers.get("Content-Type") || "";
    if (ct.startsWith("application/json")) body = await r.json();
    if (!r.ok) throw new Error((body && body.error) || r.status + " " + r.statusText);
    return body;
  }

  function text(el, s) { el.textContent = s == null ? "" : String(s); }

  async function health() {
    try {
      const h = await api("/v1/health");
      needsToken = h.auth;
      text($("health"), `${h.status} · ${h.version} · queued ${h.queued} · running ${h.running}`);
    } catch (e) { text($("health"), "unreachable: " + e.message); }
  }

  async function list() {
    const tb = $("traces").querySelector("tbody");
    if (needsToken && !$("token").value.trim()) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = 5;
      text(td, "enter your API token to see your traces");
      tr.append(td);
      tb.replaceChildren(tr);
      return;
    }
    try {
      const l = await api("/v1/traces?limit=20");
      tb.replaceChildren(...l.traces.map(t => {
        const tr = document.createElement("tr");
        tr.className = "row";
        tr.dataset.id = t.id;
        for (const [v, cls] of [[t.id, ""], [t.skill.name, ""], [t.status + (t.cached ? " (cached)" : ""), ""], [t.verdict || "", t.verdict || ""], [t.created, ""]]) {
          const td = document.createElement("td");
          text(td, v);
          if (cls) td.className = cls;
          tr.append(td);
        }
        tr.addEventListener("click", () => watch(t.id));
        return tr;
      }));
    } catch (e) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = 5;
      td.className = "error";
      text(td, e.message);
      tr.append(td);
      tb.replaceChildren(tr);
    }
  }

  async function showReport(id) {
    const r = await fetch(`/v1/traces/${encodeURIComponent(id)}/report.html`, {headers: headers()});
    if (!r.ok) return;
    const blob = new Blob([await r.text()], {type: "text/html"});
    const f = $("report");
    if (f.dataset.url) URL.revokeObjectURL(f.dataset.url);
    f.dataset.url = URL.createObjectURL(blob);
    f.dataset.trace = id;
    f.src = f.dataset.url;
    $("report-section").hidden = false;
  }

  async function poll() {
    if (!current) return;
    let t;
    try { t = await api(`/v1/traces/${encodeURIComponent(current)}`); }
    catch (e) { text($("cur-error"), e.message); return; }
    $("current").hidden = false;
    text($("cur-id"), t.id);
    text($("cur-status"), t.status + (t.cached ? " (cached)" : ""));
    const v = $("cur-verdict");
    text(v, t.verdict || "");
    v.className = "verdict " + (t.verdict || "");
    text($("cur-error"), t.error || "");
    $("cur-incidents").replaceChildren(...t.incidents.map(i => {
      const li = document.createElement("li");
      text(li, `${i.severity}: ${i.title}`);
      return li;
    }));
    const rp = $("cur-reports");
    rp.replaceChildren();
    for (const [fmt, url] of Object.entries(t.reports || {}).sort()) {
      const a = document.createElement("a");
      a.href = "#";
      a.className = "report-link";
      a.dataset.format = fmt;
      text(a, "report." + fmt);
      a.addEventListener("click", async ev => {
        ev.preventDefault();
        if (fmt === "html") return showReport(t.id);
        const r = await fetch(url, {headers: headers()});
        const blob = new Blob([await r.text()], {type: "text/plain"});
        window.open(URL.createObjectURL(blob), "_blank", "noopener");
      });
      rp.append(a, " ");
    }
    if (t.status === "queued" || t.status === "running") {
      timer = setTimeout(poll, 1500);
    } else {
      list();
      if (t.reports && t.reports.html && $("report").dataset.trace !== t.id) showReport(t.id);
    }
  }

  function watch(id) {
    clearTimeout(timer);
    current = id;
    poll();
  }

  $("submit").addEventListener("submit", async ev => {
    ev.preventDefault();
    const out = $("submit-result");
    const fd = new FormData();
    const file = $("skill").files[0];
    if (!file) { text(out, "choose a skill archive"); return; }
    fd.append("skill", file);
    for (const k of ["driver", "provider", "model", "prompt", "timeout"]) {
      const v = $(k).value.trim();
      if (v) fd.append(k, v);
    }
    const h = {};
    const key = $("key").value;
    if (key) h["X-Provider-Key"] = key;
    text(out, "uploading…");
    try {
      const s = await api("/v1/traces", {method: "POST", body: fd, headers: h});
      text(out, s.cached ? `answered from ${s.cached_from}` : `queued as ${s.id}`);
      watch(s.id);
      list();
    } catch (e) { text(out, e.message); }
  });

  const tok = $("token");
  tok.value = sessionStorage.getItem("sandboxctl-token") || "";
  tok.addEventListener("change", () => { sessionStorage.setItem("sandboxctl-token", tok.value); list(); });

  health().then(list);
  setInterval(health, 10000);
})();
