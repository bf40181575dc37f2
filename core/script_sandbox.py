"""Code Mode scripts: an agent's async JavaScript in QuickJS, its tool calls handed out as requests.

JavaScript never calls into Python here (the binding refuses that while a time limit is set, and the
time limit is what stops an endless loop): `callTool` queues a request and returns a pending promise.
`ScriptMachine.advance` runs the engine's jobs until the script is done or waits on calls, and returns
the requests; the caller performs them and advances again with the answers. The sandbox of `code`
steps applies (no clock, randomness, I/O or imports). Blocking: drive one machine from one thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import quickjs

from toolreel.core import sandbox
from toolreel.core.errors import CodeError, CodeMemoryError, CodeTimeout
from toolreel.core.model import JSON

__all__ = [
    "DEFAULT_MAX_CALLS",
    "DEFAULT_SCRIPT_MEMORY_MB",
    "DEFAULT_SCRIPT_TIMEOUT",
    "SCRIPT_PRELUDE",
    "SCRIPT_START",
    "Answer",
    "Finished",
    "Request",
    "ScriptLimits",
    "ScriptMachine",
    "check_script",
]

DEFAULT_SCRIPT_TIMEOUT = 30.0  # seconds, wall time of the whole run
DEFAULT_SCRIPT_MEMORY_MB = 128
DEFAULT_MAX_CALLS = 1000
MAX_LOG_LINES = 1000
MAX_LOG_CHARS = 64 * 1024

_MAIN = "__toolreel_main"
_EXPORT_RE = re.compile(r"^([ \t]*)export[ \t]+default[ \t]+", re.MULTILINE)
_OTHER_EXPORT_RE = re.compile(r"^[ \t]*export\b", re.MULTILINE)
_IMPORT_RE = re.compile(r"^[ \t]*import\b(?!\s*\()", re.MULTILINE)
_FRAME_RE = re.compile(r"at (\S+) \(<input>:(\d+):\d+\)|<input>:(\d+):\d+")
_PRELUDE_FRAMES = frozenset({"toolreel_refused", "SandboxDate", "callTool"})

# `tools.<server>.<tool>(args)` is `callTool("<server>__<tool>", args)`; a tool name that is not an
# identifier is written `tools.server["get-sum"](args)`.
_PRELUDE = f"""
(() => {{
  const pending = new Map();
  const queue = [];
  const logs = [];
  let next = 0, logChars = 0;
  globalThis.callTool = (name, args) => {{
    if (typeof name !== "string") throw new TypeError('callTool(name, args): name is a string, "server__tool"');
    const text = JSON.stringify(args === undefined ? {{}} : args);
    if (text === undefined || text[0] !== "{{") throw new TypeError("callTool(" + name + ", args): args is an object");
    const id = next++;
    return new Promise((resolve, reject) => {{ pending.set(id, {{resolve, reject}}); queue.push([id, name, text]); }});
  }};
  const server = (name) => new Proxy({{}}, {{
    get: (_, tool) => typeof tool === "string" && tool !== "then"
      ? (args) => callTool(name + "__" + tool, args) : undefined,
  }});
  globalThis.tools = new Proxy({{}}, {{
    get: (_, name) => typeof name === "string" && name !== "then" ? server(name) : undefined,
  }});
  const text = (v) => {{
    if (typeof v === "string") return v;
    try {{ const s = JSON.stringify(v); return s === undefined ? String(v) : s; }} catch (e) {{ return String(v); }}
  }};
  const log = (...args) => {{
    const line = args.map(text).join(" ");
    if (logs.length >= {MAX_LOG_LINES} || logChars + line.length > {MAX_LOG_CHARS}) return;
    logs.push(line); logChars += line.length;
  }};
  globalThis.console = {{log, info: log, warn: log, error: log, debug: log}};
  globalThis.__toolreel_poll = () => {{
    if (__toolreel_state.done) return JSON.stringify(__toolreel_state);
    const out = JSON.stringify(queue);
    queue.length = 0;
    return out;
  }};
  globalThis.__toolreel_logs = () => JSON.stringify(logs);
  globalThis.__toolreel_answer = (answers) => {{
    for (const [id, ok, value] of JSON.parse(answers)) {{
      const call = pending.get(id);
      pending.delete(id);
      if (ok) call.resolve(value);
      else {{ const error = new Error(value); error.name = "ToolError"; call.reject(error); }}
    }}
  }};
  globalThis.__toolreel_state = {{done: false}};
}})();
"""

_START = f"""
Promise.resolve().then(() => globalThis.{_MAIN}(JSON.parse(__toolreel_input))).then(
  (value) => {{
    __toolreel_state.done = true;
    __toolreel_state.value = value === undefined ? "null" : JSON.stringify(value);
  }},
  (error) => {{
    __toolreel_state.done = true;
    __toolreel_state.error = String(error);
    __toolreel_state.stack = error && error.stack ? String(error.stack) : "";
  }});
undefined
"""


# The exported Python programs (templatizer.to_python) run script steps with the same glue.
SCRIPT_PRELUDE = _PRELUDE
SCRIPT_START = _START


@dataclass(frozen=True, slots=True)
class ScriptLimits:
    timeout: float = DEFAULT_SCRIPT_TIMEOUT  # wall seconds for the whole run
    memory_mb: int = DEFAULT_SCRIPT_MEMORY_MB
    max_calls: int = DEFAULT_MAX_CALLS


@dataclass(frozen=True, slots=True)
class Request:
    """A tool call the script awaits: `name` as it wrote it, `arguments` a JSON object."""

    id: int
    name: str
    arguments: dict[str, JSON]


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer to request `id`: the tool's output, or (`ok` False) the error the script sees thrown."""

    id: int
    ok: bool
    value: JSON = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Finished:
    """The script's end: its returned value (JSON), or the error it ended with; its console lines."""

    value: JSON = None
    error: CodeError | None = None
    logs: tuple[str, ...] = field(default_factory=tuple)


def _prepared(code: str) -> str:
    """The script as a global async function: a module's default export, or a body wrapped in one."""
    if _IMPORT_RE.search(code):
        raise CodeError("script_invalid: imports are not available in a script; tools and input are globals")
    exports = len(_EXPORT_RE.findall(code))
    if exports == 0 and not _OTHER_EXPORT_RE.search(code):
        return f"globalThis.{_MAIN} = async function (input) {{\n{code}\n}};"
    if exports != 1 or len(_OTHER_EXPORT_RE.findall(code)) != 1:
        raise CodeError("script_invalid: a module script has exactly one `export default` and no other export")
    # Lines kept: the engine's line numbers are the author's.
    return _EXPORT_RE.sub(lambda m: f"{m.group(1)}globalThis.{_MAIN} = ", code, count=1)


def check_script(code: str) -> None:
    """Raise CodeError when the script does not compile (nothing of it runs: it is only defined)."""
    context = quickjs.Context()
    context.set_memory_limit(16 * 1024 * 1024)
    context.set_time_limit(1.0)
    try:
        context.eval(f"(function () {{{_prepared(code)}\n}});")
    except quickjs.JSException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "error"
        raise CodeError(f"script_error: {first}") from None


class ScriptMachine:
    """One run of one script; `start`, then `advance` until it returns `Finished`."""

    def __init__(self, code: str, value: JSON, limits: ScriptLimits) -> None:
        self.limits = limits
        self._script = _prepared(code)
        self._context = quickjs.Context()
        self._context.eval(sandbox.PRELUDE)
        self._context.eval(_PRELUDE)
        self._context.set_memory_limit(limits.memory_mb * 1024 * 1024)
        self._context.set("__toolreel_input", json.dumps(value, ensure_ascii=False))
        self._wrapped = not _EXPORT_RE.search(code)
        # called as functions, not evaluated as source: nothing to compile on each call
        self._poll = self._context.get("__toolreel_poll")
        self._answer = self._context.get("__toolreel_answer")

    def start(self, cpu_seconds: float) -> list[Request] | Finished:
        """Evaluate the script and run it until it waits on calls or ends."""
        try:
            self._budget(cpu_seconds)
            self._context.eval(self._script)
            kind = self._context.eval(f"typeof globalThis.{_MAIN}")
            if kind != "function":
                return self._finished(CodeError(f"script_invalid: `export default` must be a function, got a {kind}"))
            self._context.eval(_START)
        except quickjs.JSException as exc:
            return self._finished(self._error(str(exc)))
        return self._run()

    def advance(self, answers: Sequence[Answer], cpu_seconds: float) -> list[Request] | Finished:
        """Hand in the answers to the last requests and run until the next ones (or the end)."""
        try:
            self._budget(cpu_seconds)
            batch = [[a.id, a.ok, a.value if a.ok else a.error] for a in answers]
            self._answer(json.dumps(batch, ensure_ascii=False))
        except quickjs.JSException as exc:
            return self._finished(self._error(str(exc)))
        return self._run()

    def _budget(self, cpu_seconds: float) -> None:
        # The binding's limit counts the process's CPU seconds from each entry into the engine.
        self._context.set_time_limit(max(cpu_seconds, 0.001))

    def _run(self) -> list[Request] | Finished:
        context = self._context
        try:
            while context.execute_pending_job():
                pass
            raw = json.loads(str(self._poll()))
            if isinstance(raw, dict):  # the script's end
                if "error" in raw:
                    return self._finished(self._error(f"{raw['error']}\n{raw.get('stack', '')}"))
                return self._finished(None, json.loads(raw["value"]))
        except quickjs.JSException as exc:
            return self._finished(self._error(str(exc)))
        except quickjs.StackOverflow as exc:
            return self._finished(
                CodeError(f"script_error: the script overflowed the stack (too deep a recursion): {exc}")
            )
        if not raw:
            return self._finished(
                CodeError(
                    "script_stalled: the script waits on a promise that nothing will settle (no tool call pending)"
                )
            )
        return [Request(int(i), str(name), json.loads(text)) for i, name, text in raw]

    def _finished(self, error: CodeError | None, value: JSON = None) -> Finished:
        return Finished(value, error, self.logs())

    def logs(self) -> tuple[str, ...]:
        """The console lines so far (capped in number and size)."""
        try:
            return tuple(json.loads(str(self._context.eval("__toolreel_logs()"))))
        except (quickjs.JSException, ValueError):  # a heap at its limit cannot even stringify them
            return ()

    def _error(self, text: str) -> CodeError:
        text = text.strip()
        first = text.splitlines()[0] if text else "error"
        if first.startswith("InternalError: interrupted"):
            return CodeTimeout(
                f"script_timeout: the script ran past its timeout of {self.limits.timeout:g} s and was stopped"
            )
        # An allocation that fails at the limit throws `null` (the error object itself cannot be made).
        if first.startswith("InternalError: out of memory") or first == "null" or self._exhausted():
            return CodeMemoryError(
                f"script_memory_limit: the script went past its memory limit of {self.limits.memory_mb} MiB "
                "and was stopped"
            )
        # A tool's error is thrown from the prelude, where the answer arrives: its line is not the author's.
        line = None if first.startswith("ToolError:") else self._line(text)
        return CodeError(f"script_error: {first}{f' (line {line})' if line else ''}", line=line)

    def _line(self, text: str) -> int | None:
        for match in _FRAME_RE.finditer(text):
            if match.group(1) not in _PRELUDE_FRAMES:
                line = int(match.group(2) or match.group(3))
                return line - 1 if self._wrapped else line  # the wrapper's first line is not the author's
        return None

    def _exhausted(self) -> bool:
        usage = self._context.memory()
        limit = usage.get("malloc_limit", 0)
        return bool(limit) and usage.get("malloc_size", 0) >= 0.95 * limit
