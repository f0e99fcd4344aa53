// ragtrust web UI: the helpers every view shares (DOM building, the JSON API, messages).
// Every piece of server data is inserted with textContent (never innerHTML).
"use strict";

(function () {
  const RT = (window.RT = window.RT || {});
  const $ = (id) => document.getElementById(id);

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
      if (child === null || child === undefined || child === false) continue;
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

  function levelClass(level) {
    return "level level-" + String(level || "").toLowerCase().replace(/\s+/g, "-");
  }

  // The app's shared state: the verdict shown, its documents by id and URL, the pressed citation.
  const state = { verdict: null, docIndex: new Map(), pressed: null };

  Object.assign(RT, { $, el, fmt, api, apiKey, showMessage, levelClass, state });
})();
