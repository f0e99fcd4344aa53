// ragtrust web UI: Markdown rendered with its source offsets intact.
//
// Spans are code-point offsets into the raw document text, so the text is never handed to a
// Markdown library that would re-flow it. Instead every code point of the source is walked
// once: Markdown syntax (`**`, `## `, `[`, `](x.md)`, backticks...) is marked hidden, the
// characters between delimiters get a style, and the DOM is built run by run from the source.
// A highlighted range (the cited span, a suspicious span) is cut in source offsets, so the
// rendered text of a mark is exactly the visible characters of its source range. Nodes are
// built with textContent only (never innerHTML).
"use strict";

(function () {
  const RT = (window.RT = window.RT || {});

  const PUNCT = new Set(Array.from("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"));
  const isSpace = (c) => c === undefined || /\s/u.test(c);
  const isWord = (c) => c !== undefined && /[\p{L}\p{Nd}]/u.test(c);
  const STYLE_TAGS = { strong: "strong", em: "em", code: "code", del: "del", link: "span" };
  const STYLE_ORDER = ["link", "strong", "em", "del", "code"];
  // the bidi controls (ALM, LRM, RLM, the embeddings/overrides U+202A-202E, the isolates
  // U+2066-2069): applied, an override shows "0.1 SLT" as "TLS 1.0" and reorders the text after
  // it, out of its sentence; shown escaped instead, as the CLI prints them (cli.render.printable)
  const BIDI = /^[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]$/u;

  // ------------------------------------------------------------------ inline syntax

  // Marks the inline syntax of chars[a, b): hidden[] for delimiters, styles[] per code point.
  function inline(chars, a, b, hidden, styles, links) {
    const style = (s, e, name) => {
      for (let k = s; k < e; k++) (styles[k] || (styles[k] = [])).push(name);
    };
    const hide = (s, e) => {
      for (let k = s; k < e; k++) hidden[k] = 1;
    };
    const delims = []; // emphasis delimiter runs: { at, len, ch, open, close }
    let i = a;
    while (i < b) {
      const c = chars[i];
      if (c === "\\" && i + 1 < b && PUNCT.has(chars[i + 1])) {
        hide(i, i + 1);
        i += 2;
        continue;
      }
      if (c === "`") {
        let n = 1;
        while (i + n < b && chars[i + n] === "`") n++;
        const close = findRun(chars, i + n, b, "`", n);
        if (close >= 0) {
          hide(i, i + n);
          hide(close, close + n);
          style(i + n, close, "code");
          i = close + n;
        } else {
          i += n;
        }
        continue;
      }
      if (c === "[" || (c === "!" && chars[i + 1] === "[")) {
        const open = c === "!" ? i + 1 : i;
        const link = parseLink(chars, open, b);
        if (link) {
          hide(i, open + 1);
          hide(link.textEnd, link.end);
          style(open + 1, link.textEnd, "link");
          for (let k = open + 1; k < link.textEnd; k++) links[k] = link.url;
          inline(chars, open + 1, link.textEnd, hidden, styles, links);
          i = link.end;
          continue;
        }
      }
      if (c === "<") {
        const end = autolink(chars, i, b);
        if (end > 0) {
          hide(i, i + 1);
          hide(end - 1, end);
          style(i + 1, end - 1, "link");
          for (let k = i + 1; k < end - 1; k++) links[k] = chars.slice(i + 1, end - 1).join("");
          i = end;
          continue;
        }
      }
      if (c === "*" || c === "_" || c === "~") {
        let n = 1;
        while (i + n < b && chars[i + n] === c) n++;
        const before = i > a ? chars[i - 1] : undefined;
        const after = i + n < b ? chars[i + n] : undefined;
        let open = !isSpace(after);
        let close = !isSpace(before);
        if (c === "_") {
          open = open && !isWord(before);
          close = close && !isWord(after);
        }
        if (c === "~" && n !== 2) open = close = false;
        if (open || close) delims.push({ at: i, len: n, ch: c, open, close });
        i += n;
        continue;
      }
      i++;
    }
    matchEmphasis(delims, hide, style);
  }

  function findRun(chars, from, to, ch, n) {
    let k = from;
    while (k < to) {
      if (chars[k] !== ch) {
        k++;
        continue;
      }
      let m = 1;
      while (k + m < to && chars[k + m] === ch) m++;
      if (m === n) return k;
      k += m;
    }
    return -1;
  }

  // [text](url "title"): the text's end and the link's end, or null. Brackets nest.
  function parseLink(chars, open, b) {
    let depth = 0;
    let k = open;
    for (; k < b; k++) {
      if (chars[k] === "\\") {
        k++;
        continue;
      }
      if (chars[k] === "[") depth++;
      else if (chars[k] === "]" && --depth === 0) break;
    }
    if (k >= b || chars[k + 1] !== "(") return null;
    const textEnd = k;
    let parens = 0;
    for (let m = k + 1; m < b; m++) {
      if (chars[m] === "(") parens++;
      else if (chars[m] === ")" && --parens === 0) {
        const target = chars.slice(k + 2, m).join("").trim().split(/\s+/)[0] || "";
        return { textEnd, end: m + 1, url: target.replace(/^<|>$/g, "") };
      }
    }
    return null;
  }

  function autolink(chars, i, b) {
    for (let k = i + 1; k < b && k < i + 2048; k++) {
      if (chars[k] === ">") {
        const inner = chars.slice(i + 1, k).join("");
        return /^[a-z][a-z0-9+.-]{1,31}:[^\s<>]+$/i.test(inner) || /^[^\s@<>]+@[^\s@<>]+\.[a-z]+$/i.test(inner) ? k + 1 : -1;
      }
      if (isSpace(chars[k])) return -1;
    }
    return -1;
  }

  // Pairs emphasis delimiter runs (a simplified CommonMark rule: nearest opener of the same
  // character; two or more on both sides make strong, one makes emphasis, ~~ strikes out).
  function matchEmphasis(delims, hide, style) {
    const stack = [];
    for (const d of delims) {
      if (d.close) {
        for (let s = stack.length - 1; s >= 0 && d.len > 0; s--) {
          const o = stack[s];
          if (o.ch !== d.ch || o.len === 0) continue;
          while (o.len > 0 && d.len > 0) {
            const use = d.ch === "~" ? 2 : o.len >= 2 && d.len >= 2 ? 2 : 1;
            if (o.len < use || d.len < use) break;
            const openEnd = o.at + o.len;
            hide(openEnd - use, openEnd);
            hide(d.at, d.at + use);
            style(openEnd, d.at, d.ch === "~" ? "del" : use === 2 ? "strong" : "em");
            o.len -= use;
            d.len -= use;
            d.at += use;
          }
          stack.length = o.len > 0 ? s + 1 : s;
        }
      }
      if (d.open && d.len > 0) stack.push(d);
    }
  }

  // ------------------------------------------------------------------ block syntax

  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+|$)/u;
  const BULLET = /^([ \t]*)([-*+])[ \t]+/u;
  const ORDERED = /^([ \t]*)\d{1,9}[.)][ \t]+/u;
  const QUOTE = /^ {0,3}>[ \t]?/u;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/u;
  const FENCE = /^ {0,3}(`{3,}|~{3,})/u;

  // A front-matter block opening the text (YAML between --- lines, TOML between +++ lines) by
  // the rule of ragtrust.text.front_matter_end: every line of it a key, a comment, a list item,
  // a continuation or blank. The code-point offset of its closing line's end, else 0.
  const FM_OPEN = /^(---|\+\+\+)[ \t]*\r?\n/u;
  const FM_CLOSE = { "---": /^(?:---|\.\.\.)[ \t]*$/u, "+++": /^\+\+\+[ \t]*$/u };
  const FM_LINE = /^(?:[ \t]*|[ \t].*|#.*|-(?:[ \t].*)?|[[\]{}"'].*|(?:"[^"\n]*"|'[^'\n]*'|[\p{L}\p{N}_][\p{L}\p{N}_.:/-]*)[ \t]*[:=](?:[ \t].*)?)$/su;

  function frontMatterEnd(text) {
    const open = FM_OPEN.exec(text);
    if (!open) return 0;
    for (let at = open[0].length; at <= text.length; ) {
      const nl = text.indexOf("\n", at);
      const line = text.slice(at, nl < 0 ? text.length : nl).replace(/\r$/u, "");
      if (FM_CLOSE[open[1]].test(line)) return Array.from(text.slice(0, at + line.length)).length;
      if (nl < 0 || !FM_LINE.test(line)) return 0;
      at = nl + 1;
    }
    return 0;
  }

  // The lines of chars with their block kind; marks hidden block syntax and inline syntax.
  // Front matter is metadata (as the server reads it): its lines are shown as they are, muted.
  function blocks(chars, hidden, styles, links) {
    const lines = [];
    const meta = frontMatterEnd(chars.join(""));
    let fence = null;
    let start = 0;
    for (let k = 0; k <= chars.length; k++) {
      if (k < chars.length && chars[k] !== "\n") continue;
      const end = k > start && chars[k - 1] === "\r" ? k - 1 : k; // a \r\n break is all line break
      const line = { start, end, kind: "p", level: 0 };
      const text = chars.slice(start, end).join("");
      const hideTo = (n) => {
        for (let m = start; m < start + n; m++) hidden[m] = 1;
      };
      const f = FENCE.exec(text);
      if (start < meta) {
        line.kind = "meta";
        line.edge = start === 0 || end >= meta; // its --- / +++ lines
        if (line.edge) hideTo(end - start);
      } else if (fence) {
        if (f && f[1][0] === fence[0] && f[1].length >= fence.length && !text.slice(f[0].length).trim()) {
          line.kind = "fence";
          fence = null;
        } else {
          line.kind = "code";
        }
      } else if (f && !(f[1][0] === "`" && text.slice(f[0].length).includes("`"))) {
        line.kind = "fence";
        fence = f[1];
      } else if (!text.trim()) {
        line.kind = "blank";
      } else if (RULE.test(text)) {
        line.kind = "rule";
      } else {
        let m;
        let from = 0;
        if ((m = HEADING.exec(text))) {
          line.kind = "heading";
          line.level = m[1].length;
          from = Array.from(m[0]).length;
          hideTo(from);
          const closing = /[ \t]+#+[ \t]*$/u.exec(text);
          if (closing && closing.index >= m[0].length) {
            const cut = start + Array.from(text.slice(0, closing.index)).length;
            for (let q = cut; q < end; q++) hidden[q] = 1;
          }
        } else if ((m = BULLET.exec(text))) {
          line.kind = "li";
          line.level = Math.min(6, Math.floor(m[1].replace(/\t/g, "    ").length / 2));
          from = Array.from(m[0]).length;
          hideTo(from);
        } else if ((m = ORDERED.exec(text))) {
          line.kind = "oli";
          line.level = Math.min(6, Math.floor(m[1].length / 2));
          from = Array.from(m[1]).length;
          hideTo(from);
        } else if ((m = QUOTE.exec(text))) {
          line.kind = "quote";
          from = Array.from(m[0]).length;
          hideTo(from);
        } else if (/^\s*\|.*\|\s*$/u.test(text)) {
          line.kind = "table";
        }
        if (line.kind !== "table") inline(chars, start + from, end, hidden, styles, links);
      }
      if (line.kind === "fence" || line.kind === "rule") hideTo(end - start);
      for (let q = end; q <= k && q < chars.length; q++) hidden[q] = 1; // the line break: each line is its own block
      lines.push(line);
      start = k + 1;
    }
    return lines;
  }

  // ------------------------------------------------------------------ building the DOM

  // Clamped ranges [{start, end, kind, label}] and the ranges covering [a, b).
  function covering(ranges, a) {
    return ranges.filter((r) => r.start <= a && a < r.end);
  }

  // Appends chars[a, b) to parent, run by run: same styles, link and highlights in a run.
  function emit(parent, chars, a, b, hidden, styles, links, ranges, state) {
    let k = a;
    while (k < b) {
      if (hidden[k]) {
        k++;
        continue;
      }
      const key = (i) =>
        (styles[i] || []).join(" ") + "|" + (links[i] || "") + "|" + covering(ranges, i).map((r) => r.id).join(",") + (BIDI.test(chars[i]) ? "|bidi" + i : "");
      const runKey = key(k);
      let e = k + 1;
      while (e < b && !hidden[e] && key(e) === runKey) e++;
      let node = BIDI.test(chars[k]) ? bidiControl(chars[k]) : document.createTextNode(chars.slice(k, e).join(""));
      const names = [...new Set(styles[k] || [])].sort((x, y) => STYLE_ORDER.indexOf(y) - STYLE_ORDER.indexOf(x));
      for (const name of names) {
        const wrap = document.createElement(STYLE_TAGS[name]);
        if (name === "link") {
          wrap.className = "md-link";
          if (links[k]) wrap.title = links[k];
        }
        wrap.append(node);
        node = wrap;
      }
      const over = covering(ranges, k);
      if (over.length) {
        const kinds = [...new Set(over.map((r) => r.kind))];
        const mark = document.createElement("mark");
        mark.className = kinds.join(" ");
        mark.title = over.map((r) => r.label).join(" · ");
        mark.dataset.start = String(k);
        mark.append(node);
        node = mark;
        for (const kind of kinds) if (!state.first[kind]) state.first[kind] = mark;
      }
      parent.append(node);
      k = e;
    }
  }

  // a bidi control character as its escape (\u202e), in a run of its own
  function bidiControl(c) {
    const node = document.createElement("span");
    node.className = "md-bidi";
    node.title = "a bidirectional control character in the source, shown and not applied";
    node.textContent = "\\u" + c.codePointAt(0).toString(16).padStart(4, "0");
    return node;
  }

  function clampRanges(ranges, n) {
    return (ranges || [])
      .map((r, id) => ({ ...r, id, start: Math.max(0, Math.min(n, r.start)), end: Math.max(0, Math.min(n, r.end)) }))
      .filter((r) => r.start < r.end);
  }

  // A whole document: one block element per source line. Returns { node, first, lineAt }:
  // first[kind] is the first mark of each highlight kind; lineAt(offset) the block holding it.
  function renderDocument(text, ranges, options = {}) {
    const chars = Array.from(text || "");
    const hidden = new Uint8Array(chars.length);
    const styles = new Array(chars.length);
    const links = new Array(chars.length);
    const plain = options.markdown === false;
    const lines = plain ? plainLines(chars, hidden) : blocks(chars, hidden, styles, links);
    const marks = clampRanges(ranges, chars.length);
    const state = { first: {} };
    const root = document.createElement("div");
    root.className = "md" + (plain ? " md-plain" : "");
    const blocksOut = [];
    const inBand = (line) => options.band && line.start < options.band.end && line.end >= options.band.start;
    for (const line of lines) {
      const block = document.createElement("div");
      block.className = "md-" + line.kind + (line.kind === "heading" ? " md-h" + line.level : "");
      if (line.level && line.kind !== "heading") block.classList.add("md-indent-" + line.level);
      if (line.edge) block.classList.add("md-meta-edge");
      if (inBand(line)) block.classList.add("in-chunk");
      block.dataset.start = String(line.start);
      if (line.kind !== "fence" && line.kind !== "rule") emit(block, chars, line.start, line.end, hidden, styles, links, marks, state);
      root.append(block);
      blocksOut.push(block);
    }
    const lineAt = (offset) => {
      let best = blocksOut[0] || null;
      for (let i = 0; i < lines.length && lines[i].start <= offset; i++) best = blocksOut[i];
      return best;
    };
    return { node: root, first: state.first, lineAt };
  }

  function plainLines(chars, hidden) {
    const lines = [];
    let start = 0;
    for (let k = 0; k <= chars.length; k++) {
      if (k < chars.length && chars[k] !== "\n") continue;
      lines.push({ start, end: k, kind: start === k ? "blank" : "p", level: 0 });
      if (k < chars.length) hidden[k] = 1;
      start = k + 1;
    }
    return lines;
  }

  // A short text (an answer sentence, a claim) as inline Markdown in a fragment. A leading
  // list / heading / quote marker ("- ", "## ") is dropped: the sentence is shown alone.
  function renderInline(text, ranges) {
    const chars = Array.from(text || "");
    const hidden = new Uint8Array(chars.length);
    const styles = new Array(chars.length);
    const links = new Array(chars.length);
    const lead = /^\s*(?:#{1,6}[ \t]+|[-*+][ \t]+|>[ \t]?)/u.exec(text || "");
    const from = lead ? Array.from(lead[0]).length : 0;
    for (let k = 0; k < from; k++) hidden[k] = 1;
    inline(chars, from, chars.length, hidden, styles, links);
    const frag = document.createDocumentFragment();
    const state = { first: {} };
    emit(frag, chars, 0, chars.length, hidden, styles, links, clampRanges(ranges, chars.length), state);
    return frag;
  }

  // The visible text of source[start, end) once rendered (what a highlight of it shows).
  function visibleText(text, start, end) {
    const box = document.createElement("div");
    const { node } = renderDocument(text, [{ start, end, kind: "probe", label: "" }]);
    box.append(node);
    return Array.from(box.querySelectorAll("mark.probe"), (m) => m.textContent).join("");
  }

  RT.markdown = { renderDocument, renderInline, visibleText };
})();
