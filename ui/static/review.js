// Save as template: the templatizer's proposal, the person's decisions, verification, save.
import { api, h, clear, errorBox } from "./dom.js";
import { jsonView } from "./graph.js";

export async function reviewPanel(root, execution) {
  const state = { name: `recording-${execution.id.slice(0, 8)}`, description: "", inputs: null, decisions: new Map(), proposal: null };
  const name = h("input", { id: "template-name", value: state.name, "aria-label": "template name", required: true });
  const description = h("input", { id: "template-description", placeholder: "what it does", "aria-label": "description" });
  const inputsBox = h("div", { id: "review-inputs" });
  const refsBox = h("div", { id: "review-refs" });
  const verdict = h("div", { id: "review-verification" });
  const yaml = h("pre", { class: "yaml", id: "review-yaml" });
  const problem = h("div");
  const save = h("button", { type: "button", id: "review-save" }, "Save template");
  const check = h("button", { type: "button", id: "review-check", class: "secondary" }, "Check again");
  clear(root).append(
    h("h2", {}, "Save as template"),
    h("div", { class: "filters" }, h("label", {}, "Name ", name), h("label", {}, "Description ", description)),
    h("h3", {}, "Inputs"), h("p", { class: "muted" }, "Values a person chooses per run. Untick to keep one a constant; rename freely."), inputsBox,
    h("h3", {}, "Refs"), h("p", { class: "muted" }, "Where a step reads an earlier step's output. Untick to keep the recorded literal."), refsBox,
    h("h3", {}, "Verification"), verdict,
    h("details", {}, h("summary", {}, "Template YAML"), yaml),
    h("div", { class: "actions" }, check, save), problem);

  function request() {
    return {
      name: name.value.trim(),
      description: description.value.trim() || null,
      inputs: state.inputs === null ? null : Object.fromEntries(state.inputs.filter((i) => i.keep && i.name).map((i) => [i.name, i.value])),
      decisions: [...state.decisions.values()],
    };
  }

  let asked = 0;
  async function refresh() {
    const mine = ++asked; // answers can arrive out of order: only the latest question's is shown
    let p;
    try {
      p = await api(`/executions/${encodeURIComponent(execution.id)}/review`, { method: "POST", body: request() });
    } catch (err) {
      if (mine === asked) clear(problem).append(errorBox(err.message));
      return;
    }
    if (mine !== asked) return;
    clear(problem);
    state.proposal = p;
    if (state.inputs === null) state.inputs = p.likely_inputs.map((i) => ({ ...i, keep: true, proposed: i.name }));
    drawInputs(); drawRefs(p); drawVerdict(p.verification);
    yaml.textContent = p.yaml;
  }

  function drawInputs() {
    clear(inputsBox);
    if (!state.inputs.length) { inputsBox.append(h("p", { class: "muted" }, "Nothing in this recording looks like an input.")); return; }
    inputsBox.append(h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["Use", "Name", "Recorded value", "Used at", "Why"].map((t) => h("th", {}, t)))),
      h("tbody", {}, state.inputs.map((i) => {
        const keep = h("input", { type: "checkbox", "data-input": i.proposed, checked: i.keep, onchange: () => { i.keep = keep.checked; refresh(); } });
        const rename = h("input", { value: i.name, "data-input-name": i.proposed, "aria-label": `name of input ${i.proposed}`, onchange: () => { i.name = rename.value.trim(); refresh(); } });
        return h("tr", {}, h("td", {}, keep), h("td", {}, rename), h("td", {}, h("code", {}, JSON.stringify(i.value))),
          h("td", {}, i.used_at.map((u) => `${u.step} ${u.input_path}`).join(", ")), h("td", { class: "muted" }, i.reason));
      }))));
  }

  function drawRefs(p) {
    const rows = [...p.inferred.map((r) => ({ ...r, group: "inferred" })), ...p.candidates.map((r) => ({ ...r, group: "candidate" }))];
    clear(refsBox);
    if (!rows.length) { refsBox.append(h("p", { class: "muted" }, "No step reads another's output.")); return; }
    refsBox.append(h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["Use", "Step", "Input", "Ref", "Confidence", "Evidence"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows.map((r) => {
        const locked = r.kind === "secret";
        const box = h("input", { type: "checkbox", checked: r.accepted, disabled: locked, "data-ref-step": r.step, "data-ref-path": r.input_path, "data-ref": r.ref,
          title: locked ? "a secret is never baked into a template" : "",
          onchange: () => { state.decisions.set(`${r.step} ${r.input_path}`, { step: r.step, input_path: r.input_path, ref: box.checked ? r.ref : null }); refresh(); } });
        return h("tr", { class: r.group }, h("td", {}, box), h("td", {}, r.step), h("td", {}, h("code", {}, r.input_path)), h("td", {}, h("code", { class: "ref" }, r.ref)),
          h("td", {}, h("span", { class: `conf c-${r.confidence}` }, `${r.confidence} ${r.score}`)), h("td", { class: "muted" }, r.evidence));
      }))));
  }

  function drawVerdict(v) {
    clear(verdict);
    if (v.verified) verdict.append(h("p", { class: "ok", "data-verified": "true" }, `Verified: replayed against the recording, all ${v.checked} tool steps receive exactly the input they received.`));
    else verdict.append(h("div", { "data-verified": "false" }, h("p", { class: "error" }, "Not verified: these steps would receive other input than recorded."),
      h("ul", {}, v.differences.map((d) => h("li", {}, h("strong", {}, d.step), ` ${d.problem}`)))));
  }

  save.addEventListener("click", async () => {
    clear(problem);
    const body = request();
    if (!state.proposal?.verification.verified) {
      if (!confirm("The template does not reproduce the recording. Save it anyway?")) return;
      body.force = true;
    }
    try {
      const saved = await api(`/executions/${encodeURIComponent(execution.id)}/save`, { method: "POST", body });
      if (!saved.saved) { drawVerdict(saved.verification); return; }
      clear(problem).append(h("p", { class: "ok", id: "review-saved" }, `Saved ${saved.template.name} v${saved.version}. `, h("a", { href: `/ui/templates/${encodeURIComponent(saved.template.name)}` }, "Open the template")));
    } catch (err) {
      problem.append(errorBox(err.message));
    }
  });
  check.addEventListener("click", refresh);
  name.addEventListener("change", refresh);
  await refresh();
}

export { jsonView };
