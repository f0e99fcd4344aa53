// ragtrust web UI: plain JavaScript talking only to the public JSON API (/v1/...).
// The modules: ui.js (helpers), markdown.js (Markdown with offsets), verdict.js (verdict,
// conflicts, signals), viewer.js (the source viewer), log.js (the Log view); this file asks
// and draws the answer. Every piece of server data is inserted with textContent (never innerHTML).
"use strict";

(function () {
  const RT = window.RT;
  const { $, el, api, state, showMessage } = RT;

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
      if (doc.url && !state.docIndex.has(doc.url)) state.docIndex.set(doc.url, doc);
    }
    $("placeholder").hidden = true;
    $("result-columns").hidden = false;
    RT.viewer.closeViewer();
    state.citeNumbers = new Map();
    renderAnswer(verdict);
    RT.verdict.renderVerdict(verdict);
    RT.verdict.renderConflicts(verdict);
    RT.verdict.renderSources(verdict);
  }

  function stripMarkers(text, citations) {
    // generators write citations inline ("... [1]" or "... [https://...]"); we draw our own
    const known = new Set(citations || []);
    return text
      .replace(/\s*\[([^\[\]]{1,500})\](?!\()/g, (whole, inner) => (/^\d+$/.test(inner) || known.has(inner) ? "" : whole))
      .trim();
  }

  // Does span s stand for the citation target cite (a URL, a document or chunk id)?
  function spanCites(s, cite) {
    const doc = state.docIndex.get(s.doc_id);
    return s.url === cite || s.doc_id === cite || (doc && doc.url === cite) || s.doc_id.split("#")[0] === cite;
  }

  // The citations of each sentence, numbered as the CLI numbers them (the [n] markers of
  // ragtrust.evidence.citations.render_answer): one number per cited source (its URL), in the
  // order of first citation, each number once in a sentence. Returns, per sentence,
  // [{ n, span, cite }] (span null when the citation has no verified passage).
  function numberCitations(sentences) {
    const numbers = new Map();
    const number = (key) => {
      if (!numbers.has(key)) numbers.set(key, numbers.size + 1);
      return numbers.get(key);
    };
    state.citeNumbers = numbers;
    return sentences.map((sentence) => {
      const spans = sentence.spans || [];
      const used = new Set();
      const seen = new Set();
      const out = [];
      for (const cite of sentence.citations || []) {
        const n = number(cite);
        if (seen.has(n)) continue;
        seen.add(n);
        const i = spans.findIndex((s, k) => !used.has(k) && spanCites(s, cite));
        if (i >= 0) used.add(i);
        out.push({ n, span: i >= 0 ? spans[i] : null, cite });
      }
      spans.forEach((s, k) => {
        if (used.has(k)) return;
        const doc = state.docIndex.get(s.doc_id);
        const key = s.url || (doc && doc.url) || s.doc_id;
        const n = number(key);
        if (seen.has(n)) return;
        seen.add(n);
        out.push({ n, span: s, cite: key });
      });
      return out;
    });
  }

  function citationButton({ n, span, cite }) {
    if (span) {
      return el("button", {
        type: "button",
        className: "citation",
        "aria-label": "Citation " + n + ": show the cited passage in " + span.doc_id + (span.page ? ", p. " + span.page : ""),
        "aria-pressed": "false",
        "aria-controls": "viewer",
        dataset: { doc: span.doc_id, start: String(span.start), end: String(span.end), n: String(n) },
        onclick: (e) => RT.viewer.openCitation(span, e.currentTarget),
        text: "[" + n + "]",
      });
    }
    const doc = state.docIndex.get(cite);
    const docId = doc ? doc.doc_id : cite;
    return el("button", {
      type: "button",
      className: "citation unverified",
      "aria-label": "Citation " + n + " (no verified passage): open " + docId,
      title: "The cited source has no verified passage for this sentence",
      dataset: { n: String(n) },
      onclick: () => RT.viewer.openDocument(docId, null),
      text: "[" + n + "?]",
    });
  }

  function renderAnswer(verdict) {
    const box = $("answer");
    box.replaceChildren();
    const sentences = verdict.sentences || [];
    if (!sentences.length) {
      const text = verdict.answer || "No answer: the sources did not contain verified evidence.";
      for (const paragraph of text.split(/\n\s*\n/)) box.append(el("p", {}, RT.markdown.renderInline(paragraph.trim(), [])));
      return;
    }
    // "The documentation does not explicitly state an answer...": the sentences below are the
    // closest evidence, not an answer; say so before them
    if (verdict.preface) box.append(el("p", { className: "preface", text: verdict.preface }));
    const para = el("p");
    const cited = numberCitations(sentences);
    sentences.forEach((sentence, i) => {
      para.append(
        el(
          "span",
          {
            className: "sentence" + (sentence.supported ? "" : " unsupported"),
            title: sentence.supported ? undefined : "Not confirmed by the sources",
          },
          RT.markdown.renderInline(stripMarkers(sentence.text, sentence.citations), []),
        ),
      );
      for (const c of cited[i]) para.append(citationButton(c));
      para.append(" ");
    });
    box.append(para);
  }

  // ------------------------------------------------------------------ wiring

  document.addEventListener("DOMContentLoaded", () => {
    $("ask-form").addEventListener("submit", ask);
    const keyInput = $("api-key");
    keyInput.value = RT.apiKey();
    keyInput.addEventListener("change", () => sessionStorage.setItem("ragtrust-api-key", keyInput.value.trim()));
    checkReady();
  });

  // exposed for debugging in the console and for tests
  window.ragtrust = {
    diffRanges: RT.verdict.diffRanges,
    markdown: RT.markdown,
    numberCitations,
    openCitation: RT.viewer.openCitation,
    openDocument: RT.viewer.openDocument,
    render,
    state,
  };
})();
