// ragtrust web UI: the source viewer. Opens a cited chunk inside its whole document (the
// parent a chunk's metadata names), renders its Markdown with the offsets intact and marks
// the cited span and the text that triggered a poisoning signal. It scrolls only its own
// box: the answer stays where it is (a side column on wide screens, a bottom sheet on phones).
"use strict";

(function () {
  const RT = (window.RT = window.RT || {});
  const { $, api, state } = RT;
  // what the viewer shows; opened counts the documents asked for, so that only the last one
  // asked (not a slower earlier one, nor one asked before the viewer was closed) is drawn
  const view = { args: null, opened: 0 };

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
        if (s.doc_id !== docId && s.doc_id) continue;
        const where = Number.isInteger(s.page) ? ", p. " + s.page : "";
        out.push({ start: s.start, end: s.end, kind: "suspicious", label: sig.name + where + ": " + (sig.reasons || []).join("; ") });
      }
    }
    return out;
  }

  // The chunk's whole document when the store has it and its text still holds the chunk at
  // metadata.start: { doc, offset }; else the chunk alone at offset 0.
  async function wholeDocument(doc) {
    const meta = doc.metadata || {};
    const parentId = meta.parent_id;
    if (!parentId || parentId === doc.id || !Number.isInteger(meta.start)) return { doc, offset: 0, whole: false };
    try {
      const parent = await api("v1/documents/" + encodeURIComponent(parentId));
      const length = Array.from(doc.text).length;
      if (Array.from(parent.text).slice(meta.start, meta.start + length).join("") === doc.text) {
        return { doc: parent, offset: meta.start, whole: true };
      }
    } catch (_) {
      // the parent is gone or unreadable: the chunk alone still shows the span
    }
    return { doc, offset: 0, whole: false };
  }

  async function openDocument(docId, span) {
    const ticket = ++view.opened;
    let chunk;
    try {
      chunk = await api("v1/documents/" + encodeURIComponent(docId));
    } catch (err) {
      if (ticket === view.opened) RT.showMessage("Could not open " + docId + ": " + err.message);
      return;
    }
    const shown = await wholeDocument(chunk);
    if (ticket !== view.opened) return; // another document was asked for since, or the viewer closed
    RT.showMessage("");
    view.args = { chunk, shown, span };
    draw();
  }

  // what the viewer shows about the document, after its id: the cited span's PDF page first
  function metaLine(chunk, shown, span) {
    const meta = [];
    const m = chunk.metadata || {};
    if (span && Number.isInteger(span.page)) meta.push("p. " + span.page);
    if (shown.whole) {
      const length = Array.from(chunk.text).length;
      meta.push("passage " + (Number(m.chunk_index) + 1) + " of " + shown.doc.id + " (characters " + m.start + "–" + (m.start + length) + "), shown in the whole document");
    }
    if (m.heading) meta.push("section: " + m.heading);
    if (chunk.url && chunk.url !== chunk.id) meta.push(chunk.url);
    if (chunk.source) meta.push("source: " + chunk.source);
    const prov = chunk.provenance || {};
    if (prov.tier) meta.push("tier: " + prov.tier);
    if (chunk.content_hash) meta.push("sha256 " + chunk.content_hash.slice(0, 12) + "…");
    return meta.join(" · ");
  }

  function draw() {
    const { chunk, shown, span } = view.args;
    const viewer = $("viewer");
    viewer.hidden = false;
    document.body.classList.add("viewer-open");
    $("viewer-heading").textContent = chunk.id;
    $("viewer-meta").textContent = metaLine(chunk, shown, span);
    const note = $("viewer-note");
    note.hidden = true;
    if (span) {
      const slice = Array.from(chunk.text).slice(span.start, span.end).join("");
      if (slice !== span.text) {
        note.textContent = "The document changed since this answer was made: the highlighted text may not be the cited passage.";
        note.hidden = false;
      }
    }
    const at = shown.offset;
    const ranges = [];
    if (span) ranges.push({ start: span.start + at, end: span.end + at, kind: "cite", label: span.label || "cited passage" });
    for (const s of suspiciousSpans(chunk.id)) ranges.push({ ...s, start: s.start + at, end: s.end + at });
    const band = shown.whole ? { start: at, end: at + Array.from(chunk.text).length } : null;
    const rendered = RT.markdown.renderDocument(shown.doc.text, ranges, { band, markdown: $("viewer-markdown").checked });
    const box = $("doc-text");
    box.replaceChildren(rendered.node);
    const side = viewer.closest(".col-side");
    if (side) side.scrollTop = 0; // the viewer heads the side column
    const first = rendered.first.cite || null;
    if (first) {
      first.id = "cited";
      first.tabIndex = -1;
      scrollWithin(box, first);
      first.focus({ preventScroll: true });
    } else {
      const target = band ? rendered.lineAt(band.start) : null;
      if (target) scrollWithin(box, target, true);
      else box.scrollTop = 0;
      $("viewer-heading").focus({ preventScroll: true });
    }
    keepPressedInView(viewer);
    // what the viewer shows, for whoever waits on it (tests, scripts): "doc:start:end" or the id
    viewer.dataset.shown = span ? [span.doc_id, span.start, span.end].join(":") : chunk.id;
  }

  // Scrolls box (only box, never the page) so that target sits in its middle (or top).
  function scrollWithin(box, target, top) {
    const b = box.getBoundingClientRect();
    const t = target.getBoundingClientRect();
    const room = top ? 0 : (box.clientHeight - Math.min(t.height, box.clientHeight)) / 2;
    box.scrollTop += t.top - b.top - room;
  }

  // On a phone the viewer is a sheet over the bottom of the screen: when it covers the
  // citation just pressed, the page moves up just enough to show it above the sheet.
  function keepPressedInView(viewer) {
    const button = state.pressed;
    if (!button || getComputedStyle(viewer).position !== "fixed") return;
    const sheet = viewer.getBoundingClientRect();
    const r = button.getBoundingClientRect();
    if (r.bottom > sheet.top - 8) window.scrollBy(0, r.bottom - sheet.top + 24);
  }

  function closeViewer() {
    $("viewer").hidden = true;
    document.body.classList.remove("viewer-open");
    view.args = null;
    view.opened++; // a document still on its way is not shown
    if (state.pressed) {
      state.pressed.setAttribute("aria-pressed", "false");
      state.pressed.focus({ preventScroll: true });
      state.pressed = null;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("viewer-close").addEventListener("click", closeViewer);
    $("viewer-markdown").addEventListener("change", () => view.args && draw());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !$("viewer").hidden) closeViewer();
    });
  });

  RT.viewer = { openCitation, openDocument, closeViewer };
})();
