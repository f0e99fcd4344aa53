// ragtrust web UI, the Log view: recent verdicts from GET /v1/log, filtered by level.
// Plain JavaScript; server data is inserted with textContent only (never innerHTML).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const QUERY_CHARS = 120;

  // the JSON API helper every view shares (ui.js): API key, error body -> Error with .status
  const getJson = (path) => window.RT.api(path);

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function levelBadge(level) {
    const span = document.createElement("span");
    span.className = "level level-" + String(level).toLowerCase().replace(/\s+/g, "-");
    span.textContent = level;
    return span;
  }

  function short(text) {
    // in characters (code points), as the server counts them: never half an emoji
    const flat = Array.from(String(text || "").replace(/\s+/g, " ").trim());
    return flat.length <= QUERY_CHARS ? flat.join("") : flat.slice(0, QUERY_CHARS - 1).join("") + "\u2026";
  }

  function setStatus(text) {
    const status = $("log-status");
    status.textContent = text;
    status.hidden = !text;
  }

  function row(entry) {
    const tr = document.createElement("tr");
    tr.dataset.id = String(entry.id);
    tr.append(cell(entry.at.slice(0, 19).replace("T", " "), "log-time"));
    tr.append(cell(entry.operation));
    const level = cell("");
    level.append(levelBadge(entry.level));
    tr.append(level);
    tr.append(cell(entry.trust_score.toFixed(2), "num"));
    tr.append(cell(entry.decision, "decision-" + entry.decision));
    const query = cell(short(entry.query), "log-query");
    query.title = entry.query;
    tr.append(query);
    const open = document.createElement("button");
    open.type = "button";
    open.className = "secondary log-open";
    open.textContent = "Open";
    open.setAttribute("aria-label", "Open verdict " + entry.id);
    open.addEventListener("click", () => openEntry(entry.id));
    const action = cell("");
    action.append(open);
    tr.append(action);
    return tr;
  }

  async function loadLog() {
    const level = $("log-level").value;
    const limit = $("log-limit").value || "50";
    const params = new URLSearchParams({ limit });
    if (level) params.set("level", level);
    const body = $("log-rows");
    $("log-view").setAttribute("aria-busy", "true");
    try {
      const data = await getJson("v1/log?" + params.toString());
      body.replaceChildren(...data.entries.map(row));
      $("log-table").hidden = data.entries.length === 0;
      if (!data.enabled) setStatus("This server keeps no verdict log ([log] enabled = false).");
      else if (data.entries.length === 0) setStatus(level ? "No " + level + " verdicts logged yet." : "No verdicts logged yet.");
      else setStatus(data.entries.length + (data.entries.length === 1 ? " verdict" : " verdicts") + ", newest first.");
    } catch (err) {
      body.replaceChildren();
      $("log-table").hidden = true;
      setStatus(err.status === 401 ? "This server needs an API key: enter it under \u201cAPI key\u201d on the Ask view." : err.message);
    } finally {
      $("log-view").setAttribute("aria-busy", "false");
    }
  }

  async function openEntry(id) {
    try {
      const data = await getJson("v1/log/" + encodeURIComponent(id));
      location.hash = "#ask";
      showView("ask");
      if (window.ragtrust && window.ragtrust.render) window.ragtrust.render(data.verdict);
      $("question").value = data.verdict.query || "";
    } catch (err) {
      setStatus(err.message);
    }
  }

  function showView(name) {
    const log = name === "log";
    for (const id of ["ask-form", "results"]) $(id).hidden = log;
    if (log) $("message").hidden = true;
    $("log-view").hidden = !log;
    $("nav-ask").setAttribute("aria-current", log ? "false" : "page");
    $("nav-log").setAttribute("aria-current", log ? "page" : "false");
    if (log) loadLog();
  }

  function route() {
    showView(location.hash === "#log" ? "log" : "ask");
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("log-filter").addEventListener("submit", (event) => {
      event.preventDefault();
      loadLog();
    });
    $("log-level").addEventListener("change", loadLog);
    window.addEventListener("hashchange", route);
    route();
  });

  window.ragtrustLog = { loadLog, openEntry, showView };
})();
