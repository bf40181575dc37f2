"""A template as an Agent Skill: the `SKILL.md` the gateway serves and `templates export --as skill` writes.

A skill is a folder whose `SKILL.md` starts with YAML front matter (`name`, `description`) and tells an
agent, in prose, what the procedure does, what it takes, what it needs and how to run it. toolreel's skill
of a template is generated from the template alone, so the folder on disk and the `skill://` resources
over MCP (the Skills extension, SEP-2640) are byte for byte the same: `SKILL.md` plus `template.yaml`,
each file listed with its size and `sha256:` digest of its raw bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolreel.core.errors import TemplateError
from toolreel.core.template import InputSpec, StepSpec, Template, When

__all__ = [
    "REEL_PREFIX",
    "SKILL_AUTHORITY",
    "SKILL_FILE",
    "TEMPLATE_FILE",
    "Skill",
    "SkillFile",
    "find_skill",
    "reel_tool_name",
    "served_skills",
    "skill_name",
    "template_skill",
    "write_skill",
]

SKILL_AUTHORITY: Final = "toolreel"  # skill://toolreel/<name>/SKILL.md
SKILL_FILE: Final = "SKILL.md"
TEMPLATE_FILE: Final = "template.yaml"
# The Agent Skills specification's limits on the front matter.
_DESCRIPTION_MAX: Final = 1024
_NAME_MAX: Final = 64
_NOT_NAME: Final = re.compile(r"[^a-z0-9]+")
REEL_PREFIX: Final = "reel__"
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill: its path inside the skill folder and its bytes."""

    path: str
    content: bytes

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.content).hexdigest()

    @property
    def size(self) -> int:
        return len(self.content)


@dataclass(frozen=True, slots=True)
class Skill:
    """A template's skill: its name, its front matter (as the SKILL.md carries it) and its files."""

    name: str
    template: str  # the template's own name (a skill name is lowercase and hyphenated)
    frontmatter: Mapping[str, Any]
    files: tuple[SkillFile, ...]

    @property
    def uri(self) -> str:
        return self.file_uri(SKILL_FILE)

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    def file_uri(self, path: str) -> str:
        return f"skill://{SKILL_AUTHORITY}/{self.name}/{path}"

    def file(self, uri: str) -> SkillFile | None:
        """The file served at `uri`, or None when it is not one of this skill's."""
        return next((f for f in self.files if self.file_uri(f.path) == uri), None)

    def file_by_template_name(self, uri: str) -> SkillFile | None:
        """The file at `uri` spelled with the template's own name (`skill://toolreel/Triage_Issues/SKILL.md`),
        which a host may build from the `reel__` tool or `toolreel run` name it knows."""
        spelled = f"skill://{SKILL_AUTHORITY}/{self.template}/"
        return next((f for f in self.files if spelled + f.path == uri), None)

    def entry(self) -> dict[str, Any]:
        """The skill as `skills/list` and `skills/get` give it: uri, front matter, every file's uri, digest, size."""
        resources = [{"uri": self.file_uri(f.path), "digest": f.digest, "size": f.size} for f in self.files]
        return {"uri": self.uri, "frontmatter": dict(self.frontmatter), "resources": resources}


def find_skill(skills: Sequence[Skill], uri: str) -> tuple[Skill, SkillFile] | None:
    """The skill and file at `uri`: by the served (slugged) URI first, else by the template's own name in its
    place; a slug always wins, so no template's name can shadow another template's skill."""
    for lookup in (Skill.file, Skill.file_by_template_name):
        for skill in skills:
            found = lookup(skill, uri)
            if found is not None:
                return skill, found
    return None


def reel_tool_name(template_name: str) -> str | None:
    """The `reel__<name>` tool a template is listed as, or None when that cannot be a tool name."""
    name = f"{REEL_PREFIX}{template_name}"
    return name if _TOOL_NAME.fullmatch(name) else None


def skill_name(template_name: str) -> str:
    """The skill name of a template: Agent Skills names are 1-64 lowercase letters, digits and single
    hyphens, so `Triage_Issues` is served as `triage-issues`."""
    name = _NOT_NAME.sub("-", template_name.lower()).strip("-")[:_NAME_MAX].rstrip("-")
    if not name:
        raise TemplateError(f"template {template_name!r} has no letter or digit to name a skill after")
    return name


def template_skill(template: Template, *, name: str | None = None) -> Skill:
    """The skill of `template`; `name` overrides the skill name (to keep names unique in one listing)."""
    # here, not at the top: a gateway imports this module to serve skills, and without a saved template it
    # never needs the template writer (and its schema validator) nor YAML
    import yaml

    from toolreel.core.template_io import dump_template_yaml

    name = name or skill_name(template.name)
    tool = reel_tool_name(template.name)
    frontmatter: dict[str, Any] = {
        "name": name,
        "description": _description(template),
        "metadata": {"toolreel-template": template.name, "toolreel-version": str(template.version or 1)},
    }
    head = yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True, width=1000)
    body = "\n".join(_body(template, tool))
    skill_md = f"---\n{head}---\n\n{body}\n"
    files = (
        SkillFile(SKILL_FILE, skill_md.encode("utf-8")),
        SkillFile(TEMPLATE_FILE, dump_template_yaml(template).encode("utf-8")),
    )
    return Skill(name=name, template=template.name, frontmatter=frontmatter, files=files)


def served_skills(templates: Sequence[Template]) -> list[Skill]:
    """The skills of a catalogue, in template-name order, under names unique in the listing: a template
    whose skill name another one took (`Triage_Issues` after `triage-issues`) gets a stable suffix."""
    skills: list[Skill] = []
    taken: set[str] = set()
    for template in sorted(templates, key=lambda t: t.name):
        try:
            name = skill_name(template.name)
        except TemplateError:
            continue
        if name in taken:
            suffix = hashlib.sha256(template.name.encode("utf-8")).hexdigest()[:8]
            name = f"{name[: _NAME_MAX - len(suffix) - 1].rstrip('-')}-{suffix}"
        taken.add(name)
        skills.append(template_skill(template, name=name))
    return skills


def write_skill(skill: Skill, root: Path) -> Path:
    """Write the skill folder `root/<name>/` (hosts find skills as folders named after them); returns it."""
    folder = root / skill.name
    folder.mkdir(parents=True, exist_ok=True)
    for item in skill.files:
        (folder / item.path).write_bytes(item.content)
    return folder


# --------------------------------------------------------------------------- the text


def _description(template: Template) -> str:
    said = " ".join((template.description or "").split())
    what = said or f"Replays the recorded procedure {template.name!r}"
    how = f"A toolreel template: run it with the tool reel__{template.name} or `toolreel run {template.name}`."
    text = f"{what.rstrip('.')}. {how}"
    return text if len(text) <= _DESCRIPTION_MAX else text[: _DESCRIPTION_MAX - 1].rstrip() + "…"


def _body(template: Template, tool: str | None) -> list[str]:
    version = template.version or 1
    lines = [f"# {template.name}", ""]
    if template.description:
        lines += [template.description.strip(), ""]
    lines += [
        f"This skill is the toolreel template `{template.name}` (version {version}): a procedure recorded from "
        "real tool calls that replays in auto mode, step by step, without a model deciding each call. "
        f"Its definition is in `{TEMPLATE_FILE}`, beside this file.",
        "",
        "## Inputs",
        "",
    ]
    lines += _inputs(template.inputs) or ["It takes no inputs."]
    lines += ["", "## Servers it needs", ""]
    lines += _servers(template)
    lines += ["", "## What it does", ""]
    lines += [f"{n}. {_step_line(step)}" for n, step in enumerate(template.steps, 1)]
    lines += ["", "## How to run it", ""]
    lines += _how_to_run(template, tool)
    return lines


def _inputs(inputs: Mapping[str, InputSpec]) -> list[str]:
    lines = []
    for key, spec in inputs.items():
        facts = [spec.type or "any JSON value"]
        if spec.has_default:
            facts.append("optional, default " + _json(spec.default))
        elif spec.secret_source is not None:
            facts.append(f"read from {spec.secret_source} unless given")
        else:
            facts.append("required")
        if spec.secret:
            facts.append("secret: never type it or pass it through the conversation")
        constraints = spec.constraints()
        if "enum" in constraints:
            facts.append("one of " + ", ".join(_json(v) for v in spec.enum or ()))
        if spec.pattern is not None:
            facts.append(f"matching the regular expression `{spec.pattern}`")
        if spec.minimum is not None:
            facts.append(f"at least {spec.minimum:g}")
        if spec.maximum is not None:
            facts.append(f"at most {spec.maximum:g}")
        described = f": {spec.description.strip()}" if spec.description else ""
        lines.append(f"- `{key}` ({'; '.join(facts)}){described}")
    return lines


def _servers(template: Template) -> list[str]:
    named = sorted({step.tool.split("__", 1)[0] for step in template.steps if step.tool and "__" in step.tool})
    names = sorted(set(named) | set(template.servers))
    if not names:
        return ["It calls no upstream server."]
    lines = []
    for server in names:
        entry = template.servers.get(server)
        lines.append(f"- `{server}`: {_launch(entry) if entry else 'a server of that name in the config'}")
    if template.servers:
        lines += ["", "`toolreel run` starts the servers it remembers; `--config PATH` uses a config's instead."]
    return lines


def _launch(entry: Mapping[str, Any]) -> str:
    """How a remembered server is reached: its command line or URL (never its environment or headers)."""
    url = entry.get("url")
    if isinstance(url, str):
        return f"the MCP server at {url}"
    command = entry.get("command")
    args = entry.get("args")
    words = [str(command)] + ([str(a) for a in args] if isinstance(args, Sequence) else [])
    return "the stdio server `" + " ".join(words) + "`"


def _step_line(step: StepSpec) -> str:
    kind = step.kind
    what = {
        "tool": f"calls `{step.tool}`",
        "return": "returns a result and ends the run",
        "approve": "asks the user to approve: " + json.dumps(step.approve or "", ensure_ascii=False),
        "template": f"runs the template `{step.template}`",
        "code": "reshapes data with a small JavaScript function (sandboxed)",
        "script": "runs a script that calls tools through the gateway (sandboxed)",
        "wait": _wait_words(step),
        "llm": "asks a model: " + json.dumps(step.llm.prompt if step.llm else "", ensure_ascii=False),
        "switch": f"picks one branch of steps by the value of `{step.switch.ref if step.switch else ''}`",
    }[kind]
    if step.branch is not None:
        what += f" (in a branch of `{step.branch[0]}`)"
    if step.for_each is not None:
        what += f", once per item of `{step.for_each}`"
    if step.when is not None:
        what += f", only when {_condition(step.when)}"
    return f"`{step.name}` {what}."


def _wait_words(step: StepSpec) -> str:
    wait = step.wait
    if wait is None:
        return ""
    if wait.signal is not None:
        return f"waits for the signal `{wait.signal}` (`toolreel__signal_execution`); its data is the output"
    return f"waits until {wait.until}" if wait.until is not None else f"waits {wait.for_:g} s"


def _condition(when: When) -> str:
    """A step's `when` in words: one ref's test, or `all` / `any` / `not` of them."""
    if not when.combined:
        test = f"`{when.ref}` {when.op or 'is truthy'}"
        return test + (f" {_json(when.value)}" if when.op not in (None, "exists") else "")
    if when.not_ is not None:
        return f"not ({_condition(when.not_)})"
    parts, joiner = (when.all, " and ") if when.all else (when.any, " or ")
    return "(" + joiner.join(_condition(part) for part in parts) + ")"


def _how_to_run(template: Template, tool: str | None) -> list[str]:
    example = {k: _example(s) for k, s in template.inputs.items() if s.required and not s.secret}
    lines = []
    if tool is not None:
        lines += [
            f"- Through MCP (the toolreel gateway): call the tool `{tool}` with arguments `{_json(example)}`. "
            "It runs every step and returns the template's output; the result's "
            '`_meta["toolreel/execution"]` names the execution.',
        ]
    options = " ".join(f"-i {k}={_shell_value(v)}" for k, v in example.items())
    secrets = " ".join(f"--secret {k}=env:VAR" for k, s in template.inputs.items() if s.secret and not s.secret_source)
    command = " ".join(part for part in ("toolreel run", template.name, options, secrets) if part)
    lines += [
        f"- From a shell: `{command}`. Exit status 0: succeeded, 1: failed, 3: paused "
        "(waiting for an approval or a signal; `toolreel executions resume ID` continues it). "
        "`--json` prints the result as JSON.",
        "- Give inputs per their type (`-i key=value`; JSON for objects and lists); a secret input "
        "comes from `--secret NAME=env:VAR` or `--secret NAME=file:PATH`, never from the command line.",
    ]
    return lines


def _example(spec: InputSpec) -> Any:
    if spec.enum:
        return spec.enum[0]
    return {"integer": 1, "number": 1, "boolean": True, "object": {}, "array": []}.get(spec.type or "", "...")


def _shell_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if re.fullmatch(r"[A-Za-z0-9_./:@-]+", text) else "'" + text.replace("'", "'\\''") + "'"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
