// DOM helpers. Data only ever reaches the page as text nodes or attribute values: never as HTML.

export function h(tag, attrs = {}, ...children) {
  const ns = tag.startsWith("svg:") ? "http://www.w3.org/2000/svg" : null;
  const el = ns ? document.createElementNS(ns, tag.slice(4)) : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

export async function api(path, options = {}) {
  const init = { headers: { "content-type": "application/json" }, ...options };
  if (init.body !== undefined && typeof init.body !== "string") init.body = JSON.stringify(init.body);
  const response = await fetch(`/ui/api${path}`, init);
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok && !(response.status === 409 && data.verification)) {
    throw new Error(data.error || `HTTP ${response.status}`);
  }
  return data;
}

export function when(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  return new Date(seconds * 1000).toLocaleString();
}

export function duration(start, end) {
  if (!start) return "—";
  const ms = ((end || Date.now() / 1000) - start) * 1000;
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function badge(status) {
  return h("span", { class: `badge s-${status}`, "data-status": status }, status);
}

export function shortId(id) {
  return id.length > 12 ? id.slice(0, 12) : id;
}

export function errorBox(message) {
  return h("p", { class: "error", role: "alert" }, message);
}

// Server-sent events for a topic; `onChange` runs (not overlapping) whenever the topic changed.
export function live(topic, onChange) {
  const source = new EventSource(`/ui/api/events?topic=${encodeURIComponent(topic)}`);
  const dot = document.getElementById("live");
  let running = false, again = false;
  async function run() {
    if (running) { again = true; return; }
    running = true;
    try { await onChange(); } finally { running = false; }
    if (again) { again = false; run(); }
  }
  source.addEventListener("change", run);
  source.onopen = () => { dot.classList.add("on"); dot.title = "live"; };
  source.onerror = () => { dot.classList.remove("on"); dot.title = "reconnecting…"; };
  return () => source.close();
}
