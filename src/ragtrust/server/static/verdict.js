// ragtrust web UI: the verdict panel, the conflicts and the retrieved documents with their signals.
// Server data goes in with textContent (RT.el) or as rendered Markdown (RT.markdown), never innerHTML.
"use strict";

(function () {
  const RT = (window.RT = window.RT || {});
  const { $, el, fmt } = RT;

  const LEVEL_TEXT = {
    HIGH: "The answer is well supported by the sources and the sources look clean.",
    MEDIUM: "The answer is supported, but check the warnings before relying on it.",
    LOW: "The answer is weakly supported or the sources look questionable: do not rely on it.",
    "VERY LOW": "The answer is not supported or the sources look manipulated: do not use it.",
  };

  function renderVerdict(v) {
    $("trust-level").textContent = v.trust_level;
    $("trust-level").className = RT.levelClass(v.trust_level);
    $("trust-score").textContent = fmt(v.trust_score);
    const decision = $("decision");
    decision.textContent = v.trusted ? "Trusted" : "Flagged";
    decision.className = "decision " + (v.trusted ? "trusted" : "flagged");
    // the conditions of the decision that failed, in words (empty when trusted)
    decision.title = (v.decision_reasons || []).join("; ");
    $("level-explain").textContent = LEVEL_TEXT[v.trust_level] || "";
    const reasons = $("decision-reasons");
    reasons.replaceChildren();
    const compare = v.trust_score >= v.tau ? " \u2265 " : " < ";
    const head = "T = " + fmt(v.trust_score, 3) + compare + "\u03c4 " + fmt(v.tau);
    if (v.trusted) {
      reasons.append(el("li", { className: "ok", text: "Trusted: " + head + " and every condition of the decision holds." }));
    } else {
      for (const r of v.decision_reasons || []) reasons.append(el("li", { className: "error", text: r }));
      if (!reasons.children.length) reasons.append(el("li", { className: "error", text: "Flagged: " + head + "." }));
    }
    $("decision-heading").textContent = v.trusted ? "Why it is trusted" : "Why it is flagged";
    $("f-value").textContent = fmt(v.factuality);
    $("c-value").textContent = fmt(v.consistency);
    $("p-value").textContent = fmt(v.poison_probability);
    const detail = [head, "raw " + fmt(v.trust_raw, 3), "dampener " + fmt(v.dampener, 3), "retrieval \u00d7" + fmt(v.retrieval_modifier)];
    $("trust-detail").textContent = detail.join(" · ");
    const list = $("warnings");
    list.replaceChildren();
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

  // "p. 2" or "pp. 1, 3": the PDF pages of spans (or claims) that carry one, as the cited span shows its page
  function pagesText(spans) {
    const pages = [...new Set(spans.map((s) => s.page).filter(Number.isInteger))].sort((a, b) => a - b);
    if (!pages.length) return "";
    return (pages.length === 1 ? "p. " : "pp. ") + pages.join(", ");
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

  // string (UTF-16) index -> code-point offset, the unit of the Markdown renderer
  const codePoint = (text, index) => Array.from(text.slice(0, index)).length;

  function claimQuote(claim, words) {
    const text = claim.text || "";
    const ranges = diffRanges(text, words).map(([a, b]) => ({
      start: codePoint(text, a),
      end: codePoint(text, b),
      kind: "diff",
      label: "differs from the other claim",
    }));
    return el("blockquote", { className: "claim-text" }, RT.markdown.renderInline(text, ranges));
  }

  function claimCell(claim, words, side, blamed) {
    // the vetted version is never the blamed side (it may share the document's id)
    const isBlamed = blamed !== null && blamed !== undefined && blamed === claim.doc_id && claim.origin !== "vetted";
    const page = pagesText([claim]);
    const head = el(
      "div",
      { className: "claim-head" },
      el("span", { className: "claim-side", "aria-hidden": "true", text: side === "Left" ? "A" : "B" }),
      el("span", { className: "visually-hidden", text: side + " claim, from " }),
      el("button", {
        type: "button",
        className: "secondary claim-doc",
        "aria-label": "Open " + claim.doc_id + " at this claim" + (page ? ", " + page : ""),
        // a vetted-version claim indexes the old text: open the document without marking it
        onclick: () => RT.viewer.openDocument(claim.doc_id, claim.origin === "vetted" ? null : Object.assign({ label: "claim in conflict" }, claim)),
        text: claim.doc_id,
      }),
      page ? el("span", { className: "meta claim-page", title: "PDF page of the claim", text: page }) : null,
      claim.origin && claim.origin !== "retrieved"
        ? el("span", { className: "badge origin", text: claim.origin === "vetted" ? "vetted version" : "from the store" })
        : null,
      isBlamed ? el("span", { className: "badge suspicious", text: "blamed" }) : null,
    );
    const url = claim.url && claim.url !== claim.doc_id ? el("div", { className: "meta claim-src", text: claim.url }) : null;
    return el("div", { className: "claim" + (isBlamed ? " blamed" : "") }, head, url, claimQuote(claim, words));
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

  // ------------------------------------------------------------------ documents and signals

  function signalTable(doc) {
    const body = el("tbody");
    for (const sig of doc.signals || []) {
      const hot = !sig.skipped && sig.score >= 0.5;
      const why = sig.skipped ? "skipped" + (sig.skip_reason ? ": " + sig.skip_reason : "") : (sig.reasons || []).join("; ");
      // the PDF pages of the text that triggered the signal, before its reasons
      const pages = sig.skipped ? "" : pagesText(sig.spans || []);
      body.append(
        el(
          "tr",
          { className: (hot ? "hot" : "") + (sig.skipped ? " skipped" : ""), dataset: { signal: sig.name } },
          el("th", { scope: "row", className: "sig-name", text: sig.name }),
          el("td", { className: "sig-score num", text: sig.skipped ? "—" : fmt(sig.score) }),
          el(
            "td",
            { className: "sig-why" },
            pages ? el("span", { className: "sig-pages", title: "PDF pages of the text that triggered it", text: pages }) : null,
            pages && why ? " · " : null,
            why,
          ),
        ),
      );
    }
    if (!body.children.length) return el("p", { className: "meta", text: "No signals were run on this document." });
    return el(
      "table",
      { className: "signal-table" },
      el("caption", { className: "visually-hidden", text: "Signals of " + doc.doc_id }),
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Signal" }), el("th", { scope: "col", text: "Score" }), el("th", { scope: "col", text: "Why" }))),
      body,
    );
  }

  // "[n]": the number the answer cites this document's source by (its URL), if it does
  function citedAs(doc) {
    const numbers = RT.state.citeNumbers || new Map();
    const n = numbers.get(doc.url) || numbers.get(doc.doc_id) || numbers.get(doc.doc_id.split("#")[0]);
    return n ? el("span", { className: "cite-n", title: "Cited in the answer as [" + n + "]", text: "[" + n + "]" }) : null;
  }

  function renderSources(v) {
    const list = $("sources");
    list.replaceChildren();
    for (const doc of v.documents || []) {
      const p = doc.poison_probability || 0;
      list.append(
        el(
          "li",
          { className: "source", dataset: { doc: doc.doc_id } },
          el(
            "div",
            { className: "src-head" },
            citedAs(doc),
            el("span", { className: "src-id", text: doc.doc_id }),
            el("span", {
              className: "badge " + (doc.suspicious ? "suspicious" : "kept"),
              text: doc.suspicious ? "suspicious · " + doc.action : doc.action,
            }),
            el("button", {
              type: "button",
              className: "secondary",
              "aria-label": "Open source " + doc.doc_id,
              onclick: () => RT.viewer.openDocument(doc.doc_id, null),
              text: "Open",
            }),
          ),
          doc.url && doc.url !== doc.doc_id ? el("div", { className: "meta src-url", text: doc.url }) : null,
          el(
            "div",
            { className: "poison" },
            el("span", { className: "p-i", title: "Poison probability of this document", text: "P_i " + fmt(p) }),
            el("meter", { min: "0", max: "1", low: "0.3", high: "0.7", optimum: "0", value: String(p), "aria-label": "Poison probability " + Math.round(p * 100) + "%" }),
            doc.similarity !== null && doc.similarity !== undefined ? el("span", { className: "sim", text: "similarity " + fmt(doc.similarity) }) : null,
            typeof doc.weight === "number" ? el("span", { className: "weight", title: "This document's weight in the set's P", text: "weight " + fmt(doc.weight) }) : null,
          ),
          signalTable(doc),
        ),
      );
    }
    if (!list.children.length) list.append(el("li", { text: "No documents were retrieved." }));
  }

  RT.verdict = { renderVerdict, renderConflicts, renderSources, diffRanges };
})();
