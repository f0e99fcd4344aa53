// ragtrust web UI: plain JavaScript talking only to the public JSON API (/v1/...).
// Every piece of server data is inserted with textContent (never innerHTML).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const state = { verdict: null, docIndex: new Map(), pressed: null };

  const LEVEL_TEXT = {
    HIGH: "The answer is well supported by the sources and the sources look clean.",
    MEDIUM: "The answer is supported, but check the warnings before relying on it.",
    LOW: "The answer is weakly supported or the sources look questionable: do not rely on it.",
    "VERY LOW": "The answer is not supported or the sources look manipulated: do not use it.",
  };

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "className") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fmt(x, digits = 2) {
    return typeof x === "number" && isFinite(x) ? x.toFixed(digits) : "—";
  }

  function apiKey() {
    return sessionStorage.getItem("ragtrust-api-key") || "";
  }

  async function api(path, options = {}) {
    const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
    if (options.body !== undefined) headers["Content-Type"] = "application/json";
    const key = apiKey();
    if (key) headers["Authorization"] = "Bearer " + key;
    let response;
    try {
      response = await fetch(path, {
        method: options.method || "GET",
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
    } catch (err) {
      throw new Error("The server cannot be reached (" + err.message + ").");
    }
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const error = (data && data.error) || {};
      const wrapped = new Error(error.message || "The server answered " + response.status + ".");
      wrapped.status = response.status;
      wrapped.type = error.type || "http_error";
      throw wrapped;
    }
    return data;
  }

  function showMessage(text) {
    const box = $("message");
    box.textContent = text;
    box.hidden = !text;
  }

  // ------------------------------------------------------------------ server status

  async function checkReady() {
    const status = $("server-status");
    try {
      await api("readyz");
      status.textContent = "Server ready";
      status.className = "server-status ok";
    } catch (err) {
      status.textContent = err.type === "not_ready" ? "Models are loading…" : "Server not ready: " + err.message;
      status.className = "server-status bad";
      if (err.type === "not_ready") setTimeout(checkReady, 2000);
    }
  }

  // ------------------------------------------------------------------ asking

  async function ask(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question) {
      showMessage("Type a question first.");
      $("question").focus();
      return;
    }
    showMessage("");
    const button = $("ask-button");
    button.disabled = true;
    button.textContent = "Checking…";
    $("results").setAttribute("aria-busy", "true");
    try {
      const verdict = await api("v1/ask", { method: "POST", body: { question } });
      render(verdict);
    } catch (err) {
      if (err.status === 401) {
        $("key-box").open = true;
        showMessage("This server needs an API key: enter it under \u201cAPI key\u201d and ask again.");
        $("api-key").focus();
      } else {
        showMessage(err.message);
      }
    } finally {
      button.disabled = false;
      button.textContent = "Ask";
      $("results").setAttribute("aria-busy", "false");
    }
  }

  // ------------------------------------------------------------------ rendering

  function render(verdict) {
    state.verdict = verdict;
    state.docIndex = new Map();
    for (const doc of verdict.documents || []) {
      state.docIndex.set(doc.doc_id, doc);
      if (doc.url) state.docIndex.set(doc.url, doc);
    }
    $("placeholder").hidden = true;
    $("result-columns").hidden = false;
    $("viewer").hidden = true;
    renderAnswer(verdict);
    renderVerdict(verdict);
    renderConflicts(verdict);
    renderSources(verdict);
  }

  function stripMarkers(text, citations) {
    // generators write citations inline ("... [1]" or "... [https://...]"); we draw our own
    const known = new Set(citations || []);
    return text
      .replace(/\s*\[([^\[\]]{1,500})\]/g, (whole, inner) => (/^\d+$/.test(inner) || known.has(inner) ? "" : whole))
      .trim();
  }

  function renderAnswer(verdict) {
    const box = $("answer");
    box.replaceChildren();
    const numbers = new Map(); // doc id -> citation number, in order of first citation
    const number = (docId) => {
      if (!numbers.has(docId)) numbers.set(docId, numbers.size + 1);
      return numbers.get(docId);
    };
    const sentences = verdict.sentences || [];
    if (!sentences.length) {
      box.append(el("p", { text: verdict.answer || "No answer: the sources did not contain verified evidence." }));
      return;
    }
    // "The documentation does not explicitly state an answer...": the sentences below are the
    // closest evidence, not an answer; say so before them
    if (verdict.preface) box.append(el("p", { className: "preface", text: verdict.preface }));
    const para = el("p");
    for (const sentence of sentences) {
      const span = el("span", {
        className: "sentence" + (sentence.supported ? "" : " unsupported"),
        title: sentence.supported ? undefined : "Not confirmed by the sources",
        text: stripMarkers(sentence.text, sentence.citations),
      });
      para.append(span);
      const spans = sentence.spans || [];
      for (const s of spans) {
        const n = number(s.doc_id);
        para.append(
          el("button", {
            type: "button",
            className: "citation",
            "aria-label": "Citation " + n + ": show the cited passage in " + s.doc_id,
            "aria-pressed": "false",
            "aria-controls": "viewer",
            dataset: { doc: s.doc_id, start: String(s.start), end: String(s.end), n: String(n) },
            onclick: (e) => openCitation(s, e.currentTarget),
            text: "[" + n + "]",
          }),
        );
      }
      if (!spans.length) {
        for (const cite of sentence.citations || []) {
          const doc = state.docIndex.get(cite);
          const docId = doc ? doc.doc_id : cite;
          const n = number(docId);
          para.append(
            el("button", {
              type: "button",
              className: "citation unverified",
              "aria-label": "Citation " + n + " (no verified passage): open " + docId,
              title: "The cited source has no verified passage for this sentence",
              onclick: () => openDocument(docId, null),
              text: "[" + n + "?]",
            }),
          );
        }
      }
      para.append(" ");
    }
    box.append(para);
  }

  function levelClass(level) {
    return "level level-" + String(level || "").toLowerCase().replace(/\s+/g, "-");
  }

  function renderVerdict(v) {
    $("trust-level").textContent = v.trust_level;
    $("trust-level").className = levelClass(v.trust_level);
    $("trust-score").textContent = fmt(v.trust_score);
    const decision = $("decision");
    decision.textContent = v.trusted ? "Trusted" : "Flagged";
    decision.className = "decision " + (v.trusted ? "trusted" : "flagged");
    // the conditions of the decision that failed, in words (empty when trusted)
    decision.title = (v.decision_reasons || []).join("; ");
    $("level-explain").textContent = LEVEL_TEXT[v.trust_level] || "";
    $("f-value").textContent = fmt(v.factuality);
    $("c-value").textContent = fmt(v.consistency);
    $("p-value").textContent = fmt(v.poison_probability);
    const list = $("warnings");
    list.replaceChildren();
    if (!v.trusted && (v.decision_reasons || []).length) {
      list.append(el("li", { className: "error", text: "Flagged because " + v.decision_reasons.join("; ") + "." }));
    }
    for (const w of v.warnings || []) list.append(el("li", { text: w }));
    for (const e of v.errors || []) {
      list.append(el("li", { className: "error", text: "A check failed, so the answer is not trusted: " + e }));
    }
    if (v.max_similarity !== null && v.max_similarity !== undefined && v.retrieval_modifier < 1) {
      list.append(el("li", { text: "The closest source is only loosely related to the question, which lowers trust." }));
    }
    if (v.dampener < 1) {
      list.append(el("li", { text: "Trust was reduced because the sources look heavily manipulated." }));
    }
    if (!list.children.length) list.append(el("li", { className: "none", text: "No warnings." }));
  }

  // ------------------------------------------------------------------ conflicts

  // Tokens as the conflict diff cuts them (ragtrust.screening.claim_diff): 1.3 and 10,000 stay whole.
  const TOKEN = /\p{Nd}+(?:[.,]\p{Nd}+)*|\p{L}+|\p{Nd}+/gu;

  // Where the differing words sit in a claim, as [start, end] string indices. The words are a
  // phrase of the claim ("two to five years") or its changed tokens joined by spaces ("must
  // not", "don t"): found as one run of the claim's tokens, else one by one in order, adjacent
  // ones merged. Same rule as ragtrust.cli.render.diff_ranges.
  function diffRanges(text, words) {
    const fold = (t) => t.toLowerCase();
    const wanted = Array.from(String(words || "").matchAll(TOKEN), (m) => fold(m[0]));
    if (!wanted.length) return [];
    const tokens = Array.from(text.matchAll(TOKEN), (m) => ({ word: fold(m[0]), start: m.index, end: m.index + m[0].length }));
    const n = wanted.length;
    for (let i = 0; i + n <= tokens.length; i++) {
      if (wanted.every((w, k) => tokens[i + k].word === w)) return [[tokens[i].start, tokens[i + n - 1].end]];
    }
    const out = [];
    let cursor = 0;
    for (const word of wanted) {
      let at = -1;
      for (let k = cursor; k < tokens.length; k++) {
        if (tokens[k].word === word) {
          at = k;
          break;
        }
      }
      if (at < 0) continue;
      const { start, end } = tokens[at];
      const last = out[out.length - 1];
      if (last && (!text.slice(last[1], start).trim() || at === cursor)) last[1] = end;
      else out.push([start, end]);
      cursor = at + 1;
    }
    return out;
  }

  function claimQuote(claim, words) {
    const text = claim.text || "";
    const quote = el("blockquote", { className: "claim-text" });
    let last = 0;
    for (const [a, b] of diffRanges(text, words)) {
      quote.append(text.slice(last, a));
      quote.append(el("mark", { className: "diff", text: text.slice(a, b) }));
      last = b;
    }
    quote.append(text.slice(last));
    return quote;
  }

  function claimCell(claim, words, side, blamed) {
    // the vetted version is never the blamed side (it may share the document's id)
    const isBlamed = blamed !== null && blamed !== undefined && blamed === claim.doc_id && claim.origin !== "vetted";
    const head = el(
      "div",
      { className: "claim-head" },
      el("span", { className: "visually-hidden", text: side + " claim, from " }),
      el("button", {
        type: "button",
        className: "secondary claim-doc",
        "aria-label": "Open " + claim.doc_id + " at this claim",
        // a vetted-version claim indexes the old text: open the document without marking it
        onclick: () => openDocument(claim.doc_id, claim.origin === "vetted" ? null : Object.assign({ label: "claim in conflict" }, claim)),
        text: claim.doc_id,
      }),
      claim.origin && claim.origin !== "retrieved"
        ? el("span", { className: "badge origin", text: claim.origin === "vetted" ? "vetted version" : "from the store" })
        : null,
      isBlamed ? el("span", { className: "badge suspicious", text: "blamed" }) : null,
    );
    return el("div", { className: "claim" + (isBlamed ? " blamed" : "") }, head, claimQuote(claim, words));
  }

  function renderConflicts(v) {
    const conflicts = v.conflicts || [];
    const list = $("conflicts");
    list.replaceChildren();
    $("conflicts-panel").hidden = !conflicts.length;
    for (const c of conflicts) {
      const contested = c.blamed === null || c.blamed === undefined;
      const resolution = (c.resolution || "").replace(/^contested:?\s*/, "");
      const facts = [c.kind, "strength " + fmt(c.strength)];
      if (typeof c.contradiction === "number") facts.push("NLI contradiction " + fmt(c.contradiction));
      list.append(
        el(
          "li",
          { className: "conflict" },
          el(
            "div",
            { className: "conflict-head" },
            el("span", {
              className: "badge " + (contested ? "contested" : "suspicious"),
              text: contested ? "contested" : "blamed: " + c.blamed,
            }),
            el("span", { className: "meta", text: facts.join(" · ") + (resolution ? " — " + resolution : "") }),
          ),
          el(
            "div",
            { className: "conflict-sides" },
            claimCell(c.left, c.left_words, "Left", c.blamed),
            el("span", { className: "versus", "aria-hidden": "true", text: "vs" }),
            claimCell(c.right, c.right_words, "Right", c.blamed),
          ),
        ),
      );
    }
  }

  function renderSources(v) {
    const list = $("sources");
    list.replaceChildren();
    for (const doc of v.documents || []) {
      const signals = el("ul", { className: "signals" });
      for (const sig of doc.signals || []) {
        let text;
        if (sig.skipped) text = sig.name + ": skipped" + (sig.skip_reason ? " (" + sig.skip_reason + ")" : "");
        else text = sig.name + " " + fmt(sig.score) + ((sig.reasons || []).length ? " — " + sig.reasons.join("; ") : "");
        signals.append(el("li", { className: !sig.skipped && sig.score >= 0.5 ? "hot" : "", text }));
      }
      const pct = Math.round((doc.poison_probability || 0) * 100);
      list.append(
        el(
          "li",
          {},
          el(
            "div",
            { className: "src-head" },
            el("span", { className: "src-id", text: doc.doc_id }),
            el("span", {
              className: "badge " + (doc.suspicious ? "suspicious" : "kept"),
              text: doc.suspicious ? "suspicious · " + doc.action : doc.action,
            }),
            el("button", {
              type: "button",
              className: "secondary",
              "aria-label": "Open source " + doc.doc_id,
              onclick: () => openDocument(doc.doc_id, null),
              text: "Open",
            }),
          ),
          el(
            "div",
            { className: "poison" },
            el("span", { text: "Poison probability " + pct + "%" }),
            el("meter", { min: "0", max: "1", low: "0.3", high: "0.7", optimum: "0", value: String(doc.poison_probability || 0) }),
            doc.similarity !== null && doc.similarity !== undefined ? el("span", { text: "similarity " + fmt(doc.similarity) }) : null,
          ),
          doc.url && doc.url !== doc.doc_id ? el("div", { className: "meta", text: doc.url }) : null,
          signals,
        ),
      );
    }
    if (!list.children.length) list.append(el("li", { text: "No documents were retrieved." }));
  }

  // ------------------------------------------------------------------ document viewer

  function openCitation(span, button) {
    if (state.pressed) state.pressed.setAttribute("aria-pressed", "false");
    state.pressed = button;
    button.setAttribute("aria-pressed", "true");
    return openDocument(span.doc_id, span);
  }

  function suspiciousSpans(docId) {
    const doc = state.docIndex.get(docId);
    const out = [];
    for (const sig of (doc && doc.signals) || []) {
      if (sig.skipped) continue;
      for (const s of sig.spans || []) {
        if (s.doc_id === docId || !s.doc_id) out.push({ start: s.start, end: s.end, label: sig.name + ": " + (sig.reasons || []).join("; ") });
      }
    }
    return out;
  }

  // Offsets are Python code-point indices: split into code points, not UTF-16 units.
  function highlight(text, cited, suspicious) {
    const chars = Array.from(text);
    const ranges = [];
    if (cited) ranges.push({ start: cited.start, end: cited.end, kind: "cite", label: cited.label || "cited passage" });
    for (const s of suspicious) ranges.push({ start: s.start, end: s.end, kind: "suspicious", label: s.label });
    const cuts = new Set([0, chars.length]);
    for (const r of ranges) {
      r.start = Math.max(0, Math.min(chars.length, r.start));
      r.end = Math.max(r.start, Math.min(chars.length, r.end));
      cuts.add(r.start);
      cuts.add(r.end);
    }
    const points = [...cuts].sort((a, b) => a - b);
    const frag = document.createDocumentFragment();
    let first = null;
    for (let i = 0; i + 1 < points.length; i++) {
      const [a, b] = [points[i], points[i + 1]];
      if (a === b) continue;
      const piece = chars.slice(a, b).join("");
      const covering = ranges.filter((r) => r.start <= a && b <= r.end && r.start < r.end);
      if (!covering.length) {
        frag.append(piece);
        continue;
      }
      const kinds = [...new Set(covering.map((r) => r.kind))];
      const mark = el("mark", { className: kinds.join(" "), title: covering.map((r) => r.label).join(" · "), text: piece });
      if (kinds.includes("cite") && !first) {
        first = mark;
        mark.id = "cited";
        mark.tabIndex = -1;
      }
      frag.append(mark);
    }
    return { frag, first };
  }

  async function openDocument(docId, span) {
    const viewer = $("viewer");
    let doc;
    try {
      doc = await api("v1/documents/" + encodeURIComponent(docId));
    } catch (err) {
      showMessage("Could not open " + docId + ": " + err.message);
      return;
    }
    showMessage("");
    viewer.hidden = false;
    $("viewer-heading").textContent = doc.id;
    const meta = [];
    if (doc.url && doc.url !== doc.id) meta.push(doc.url);
    if (doc.source) meta.push("source: " + doc.source);
    const prov = doc.provenance || {};
    if (prov.tier) meta.push("tier: " + prov.tier);
    if (doc.content_hash) meta.push("sha256 " + doc.content_hash.slice(0, 12) + "…");
    $("viewer-meta").textContent = meta.join(" · ");
    const note = $("viewer-note");
    note.hidden = true;
    if (span) {
      const slice = Array.from(doc.text).slice(span.start, span.end).join("");
      if (slice !== span.text) {
        note.textContent = "The document changed since this answer was made: the highlighted text may not be the cited passage.";
        note.hidden = false;
      }
    }
    const { frag, first } = highlight(doc.text, span, suspiciousSpans(doc.id));
    const box = $("doc-text");
    box.replaceChildren(frag);
    if (first) {
      first.scrollIntoView({ block: "center" });
      first.focus({ preventScroll: true });
    } else {
      box.scrollTop = 0;
      $("viewer-heading").focus();
    }
  }

  function closeViewer() {
    $("viewer").hidden = true;
    if (state.pressed) {
      state.pressed.setAttribute("aria-pressed", "false");
      state.pressed.focus();
      state.pressed = null;
    }
  }

  // ------------------------------------------------------------------ wiring

  document.addEventListener("DOMContentLoaded", () => {
    $("ask-form").addEventListener("submit", ask);
    $("viewer-close").addEventListener("click", closeViewer);
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !$("viewer").hidden) closeViewer();
    });
    const keyInput = $("api-key");
    keyInput.value = apiKey();
    keyInput.addEventListener("change", () => sessionStorage.setItem("ragtrust-api-key", keyInput.value.trim()));
    checkReady();
  });

  // exposed for debugging in the console and for tests
  window.ragtrust = { diffRanges, openCitation, openDocument, render, state };
})();
