"""`toolreel templates export NAME --as python FILE`: a template as a standalone program on the `mcp` SDK.

The program makes the template's tool calls itself, in the template's order: inputs are command-line
options, each step's output a variable named after the step, `for_each` a loop, `when` an `if`, a retry
policy a small loop, a code step its JavaScript in the same QuickJS sandbox, an approval a question on the
terminal (or `--yes`), a `template` step a call of a function exported from the child template, a script
step its code with toolreel's glue, the program making its tool calls, a `switch` an if/elif/else with
its branches' steps inside, a `wait` a sleep (or a signal's data, from `--signal` or the terminal), an `llm`
step a request to the OpenAI-compatible endpoint toolreel asks (or `--llm-answer`). It embeds the servers the templates
remember (`--config PATH` takes a client config's instead). What it cannot write faithfully (JSONPath refs)
and joins whose steps could run at once) is refused with an error naming them, rather than written
half-right. A join over the branches of one switch (at most one of them runs) is an `if` on the case.
"""

from __future__ import annotations

import keyword
import pprint
from collections.abc import Callable, Mapping
from typing import Any, Final

from toolreel.core._ref_grammar import (
    RESERVED_ROOTS,
    Ref,
    compile_path,
    literal_head,
    ref_roots,
    split_template,
    unescape_literal,
)
from toolreel.core.errors import TemplateError
from toolreel.core.refs import parse_ref
from toolreel.core.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT
from toolreel.core.script_sandbox import DEFAULT_MAX_CALLS, DEFAULT_SCRIPT_MEMORY_MB, DEFAULT_SCRIPT_TIMEOUT
from toolreel.core.template import DEFAULT_CASE, StepSpec, Template, When
from toolreel.templatizer._py_runtime import (
    APPROVE_RUNTIME,
    GIVEN_RUNTIME,
    LLM_RUNTIME,
    SIGNAL_RUNTIME,
    WAIT_RUNTIME,
    code_runtime,
    script_runtime,
)

__all__ = ["Loader", "python_program"]

Loader = Callable[[str, "int | None"], Template]

_PY_TYPES: Final = {"string": "str", "integer": "int", "number": "float", "boolean": "_boolean"}
_OPS: Final = {"eq": "==", "neq": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

_RUNTIME: Final = '''

def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _expand(value: str) -> str:
    """`${env:VAR}` / `${VAR}` from the environment, as toolreel does; a missing variable is an error."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in os.environ:
            raise SystemExit(f"the server configuration needs the environment variable {name}")
        return os.environ[name]

    return re.sub(r"\\$\\{env:([A-Za-z_][A-Za-z0-9_]*)\\}|\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}", one, value)


def _environ(name: str) -> str:
    if name not in os.environ:
        raise SystemExit(f"set the environment variable {name}: a secret input is read from it")
    return os.environ[name]


def _server(entry: dict[str, Any]) -> StdioServerParameters | str:
    if "url" in entry:
        return _expand(str(entry["url"]))
    env = {key: _expand(str(value)) for key, value in (entry.get("env") or {}).items()}
    args = [_expand(str(arg)) for arg in entry.get("args") or []]
    return StdioServerParameters(command=str(entry["command"]), args=args, env=env, cwd=entry.get("cwd"))


def _output(result: Any) -> Any:
    """A tool result's output, as toolreel reads it: structured content, else the JSON in the text, else the text."""
    if result.is_error:
        raise SystemExit(f"a tool call failed: {_text([c.model_dump(mode='json') for c in result.content])}")
    if result.structured_content is not None:
        return result.structured_content
    texts = [c.text for c in result.content if c.type == "text"]
    if len(texts) != len(result.content) or not texts:
        return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]
    try:
        values = [json.loads(text) for text in texts]
    except ValueError:
        return texts[0] if len(texts) == 1 else [c.model_dump(mode="json") for c in result.content]
    return values[0] if len(values) == 1 else values


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def _call(client: Client, tool: str, arguments: dict[str, Any], attempts: int = 1, delay: float = 0.5) -> Any:
    """One tool call, tried up to `attempts` times, waiting `delay` seconds (doubling) between tries."""
    for attempt in range(1, attempts + 1):
        result = await client.call_tool(tool, arguments)
        if not result.is_error or attempt == attempts:
            return _output(result)
        await anyio.sleep(delay * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
'''


def python_program(template: Template, loader: Loader | None = None) -> str:
    """The program's source text; TemplateError names a step the export cannot write. `loader(name, version)`
    gives the templates that `template` steps run (each becomes a function of the program)."""
    family = _family(template, loader)
    kinds = {step.kind for member in family for step in member.steps}
    signals = any(step.wait is not None and step.wait.signal for member in family for step in member.steps)
    waits = any(step.wait is not None and not step.wait.signal for member in family for step in member.steps)
    lines = [
        f'"""{_docstring(template, family[1:], code=bool(kinds & {"code", "script"}))}"""',
        "",
        "from __future__ import annotations",
        "",
        "import argparse",
        *(["import importlib"] if kinds & {"code", "script", "llm"} or signals else []),
        "import json",
        "import os",
        "import re",
        "import sys",
        *(["import time"] if waits else []),
        "from contextlib import AsyncExitStack",
        *(["from datetime import UTC, datetime"] if waits else []),
        "from typing import Any",
        "",
        "import anyio",
        *(["import httpx"] if "llm" in kinds else []),
        "from mcp import Client",
        "from mcp.client.stdio import StdioServerParameters",
        "",
        "# The servers the templates remember (secrets stay ${env:VAR} references, read when it runs).",
        f"SERVERS: dict[str, dict[str, Any]] = {pprint.pformat(_servers(family), width=100, sort_dicts=False)}",
        _RUNTIME,
        *([code_runtime()] if kinds & {"code", "script"} else []),
        *([script_runtime()] if "script" in kinds else []),
        *([APPROVE_RUNTIME] if "approve" in kinds else []),
        *([WAIT_RUNTIME] if waits else []),
        *([GIVEN_RUNTIME] if "llm" in kinds or signals else []),
        *([SIGNAL_RUNTIME] if signals else []),
        *([LLM_RUNTIME] if "llm" in kinds else []),
    ]
    for index, member in enumerate(family):
        lines += ["", "", *_function(member, "run" if index == 0 else _function_name(member.name), child=index > 0)]
    lines += ["", "", *_main(template, approvals="approve" in kinds, signals=signals, llm="llm" in kinds)]
    return "\n".join(lines) + "\n"


def _family(template: Template, loader: Loader | None) -> list[Template]:
    """`template` and every template its `template` steps run (depth first, each once)."""
    family: dict[str, Template] = {}

    def visit(member: Template, path: tuple[str, ...]) -> None:
        if member.name in path:
            circle = " -> ".join((*path, member.name))
            raise TemplateError(f"templates export --as python: templates run each other in a circle: {circle}")
        if member.name in family:
            return
        family[member.name] = member
        for step in member.steps:
            if step.template is None:
                continue
            if loader is None:
                raise TemplateError(
                    f"templates export --as python: step {step.name!r} runs template {step.template!r}, "
                    "which is not at hand to export with it"
                )
            visit(loader(step.template, step.template_version), (*path, member.name))

    visit(template, ())
    return list(family.values())


def _function_name(template_name: str) -> str:
    return "template_" + "".join(c if c.isalnum() else "_" for c in template_name)


def _function(template: Template, name: str, *, child: bool) -> list[str]:
    """`async def NAME(inputs, servers, yes)`: the template's steps with clients of the servers they use."""
    names = _Names(template)
    lines = [f"async def {name}(inputs: dict[str, Any], servers: dict[str, dict[str, Any]], yes: bool) -> Any:"]
    if child:
        lines.append(f'    """Template {template.name!r}, as a `template` step runs it."""')
        defaults = {key: spec.default for key, spec in template.inputs.items() if spec.has_default}
        if defaults:
            given = "".join(f"{key!r}: {value!r}, " for key, value in defaults.items())
            lines.append(f"    inputs = {{{given}**inputs}}")
    opens = _used_servers(template) or any(step.kind == "script" for step in template.steps)
    lines.append(f"    async with AsyncExitStack(){' as stack' if opens else ''}:")
    for server in sorted(_used_servers(template)):
        lines.append(
            f"        {names.server(server)} = await stack.enter_async_context(Client(_server(servers[{server!r}])))"
        )
    if any(step.kind == "script" for step in template.steps):
        # a script names its tools as it runs: a client of every server the template remembers (else of all)
        wanted = f"name in {sorted(template.servers)!r}" if template.servers else "True"
        lines.append(
            "        clients: dict[str, Client] = {name: await stack.enter_async_context(Client(_server(entry))) "
            f"for name, entry in servers.items() if {wanted}}}"
        )
    for step in template.steps:
        if step.branch is None:  # a branch's steps are written inside their switch
            lines.extend("        " + line if line else "" for line in _step_code(step, names))
    lines.append(f"        return {_value(template.output, names) if template.has_output else names.last}")
    return lines


class _Names:
    """Python names for steps and servers: the step's own name unless it is a keyword or taken. `read` holds
    the steps whose output something reads: only they get a variable (an unused one would fail a linter)."""

    def __init__(self, template: Template) -> None:
        self.steps: dict[str, str] = {}
        for step in template.steps:
            name = step.name if not keyword.iskeyword(step.name) and step.name not in _TAKEN else f"{step.name}_"
            self.steps[step.name] = name
        self.last = self.steps[template.steps[-1].name] if template.steps else "None"
        values: list[Any] = [template.output] if template.has_output else []
        self.specs = {step.name: step for step in template.steps}
        for step in template.steps:
            values += _read_values(step)
        self.read = ref_roots(values) - RESERVED_ROOTS
        self.joins = {step.name: _join(step, self.specs) for step in template.steps if step.wait_for is not None}
        self.read |= {switch for switch, _ in self.joins.values()}
        if not template.has_output and template.steps:
            self.read.add(template.steps[-1].name)

    def branch(self, switch: str, index: int) -> list[StepSpec]:
        return [step for step in self.specs.values() if step.branch == (switch, index)]

    def nested(self, switch: str) -> list[StepSpec]:
        """Every step inside the switch's branches, at any depth."""
        inside = [step for step in self.specs.values() if step.branch is not None and step.branch[0] == switch]
        return inside + [deeper for step in inside if step.switch is not None for deeper in self.nested(step.name)]

    def server(self, name: str) -> str:
        return "server_" + "".join(c if c.isalnum() else "_" for c in name)


_TAKEN: Final = frozenset(
    {"inputs", "servers", "stack", "item", "index", "run", "main", "json", "os", "re", "sys", "yes", "importlib"}
    | {"clients", "time", "datetime", "httpx", "anyio", "UTC"}
)


def _read_values(step: StepSpec) -> list[Any]:
    """The step's fields that may hold refs."""
    values: list[Any] = [step.input, step.return_, step.approve, step.for_each]
    if step.when is not None:
        values += [part for leaf in step.when.leaves() for part in (leaf.ref, leaf.value)]
    if step.switch is not None:
        values += [step.switch.ref, *(case.when.value for case in step.switch.cases)]
    if step.wait is not None:
        values.append(step.wait.until)
    if step.llm is not None:
        values.append(step.llm.prompt)
    return values


def _join(step: StepSpec, specs: Mapping[str, StepSpec]) -> tuple[str, tuple[int, ...]]:
    """A join the program can write in order: over steps in different branches of one switch, none with its
    own condition (so the join's steps never run at once, and one succeeded exactly when its branch was
    chosen). (the switch, the cases whose branch holds one of them)."""
    counted = step.depends_on or tuple(sorted(ref_roots(_read_values(step)) - RESERVED_ROOTS))
    branches = [specs[name].branch if name in specs else None for name in counted]
    switches = {branch[0] for branch in branches if branch is not None}
    cases = [branch[1] for branch in branches if branch is not None]
    plain = all(specs[name].when is None and specs[name].on_error == "fail_fast" for name in counted if name in specs)
    if (
        None in branches
        or len(switches) != 1
        or len(set(cases)) != len(cases)
        or not plain
        or step.wait_for != 1
        or specs[next(iter(switches))].branch is not None
    ):
        raise TemplateError(
            f"templates export --as python: step {step.name!r} joins (wait_for) steps that can run at once; "
            "the export writes a join only over the branches of one switch (`wait_for: any`): "
            "run it with `toolreel run` or export it --as skill"
        )
    return next(iter(switches)), tuple(sorted(cases))


def _docstring(template: Template, children: list[Template], *, code: bool) -> str:
    said = (template.description or "").replace('"""', "'''").strip()
    return (
        f"{template.name}: {said}\n\n"
        f"Exported by toolreel from template {template.name!r} version {template.version or 1} "
        f"(hash {(template.hash or '')[:12]}).\n"
        + "".join(
            f"Template {c.name!r} version {c.version or 1}, which it runs, is exported with it.\n" for c in children
        )
        + f"It makes the same tool calls as `toolreel run {template.name}`, with the `mcp` SDK alone.\n"
        "Inputs are command-line options (--help lists them); --config PATH takes the servers of a client config.\n"
        + (
            "Its code and script steps run in QuickJS, as toolreel runs them: it needs the quickjs-ng package.\n"
            if code
            else ""
        )
    )


def _servers(family: list[Template]) -> dict[str, Any]:
    """Every server the templates remember; the exported template's own entry wins over a child's."""
    servers: dict[str, Any] = {}
    for member in reversed(family):
        servers.update({name: dict(entry) for name, entry in member.servers.items()})
    return dict(sorted(servers.items()))


def _used_servers(template: Template) -> set[str]:
    return {step.tool.split("__", 1)[0] for step in template.steps if step.tool and "__" in step.tool}


def _step_code(step: StepSpec, names: _Names, *, hoisted: bool = False) -> list[str]:
    """The step's lines; `hoisted`: its variable is declared already (a step in a switch's branch)."""
    var = names.steps[step.name]
    read = step.name in names.read
    if step.kind == "return":
        code = [f"return {_value(step.return_, names)}"]
    elif step.kind == "switch":
        if step.for_each is not None:
            raise TemplateError(
                f"templates export --as python: switch {step.name!r} runs for_each, which it cannot write"
            )
        declared, code = _switch_code(step, names, hoisted=hoisted, typed=step.when is None)
    else:
        call = _call_expr(step, names)
        if step.for_each is None:
            code = [f"{var} = {call}" if read else call]
        else:
            items = _ref_value(step.for_each, names)
            loop = f"for index, item in enumerate({items}):" if "index" in call else f"for item in {items}:"
            start = f"{var} = []" if hoisted else f"{var}: list[Any] = []"
            code = [start, loop, f"    {var}.append({call})"] if read else [loop, f"    {call}"]
    tests = [_condition(step.when, names)] if step.when is not None else []
    if step.name in names.joins:  # as the run does it: the join runs once one of its steps succeeded
        switch, cases = names.joins[step.name]
        chosen = [("default" if case == DEFAULT_CASE else case) for case in sorted(cases, key=lambda c: c < 0)]
        held = f"== {chosen[0]!r}" if len(chosen) == 1 else f"in {tuple(chosen)!r}"
        tests.insert(0, f"{names.steps[switch]}['case'] {held}")
    if tests:
        code = [f"if {' and '.join(tests)}:", *("    " + line for line in code)]
        if read and not hoisted:
            code.insert(0, f"{var}: Any = None  # skipped unless the condition holds")
    if step.kind == "switch":
        code = declared + code  # its branches' variables are declared before any condition
    return [f"# {step.name}", *code]


def _switch_code(step: StepSpec, names: _Names, *, hoisted: bool, typed: bool) -> tuple[list[str], list[str]]:
    """(declarations, if/elif/else over the cases, each holding its branch's steps): the steps of the branches
    not taken stay None. `typed`: the switch's own variable is declared here (not by its condition)."""
    switch = step.switch
    assert switch is not None
    var, read = names.steps[step.name], step.name in names.read
    code = (
        []
        if hoisted
        else [f"{names.steps[s.name]}: Any = None" for s in names.nested(step.name) if s.name in names.read]
    )
    if code:
        code.insert(0, "# the steps of the branches not taken are skipped: None")
    if read and typed and not hoisted:
        code.append(f"{var}: dict[str, Any]  # which case held, and the value tested")
    declared, code = code, []
    value = _ref_value(switch.ref, names)
    arms = [(_condition(case.when, names), index) for index, case in enumerate(switch.cases)]
    if switch.default or read:
        arms.append(("", DEFAULT_CASE))
    for number, (test, index) in enumerate(arms):
        code.append("else:" if not test else f"{'if' if number == 0 else 'elif'} {test}:")
        chosen = ("default" if switch.default else None) if index == DEFAULT_CASE else index
        body = [f"{var} = {{'case': {chosen!r}, 'value': {value}}}"] if read else []
        for inner in names.branch(step.name, index):
            body += _step_code(inner, names, hoisted=True)
        code += ["    " + line if line else "" for line in body or ["pass"]]
    return declared, code


def _call_expr(step: StepSpec, names: _Names) -> str:
    """What one run of the step (or of one for_each item) is, as an expression."""
    value = _value(step.input if step.input is not None else {}, names)
    if step.kind == "tool" and step.tool and "__" in step.tool:
        server, tool = step.tool.split("__", 1)
        retry = step.retry
        extra = f", attempts={retry.max_attempts}, delay={retry.initial_delay!r}" if retry else ""
        return f"await _call({names.server(server)}, {tool!r}, {value}{extra})"
    if step.kind == "code" and step.code is not None:
        limits = f"timeout={step.timeout or DEFAULT_TIMEOUT!r}, memory_mb={step.memory_mb or DEFAULT_MEMORY_MB}"
        return f"_code({step.code!r}, {_value(step.input, names)}, {limits})"
    if step.kind == "template" and step.template is not None:
        return f"await {_function_name(step.template)}({value}, servers, yes)"
    if step.kind == "approve" and step.approve is not None:
        if isinstance(step.approve_schema, Mapping):
            return f"_approve_data({_string(step.approve, names)}, {step.approve_schema!r})"
        return f"_approve({_string(step.approve, names)}, yes)"
    if step.kind == "script" and step.script is not None:
        bounds = (
            step.timeout or DEFAULT_SCRIPT_TIMEOUT,
            step.memory_mb or DEFAULT_SCRIPT_MEMORY_MB,
            step.max_calls if step.max_calls is not None else DEFAULT_MAX_CALLS,
        )
        return f"await _script({step.script!r}, {_value(step.input, names)}, clients, {bounds!r})"
    if step.kind == "wait" and step.wait is not None:
        wait = step.wait
        if wait.signal is not None:
            return f"_signal({step.name!r}, {wait.signal!r}, {wait.schema!r})"
        due = f"time.time() + {wait.for_!r}" if wait.for_ is not None else f"_epoch({_string(wait.until or '', names)})"
        return f"await _wait({due})"
    if step.kind == "llm" and step.llm is not None:
        llm = step.llm
        asked = f"{_string(llm.prompt, names)}, {llm.schema!r}, {llm.max_tokens}, {step.timeout or 120.0!r}"
        return f"await _llm({step.name!r}, {asked})"
    raise TemplateError(
        f"templates export --as python: step {step.name!r} of {step.kind!r} kind cannot be written as Python; "
        "run it with `toolreel run` or export it --as skill"
    )


def _condition(when: When, names: _Names, *, nested: bool = False) -> str:
    if when.combined:
        if when.not_ is not None:
            return f"not {_condition(when.not_, names, nested=True)}"
        parts, joint, empty = (when.all, " and ", "True") if when.all else (when.any, " or ", "False")
        joined = joint.join(_condition(part, names, nested=True) for part in parts) if parts else empty
        return f"({joined})" if nested and len(parts) > 1 else joined
    left = _ref_value(when.ref, names)
    if when.op is None:
        return f"bool({left})"
    if when.op == "exists":
        return f"{left} is not None"
    if when.op == "in":
        return f"{left} in {_value(when.value, names)}"
    if when.op in ("eq", "neq") and (when.value is None or isinstance(when.value, bool)):
        return f"{left} {'is' if when.op == 'eq' else 'is not'} {when.value!r}"  # JSON's true is not 1
    return f"{left} {_OPS[when.op]} {_value(when.value, names)}"


def _value(value: Any, names: _Names) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key!r}: {_value(v, names)}" for key, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v, names) for v in value) + "]"
    if isinstance(value, str):
        return _string(value, names)
    return repr(value)


def _string(text: str, names: _Names) -> str:
    ref = parse_ref(text)
    if ref is not None:
        return _ref_expr(ref, names)
    lead, rest = literal_head(text)
    pieces: list[str] = [repr(lead)] if lead else []
    interpolated = False
    for part in split_template(rest):
        if isinstance(part, str):
            pieces.append(repr(part))
        else:
            interpolated = True
            pieces.append(f"_text({_ref_expr(part[0], names)})")
    if not interpolated:
        return repr(unescape_literal(text))  # no {{@ref}} in it: the literal's value
    return " + ".join(pieces)


def _ref_value(text: str, names: _Names) -> str:
    ref = parse_ref(text)
    if ref is None:
        raise TemplateError(f"templates export --as python: {text!r} is not a ref")
    return _ref_expr(ref, names)


def _ref_expr(ref: Ref, names: _Names) -> str:
    if ref.root == "input":
        base = "inputs"
    elif ref.root in ("item", "index"):
        base = ref.root
    else:
        base = names.steps[ref.root]
    path = compile_path(ref.path) if ref.path else None
    if path is not None and path.jsonpath is not None:
        raise TemplateError(
            f"templates export --as python: the ref {ref.text!r} uses JSONPath, which the export does not translate"
        )
    keys = [segment.key for segment in path.segments] if path is not None else []
    return base + "".join(f"[{key!r}]" for key in keys)


def _main(template: Template, *, approvals: bool, signals: bool, llm: bool) -> list[str]:
    lines = [
        "def main() -> None:",
        f"    parser = argparse.ArgumentParser(description={template.name!r})",
        '    parser.add_argument("--config", help="a client config whose mcpServers replace the remembered ones")',
    ]
    if approvals:
        lines.append(
            '    parser.add_argument("--yes", action="store_true", help="answer yes to every yes/no approval")'
        )
    if signals:
        lines.append(
            '    parser.add_argument("--signal", action="append", default=[], metavar="NAME=JSON", '
            'help="the data of a signal a wait step waits for (else read on the terminal)")'
        )
    if llm:
        lines.append(
            '    parser.add_argument("--llm-answer", action="append", default=[], metavar="STEP=JSON", '
            'help="the answer of an llm step (else asked of TOOLREEL_LLM_URL)")'
        )
    for key, spec in template.inputs.items():
        if spec.secret:  # never typed on a command line: read below from its source
            continue
        kind = _PY_TYPES.get(spec.type or "", "json.loads")  # objects, lists and untyped values are JSON
        required = spec.required and not spec.secret_source
        options = [f'"--{key}"', f"type={kind}", f"required={required}"]
        if spec.has_default:
            options.append(f"default={spec.default!r}")
        if spec.enum:
            options.append(f"choices={list(spec.enum)!r}")
        if spec.description:
            options.append(f"help={spec.description!r}")
        lines.append(f"    parser.add_argument({', '.join(options)})")
    lines += [
        "    args = parser.parse_args()",
        "    servers = SERVERS",
        "    if args.config:",
        "        with open(args.config, encoding='utf-8') as file:",
        "            config = json.load(file)",
        '        servers = config.get("mcpServers") or config.get("servers") or {}',
        "    given = ('config', 'yes', 'signal', 'llm_answer')",
        "    inputs = {key: value for key, value in vars(args).items() if key not in given}",
    ]
    if signals:
        lines.append('    _GIVEN["signal"] = _given("--signal", args.signal)')
    if llm:
        lines.append('    _GIVEN["llm"] = _given("--llm-answer", args.llm_answer)')
    for key, spec in template.inputs.items():
        source = spec.secret_source
        if not spec.secret:
            continue
        if source is not None and source.kind == "file":
            lines.append(f"    with open({source.where!r}, encoding='utf-8') as secret:")
            lines.append(f"        inputs[{key!r}] = secret.read().removesuffix('\\n')")
        else:  # the source's variable, else one named after the input
            where = source.where if source is not None else key.upper()
            lines.append(f"    inputs[{key!r}] = _environ({where!r})  # a secret: from the environment")
    lines += [
        f"    output = anyio.run(run, inputs, servers, {'args.yes' if approvals else 'False'})",
        "    json.dump(output, sys.stdout, ensure_ascii=False, indent=2)",
        '    sys.stdout.write("\\n")',
        "",
        "",
        'if __name__ == "__main__":',
        "    main()",
    ]
    return lines
