// The DAG: steps as nodes coloured by status, one edge per ref labelled with the path it reads,
// `depends_on` edges dashed. Small graphs are laid out by dagre (crossings minimised); past
// DAGRE_LIMIT nodes a linear-time layered layout keeps a 1,000-step page under a second.
import * as dagre from "./vendor/dagre.esm.js";
import { h } from "./dom.js";

export const DAGRE_LIMIT = 120;
const W = 168, H = 40, GAP_X = 70, GAP_Y = 18;

export function layout(nodes, edges, rankdir = "LR") {
  return nodes.length <= DAGRE_LIMIT ? dagreLayout(nodes, edges, rankdir) : layered(nodes, edges);
}

function dagreLayout(nodes, edges, rankdir) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir, nodesep: GAP_Y, ranksep: GAP_X, edgesep: 10, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.name, { width: W, height: H });
  edges.forEach((e, i) => {
    const label = e.label || "";
    g.setEdge(e.source, e.target, { width: label ? Math.min(label.length * 6.5 + 8, 160) : 0, height: label ? 14 : 0, labelpos: "c" }, `e${i}`);
  });
  dagre.layout(g);
  const pos = new Map(nodes.map((n) => { const p = g.node(n.name); return [n.name, { x: p.x - W / 2, y: p.y - H / 2 }]; }));
  const routes = edges.map((e, i) => {
    const data = g.edge({ v: e.source, w: e.target, name: `e${i}` });
    return { points: data.points, labelAt: data.x !== undefined ? { x: data.x, y: data.y } : mid(data.points) };
  });
  const graph = g.graph();
  return { pos, routes, width: graph.width + 24, height: graph.height + 24 };
}

function layered(nodes, edges) {
  // rank = longest path from a source (Kahn's order); rows ordered by the mean row of predecessors
  const preds = new Map(nodes.map((n) => [n.name, []]));
  const succs = new Map(nodes.map((n) => [n.name, []]));
  for (const e of edges) {
    if (preds.has(e.target) && succs.has(e.source)) { preds.get(e.target).push(e.source); succs.get(e.source).push(e.target); }
  }
  const indeg = new Map(nodes.map((n) => [n.name, preds.get(n.name).length]));
  const rank = new Map();
  const queue = nodes.filter((n) => indeg.get(n.name) === 0).map((n) => n.name);
  for (let i = 0; i < queue.length; i++) {
    const name = queue[i];
    const r = Math.max(-1, ...preds.get(name).map((p) => rank.get(p) ?? -1)) + 1;
    rank.set(name, r);
    for (const s of succs.get(name)) { indeg.set(s, indeg.get(s) - 1); if (indeg.get(s) === 0) queue.push(s); }
  }
  for (const n of nodes) if (!rank.has(n.name)) rank.set(n.name, 0); // a cycle cannot be stored; guard anyway
  const columns = [];
  for (const n of nodes) (columns[rank.get(n.name)] ||= []).push(n.name);
  const row = new Map();
  for (const column of columns) {
    if (!column) continue;
    const key = (name) => { const p = preds.get(name); return p.length ? p.reduce((a, q) => a + row.get(q), 0) / p.length : 0; };
    column.sort((a, b) => key(a) - key(b)).forEach((name, i) => row.set(name, i));
  }
  const pos = new Map(nodes.map((n) => [n.name, { x: 12 + rank.get(n.name) * (W + GAP_X), y: 12 + row.get(n.name) * (H + GAP_Y) }]));
  const routes = edges.map((e) => {
    const a = pos.get(e.source), b = pos.get(e.target);
    if (!a || !b) return { points: [], labelAt: { x: 0, y: 0 } };
    const points = [{ x: a.x + W, y: a.y + H / 2 }, { x: b.x, y: b.y + H / 2 }];
    return { points, labelAt: mid(points) };
  });
  const rows = Math.max(1, ...columns.map((c) => (c ? c.length : 0)));
  return { pos, routes, width: 24 + columns.length * (W + GAP_X), height: 24 + rows * (H + GAP_Y) };
}

function mid(points) {
  if (!points.length) return { x: 0, y: 0 };
  const a = points[Math.floor((points.length - 1) / 2)], b = points[Math.ceil((points.length - 1) / 2)];
  return { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
}

function pathOf(points) {
  if (points.length < 2) return "";
  if (points.length === 2) {
    const [a, b] = points, dx = (b.x - a.x) / 2;
    return `M${a.x},${a.y} C${a.x + dx},${a.y} ${b.x - dx},${b.y} ${b.x},${b.y}`;
  }
  return "M" + points.map((p) => `${p.x},${p.y}`).join(" L");
}

// The SVG of a graph; `onSelect(name)` when a node is clicked.
export function renderGraph(nodes, edges, onSelect, rankdir = "LR") {
  const { pos, routes, width, height } = layout(nodes, edges, rankdir);
  const svg = h("svg:svg", { class: "dag", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "steps and their refs" });
  svg.append(h("svg:defs", {}, h("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, h("svg:path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
  const edgeLayer = h("svg:g", { class: "edges" });
  edges.forEach((e, i) => {
    const route = routes[i];
    const g = h("svg:g", { class: `edge k-${e.kind}`, "data-source": e.source, "data-target": e.target, "data-kind": e.kind, "data-label": e.label || "" },
      h("svg:path", { d: pathOf(route.points), "marker-end": "url(#arrow)" }, h("svg:title", {}, e.ref || `${e.target} depends on ${e.source}`)));
    if (e.label) g.append(h("svg:text", { x: route.labelAt.x, y: route.labelAt.y - 3, "text-anchor": "middle", class: "edge-label" }, e.label));
    edgeLayer.append(g);
  });
  const nodeLayer = h("svg:g", { class: "nodes" });
  for (const n of nodes) {
    const p = pos.get(n.name);
    const status = n.status || "template";
    const g = h("svg:g", { class: `node s-${status}`, transform: `translate(${p.x},${p.y})`, "data-step": n.name, "data-status": status, tabindex: 0, role: "button" },
      h("svg:rect", { width: W, height: H, rx: 6 }),
      h("svg:text", { x: 10, y: 17, class: "node-name" }, clip(n.name, 24)),
      h("svg:text", { x: 10, y: 32, class: "node-tool" }, clip(n.tool || n.kind || "", 28)));
    if (onSelect) {
      g.addEventListener("click", () => onSelect(n.name));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") onSelect(n.name); });
    }
    nodeLayer.append(g);
  }
  svg.append(edgeLayer, nodeLayer);
  return svg;
}

function clip(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

// A JSON value as text, with refs (`@step.path`, `{{@step.path}}`) as links to their source step.
const REF = /\{\{\s*@([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}\}|^@([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][\w-]*|\[\d+\]|\[\*\]|\.\*)*)$/g;
export function jsonView(value, onRef) {
  const text = JSON.stringify(value === undefined ? null : value, null, 2);
  const pre = h("pre", { class: "json" });
  if (!onRef) { pre.textContent = text; return pre; }
  // Walk the JSON's string tokens; only inside strings can refs appear.
  const token = /"(?:[^"\\]|\\.)*"/g;
  let last = 0, m;
  while ((m = token.exec(text))) {
    pre.append(text.slice(last, m.index));
    pre.append(...stringWithRefs(m[0], onRef));
    last = m.index + m[0].length;
  }
  pre.append(text.slice(last));
  return pre;
}

function stringWithRefs(quoted, onRef) {
  const raw = JSON.parse(quoted);
  if (typeof raw !== "string" || !raw.includes("@") || raw.startsWith("@@")) return [quoted];
  const parts = [];
  let last = 0, m;
  const body = quoted.slice(1, -1);
  REF.lastIndex = 0;
  while ((m = REF.exec(body))) {
    const step = m[1] || m[3];
    if (!step) break;
    parts.push(body.slice(last, m.index));
    const reserved = ["input", "item", "index"].includes(step);
    parts.push(h("a", { class: reserved ? "ref ref-input" : "ref", href: "#", "data-ref-step": step, onclick: (ev) => { ev.preventDefault(); if (!reserved) onRef(step); } }, m[0]));
    last = m.index + m[0].length;
  }
  if (!parts.length) return [quoted];
  parts.push(body.slice(last));
  return ['"', ...parts, '"'];
}
