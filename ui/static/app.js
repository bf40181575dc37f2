// The web view: a router over three stable paths and the pages behind them.
import { api, h, clear, append, badge, when, duration, shortId, errorBox, live } from "./dom.js";
import { renderGraph, jsonView } from "./graph.js";
import { reviewPanel } from "./review.js";

const main = document.getElementById("main");
const drawer = document.getElementById("drawer");
let stopLive = () => {};

function route() {
  stopLive();
  stopLive = () => {};
  closeDrawer();
  const path = decodeURIComponent(location.pathname.replace(/^\/ui/, "")) || "/";
  let m;
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("here", path.startsWith("/templates") === (a.dataset.nav === "templates"));
  if ((m = path.match(/^\/executions\/([^/]+)\/?$/))) return executionPage(m[1]);
  if ((m = path.match(/^\/templates\/([^/]+)\/?$/))) return templatePage(m[1]);
  if (path.match(/^\/templates\/?$/)) return templatesPage();
  return executionsPage();
}

export function go(path) {
  history.pushState(null, "", path);
  route();
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a[href^='/ui/']");
  if (!a || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
  ev.preventDefault();
  go(a.getAttribute("href"));
});
window.addEventListener("popstate", route);

// ---------------------------------------------------------------------------------- executions
const STATUSES = ["", "recording", "pending", "running", "paused", "succeeded", "failed", "cancelled"];

function executionsPage() {
  const params = new URLSearchParams(location.search);
  const status = h("select", { id: "filter-status", "aria-label": "status" }, STATUSES.map((s) => h("option", { value: s }, s || "any status")));
  const template = h("select", { id: "filter-template", "aria-label": "template" }, h("option", { value: "" }, "any template"));
  status.value = params.get("status") || "";
  const table = h("tbody", { id: "executions" });
  const problem = h("div");
  let limit = 100;
  const more = h("button", { type: "button", id: "more", class: "secondary", hidden: true, onclick: () => { limit = Math.min(limit + 100, 500); shown = null; load(); } }, "Show older");
  clear(main).append(
    h("h1", {}, "Executions"),
    h("div", { class: "filters" }, status, template),
    problem,
    h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["Execution", "Mode", "Template", "Status", "Started", "Updated"].map((t) => h("th", {}, t)))), table),
    h("p", {}, more),
  );
  let wantedTemplate = params.get("template") || ""; // until the template list is filled
  let shown = null, asked = 0;
  async function load() {
    const mine = ++asked; // a filter changed twice quickly: only the latest answer is shown
    const query = new URLSearchParams({ limit: String(limit) });
    if (status.value) query.set("status", status.value);
    if (template.value || wantedTemplate) query.set("template", template.value || wantedTemplate);
    try {
      const data = await api(`/executions?${query}`);
      if (mine !== asked) return;
      const text = JSON.stringify(data);
      if (text === shown) return;
      shown = text;
      fillTemplates(template, data.templates, template.value || wantedTemplate);
      if (template.value === wantedTemplate) wantedTemplate = "";
      clear(problem);
      clear(table).append(...data.executions.map(executionRow));
      more.hidden = !data.next_cursor || limit >= 500;
      if (!data.executions.length) table.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "Nothing yet: tool calls through the gateway are recorded here as they happen.")));
    } catch (err) {
      clear(problem).append(errorBox(err.message));
    }
  }
  function refilter() {
    const q = new URLSearchParams();
    if (status.value) q.set("status", status.value);
    if (template.value) q.set("template", template.value);
    history.replaceState(null, "", `/ui/${q.toString() ? "?" + q : ""}`);
    shown = null;
    load();
  }
  status.addEventListener("change", refilter);
  template.addEventListener("change", refilter);
  load();
  stopLive = live("executions", load);
}

function fillTemplates(select, names, chosen) {
  const have = [...select.options].map((o) => o.value).slice(1);
  if (have.join("\n") === names.join("\n")) return;
  clear(select).append(h("option", { value: "" }, "any template"), ...names.map((n) => h("option", { value: n }, n)));
  select.value = chosen;
}

function executionRow(e) {
  return h("tr", { "data-execution": e.id, "data-status": e.status },
    h("td", {}, h("a", { href: `/ui/executions/${e.id}`, class: "mono" }, shortId(e.id))),
    h("td", {}, e.mode === "record" ? "recording" : "replay"),
    h("td", {}, e.template ? h("a", { href: `/ui/templates/${encodeURIComponent(e.template)}` }, `${e.template} v${e.template_version ?? "?"}`) : "—"),
    h("td", {}, badge(e.status)),
    h("td", {}, when(e.created_at)),
    h("td", {}, when(e.updated_at)));
}

// ---------------------------------------------------------------------------------- one execution
function executionPage(id) {
  const state = { data: null, selected: null, view: "dag" };
  const head = h("div", { class: "exec-head" });
  const actions = h("div", { class: "actions" });
  const body = h("div", { class: "exec-body" });
  const problem = h("div");
  const review = h("section", { id: "review", hidden: true });
  clear(main).append(head, actions, problem, tabs(state, body), body, review);
  async function load() {
    let data;
    try {
      data = await api(`/executions/${encodeURIComponent(id)}`);
      clear(problem);
    } catch (err) {
      clear(problem).append(errorBox(err.message));
      return;
    }
    // Redraw only what changed: a redraw under the pointer would swallow a click.
    const text = JSON.stringify(data);
    if (text === state.text) return;
    if (!state.text) document.body.dataset.fetched = String(performance.now()); // the bench splits the time
    state.text = text;
    state.data = data;
    draw(state, head, actions, body, review, load);
    document.body.dataset.rendered = String(performance.now());
  }
  load();
  stopLive = live(`execution:${id}`, load);
}

function tabs(state, body) {
  const make = (view, label) => h("button", { type: "button", class: "tab", "data-view": view, onclick: () => { state.view = view; body.dataset.view = view; for (const b of bar.children) b.classList.toggle("here", b.dataset.view === view); } }, label);
  const bar = h("div", { class: "tabs" }, make("dag", "Graph"), make("timeline", "Timeline"));
  bar.children[0].classList.add("here");
  body.dataset.view = "dag";
  return bar;
}

function draw(state, head, actions, body, review, reload) {
  const d = state.data;
  clear(head).append(
    h("h1", {}, d.mode === "record" ? "Recording " : "Replay ", h("span", { class: "mono" }, shortId(d.id)), " ", badge(d.status)),
    h("p", { class: "muted" }, d.template ? ["template ", h("a", { href: `/ui/templates/${encodeURIComponent(d.template)}` }, `${d.template} v${d.template_version ?? "?"}`), " · "] : "", `started ${when(d.created_at)} · ${d.nodes.length} steps`, d.attempt > 1 ? ` · attempt ${d.attempt}` : "", d.schedule ? ` · schedule ${d.schedule}` : ""),
    d.error ? errorBox(d.error) : "",
    d.status === "succeeded" && d.mode === "auto" ? h("details", { class: "output", open: true }, h("summary", {}, "Output"), jsonView(d.output)) : "",
  );
  clear(actions);
  if (d.can_cancel) actions.append(h("button", { type: "button", id: "cancel", class: "danger", onclick: () => act(`/executions/${d.id}/cancel`, {}, actions, reload) }, "Cancel"));
  if (d.can_resume) {
    const answer = h("input", { id: "resume-response", placeholder: d.status === "paused" ? "answer (yes / no)" : "optional", "aria-label": "approval answer" });
    actions.append(
      d.prompt ? h("span", { class: "prompt" }, "Waiting for approval: ", typeof d.prompt === "string" ? d.prompt : JSON.stringify(d.prompt)) : "",
      answer,
      h("button", { type: "button", id: "resume", onclick: () => act(`/executions/${d.id}/resume`, { response: answer.value || null }, actions, reload) }, "Resume"));
  }
  if (d.can_retry) actions.append(h("button", { type: "button", id: "retry", title: "Run the failed step and everything after it again; succeeded steps keep their outputs", onclick: () => act(`/executions/${d.id}/retry`, {}, actions, reload) }, "Retry"));
  if (d.can_templatize && d.nodes.length) {
    actions.append(h("button", { type: "button", id: "save-as-template", onclick: () => { review.hidden = false; reviewPanel(review, d); review.scrollIntoView(); } }, "Save as template"));
  }
  const select = (name) => { state.selected = name; openDrawer(d, name, select); highlight(body, name); };
  clear(body).append(h("div", { class: "dag-wrap" }, renderGraph(d.nodes, d.edges, select)), timeline(d.nodes, select));
  const chosen = state.selected && d.nodes.find((n) => n.name === state.selected);
  if (chosen) {
    const shown = JSON.stringify(chosen);
    if (shown !== shownStep || drawer.hidden) openDrawer(d, state.selected, select);
    highlight(body, state.selected);
  }
}

async function act(path, payload, actions, reload) {
  for (const b of actions.querySelectorAll("button")) b.disabled = true;
  try {
    await api(path, { method: "POST", body: payload });
  } catch (err) {
    actions.append(errorBox(err.message));
  }
  await reload();
}

function highlight(body, name) {
  for (const el of body.querySelectorAll(".selected")) el.classList.remove("selected");
  for (const el of body.querySelectorAll(`[data-step="${CSS.escape(name)}"]`)) el.classList.add("selected");
}

function timeline(nodes, select) {
  const started = nodes.filter((n) => n.started_at);
  const t0 = Math.min(...started.map((n) => n.started_at));
  const t1 = Math.max(...started.map((n) => n.ended_at || Date.now() / 1000), t0 + 0.001);
  const span = t1 - t0;
  const rows = nodes.map((n) => {
    const left = n.started_at ? ((n.started_at - t0) / span) * 100 : 0;
    const width = n.started_at ? Math.max(((n.ended_at || t1) - n.started_at) / span * 100, 0.4) : 0;
    return h("div", { class: "tl-row", "data-step": n.name, onclick: () => select(n.name) },
      h("span", { class: "tl-name" }, n.name),
      h("span", { class: "tl-track" }, bar(n.status, left, width)),
      h("span", { class: "tl-time" }, duration(n.started_at, n.ended_at)));
  });
  return h("div", { class: "timeline" }, rows);
}

function bar(status, left, width) {
  const el = h("span", { class: `tl-bar s-${status}` });
  el.style.left = `${left}%`; // through the CSSOM: the page's policy refuses inline style attributes
  el.style.width = `${width}%`;
  return el;
}

let shownStep = null;
function openDrawer(d, name, select) {
  const n = d.nodes.find((x) => x.name === name);
  if (!n) return;
  shownStep = JSON.stringify(n);
  const section = (title, content) => h("section", {}, h("h3", {}, title), content);
  clear(drawer).append(
    h("button", { type: "button", class: "close", "aria-label": "close", onclick: closeDrawer }, "×"),
    h("h2", { id: "drawer-title" }, n.name, " ", badge(n.status)),
    h("p", { class: "muted" }, [n.server && n.tool ? `${n.server}__${n.tool}` : n.tool || n.kind, ` · ${n.kind}`]),
    h("dl", { class: "times" },
      h("dt", {}, "started"), h("dd", {}, when(n.started_at)),
      h("dt", {}, "ended"), h("dd", {}, when(n.ended_at)),
      h("dt", {}, "took"), h("dd", {}, duration(n.started_at, n.ended_at))),
    section("Input as written", h("div", { id: "drawer-input" }, jsonView(n.input, select))),
    n.resolved_input !== undefined ? section("Resolved input", h("div", { id: "drawer-resolved" }, jsonView(n.resolved_input))) : "",
    n.redacted && n.redacted.length ? h("p", { class: "muted" }, `redacted: ${n.redacted.join(", ")}`) : "",
    n.error ? section("Error", h("pre", { class: "json error", id: "drawer-error" }, n.error)) : "",
    section("Output", h("div", { id: "drawer-output" }, jsonView(n.output))),
    n.attempts && n.attempts.length ? section(`Attempts (${n.attempts.length})`, h("ol", { class: "attempts" }, n.attempts.map((a) => h("li", {}, badge(a.status), ` ${when(a.started_at)} · ${duration(a.started_at, a.ended_at)}`, a.error ? h("div", { class: "error" }, a.error) : "")))) : "",
    n.items && n.items.length ? section(`Items (${n.items.length})`, h("ol", { class: "attempts" }, n.items.map((a) => h("li", {}, a.name, " ", badge(a.status))))) : "",
  );
  drawer.hidden = false;
}

function closeDrawer() {
  drawer.hidden = true;
  clear(drawer);
}

// ---------------------------------------------------------------------------------- templates
async function templatesPage() {
  clear(main).append(h("h1", {}, "Templates"));
  try {
    const data = await api("/templates");
    main.append(h("table", { class: "list" },
      h("thead", {}, h("tr", {}, ["Template", "Version", "Description", "Saved"].map((t) => h("th", {}, t)))),
      h("tbody", {}, data.templates.map((t) => h("tr", { "data-template": t.name },
        h("td", {}, h("a", { href: `/ui/templates/${encodeURIComponent(t.name)}` }, t.name)),
        h("td", {}, `v${t.version}`), h("td", {}, t.description || ""), h("td", {}, when(t.created_at)))))));
    if (!data.templates.length) main.append(h("p", { class: "muted" }, "No template yet: open a recording and save it as one."));
  } catch (err) {
    main.append(errorBox(err.message));
  }
  stopLive = live("templates", async () => { if (location.pathname.replace(/\/$/, "") === "/ui/templates") { stopLive(); templatesPage(); } });
}

async function templatePage(name) {
  const version = new URLSearchParams(location.search).get("version");
  clear(main).append(h("h1", {}, "Template ", name));
  let t;
  try {
    t = await api(`/templates/${encodeURIComponent(name)}${version ? `?version=${version}` : ""}`);
  } catch (err) {
    main.append(errorBox(err.message));
    return;
  }
  const versions = h("ul", { class: "versions" }, t.versions.map((v) => h("li", {}, v.version === t.version ? h("strong", {}, `v${v.version}`) : h("a", { href: `/ui/templates/${encodeURIComponent(name)}?version=${v.version}` }, `v${v.version}`), ` ${when(v.created_at)}`)));
  main.append(
    h("p", { class: "muted" }, t.description || "", ` · v${t.version} · `, h("a", { href: `/ui/?template=${encodeURIComponent(name)}` }, "its runs")),
    h("div", { class: "side-by-side" },
      h("section", {}, h("h3", {}, "YAML"), h("pre", { class: "yaml", id: "template-yaml" }, t.yaml)),
      h("section", {}, h("h3", {}, "Graph"), h("div", { class: "dag-wrap" }, renderGraph(t.nodes, t.edges, null, "TB")))),
    h("div", { class: "side-by-side" },
      h("section", {}, h("h3", {}, "Run"), runForm(t)),
      h("section", {}, h("h3", {}, "Versions"), versions)),
  );
}

function runForm(t) {
  const fields = t.inputs.map((i) => {
    const id = `input-${i.name}`;
    if (i.secret) return h("p", { class: "muted" }, `${i.name}: secret, taken from its default source`);
    const initial = i.has_default ? (typeof i.default === "string" ? i.default : JSON.stringify(i.default)) : "";
    const control = i.type === "boolean"
      ? h("select", { id, name: i.name }, h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"))
      : h(["object", "array"].includes(i.type) ? "textarea" : "input", { id, name: i.name, required: i.required, placeholder: i.type || "value" });
    control.value = initial || (i.type === "boolean" ? "false" : "");
    return h("label", { class: "field" }, h("span", {}, i.name, i.required ? " *" : "", i.description ? h("small", {}, ` ${i.description}`) : ""), control);
  });
  const problem = h("div");
  const form = h("form", { id: "run-form", class: "run-form" }, fields, h("button", { type: "submit", id: "run" }, `Run ${t.name}`), problem);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const inputs = {};
    for (const i of t.inputs) {
      if (i.secret) continue;
      const raw = form.elements[i.name].value;
      if (raw === "" && !i.required) continue;
      inputs[i.name] = typed(raw, i.type);
    }
    try {
      const started = await api(`/templates/${encodeURIComponent(t.name)}/run`, { method: "POST", body: { inputs, version: t.version } });
      go(`/ui/executions/${started.execution_id}`);
    } catch (err) {
      clear(problem).append(errorBox(err.message));
    }
  });
  return form;
}

function typed(raw, type) {
  if (type === "string" || !type) return raw;
  try { return JSON.parse(raw); } catch { return raw; }
}

route();
