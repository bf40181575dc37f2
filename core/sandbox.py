"""`code` steps: JavaScript in a fresh QuickJS sandbox per run (the maintained `quickjs-ng` binding).

A script is `export default function(input) { ... }`; `run_code` calls it with a JSON value and
returns the JSON value it returns. The sandbox has no I/O, no modules, no timers; `Date.now()`,
`new Date()` without arguments and `Math.random()` throw (time and randomness must come in through
`input`), so a step gives the same output for the same input. The binding's time limit counts CPU
seconds; the memory limit caps the whole runtime. Blocking: call it from a worker thread.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import quickjs

from toolreel.core.errors import CodeError, CodeMemoryError, CodeTimeout
from toolreel.core.model import JSON

__all__ = ["DEFAULT_MEMORY_MB", "DEFAULT_TIMEOUT", "PRELUDE", "CodeLimits", "check_code", "run_code"]

DEFAULT_TIMEOUT = 1.0  # seconds of CPU
DEFAULT_MEMORY_MB = 64

_EXPORT_RE = re.compile(r"^([ \t]*)export[ \t]+default[ \t]+", re.MULTILINE)
_OTHER_EXPORT_RE = re.compile(r"^[ \t]*export\b", re.MULTILINE)
_IMPORT_RE = re.compile(r"^[ \t]*import\b(?!\s*\()", re.MULTILINE)
_MAIN = "__toolreel_main"
_FRAME_RE = re.compile(r"at (\S+) \(<input>:(\d+):\d+\)|<input>:(\d+):\d+")
_PRELUDE_FRAMES = frozenset({"toolreel_refused", "SandboxDate"})

# Runs before the script in every fresh context: the clock and randomness are cut off, the rest of
# the language (Date parsing and arithmetic included) stays.
_PRELUDE = """
(() => {
  const RealDate = Date;
  const refuse = (what) => function toolreel_refused() {
    throw new Error(what + " is not available in a code step (no clock or randomness): "
      + "pass the value in through input");
  };
  function SandboxDate(...args) {
    if (!new.target) return refuse("Date()")();
    if (args.length === 0) return refuse("new Date() without arguments")();
    return Reflect.construct(RealDate, args, new.target);
  }
  SandboxDate.prototype = RealDate.prototype;
  SandboxDate.parse = RealDate.parse;
  SandboxDate.UTC = RealDate.UTC;
  SandboxDate.now = refuse("Date.now()");
  Object.defineProperty(RealDate.prototype, "constructor", {value: SandboxDate});
  globalThis.Date = SandboxDate;
  Math.random = refuse("Math.random()");
  delete globalThis.performance;
})();
"""
PRELUDE = _PRELUDE  # Code Mode scripts (core.script_sandbox) run in the same sandbox


# Three evaluations at top level (no wrapper frame: an out-of-memory error must keep its message).
_CALL = f"globalThis.__toolreel_out = globalThis.{_MAIN}(JSON.parse(__toolreel_input)); undefined"
# A promise would stringify as `{{}}`: an async function has nothing to wait for here, so it is refused.
_IS_PROMISE = "globalThis.__toolreel_out instanceof Promise"
_OUTPUT = "JSON.stringify(globalThis.__toolreel_out)"


@dataclass(frozen=True, slots=True)
class CodeLimits:
    timeout: float = DEFAULT_TIMEOUT  # CPU seconds
    memory_mb: int = DEFAULT_MEMORY_MB


def _prepared(source: str) -> str:
    """The script with its one `export default` turned into a global assignment (lines and columns kept
    after it, so the engine's line numbers are the author's)."""
    if _IMPORT_RE.search(source):
        raise CodeError("imports are not available in a code step: everything it needs comes in through input")
    exports = _EXPORT_RE.findall(source)
    if len(exports) != 1 or len(_OTHER_EXPORT_RE.findall(source)) != 1:
        raise CodeError(
            "a code step is one `export default function(input) { ... }` (found "
            f"{len(_OTHER_EXPORT_RE.findall(source))} export statements)"
        )
    return _EXPORT_RE.sub(lambda m: f"{m.group(1)}globalThis.{_MAIN} = ", source, count=1)


def _context(limits: CodeLimits) -> quickjs.Context:
    context = quickjs.Context()
    context.eval(_PRELUDE)
    context.set_memory_limit(limits.memory_mb * 1024 * 1024)
    context.set_time_limit(limits.timeout)
    return context


def check_code(source: str) -> None:
    """Raise CodeError when the script is not one default-exported function that compiles.

    The script is compiled inside a function that is never called, so nothing of it runs here.
    """
    script = _prepared(source)
    context = _context(CodeLimits(timeout=1.0, memory_mb=16))
    try:
        context.eval(f"(function () {{{script}\n}});")
    except quickjs.JSException as exc:
        raise _error(exc, CodeLimits()) from None


def run_code(source: str, value: JSON, limits: CodeLimits = CodeLimits()) -> JSON:
    """Call the script's default export with `value`; its return value as JSON (`undefined` is null)."""
    script = _prepared(source)
    context = _context(limits)
    context.set("__toolreel_input", json.dumps(value, ensure_ascii=False))
    try:
        context.eval(script)
        kind = context.eval(f"typeof globalThis.{_MAIN}")
        if kind != "function":
            raise CodeError(f"`export default` must be a function(input), got a {kind}")
        context.eval(_CALL)
        if context.eval(_IS_PROMISE):
            raise CodeError("the function returned a Promise: a code step is synchronous (no I/O to wait for)")
        text = context.eval(_OUTPUT)
    except quickjs.JSException as exc:
        raise _error(exc, limits, exhausted=_exhausted(context) or _engine_null(exc, source)) from None
    except quickjs.StackOverflow as exc:
        raise CodeError(f"the script overflowed the stack (too deep a recursion): {exc}") from None
    if text is None:
        return None
    if not isinstance(text, str):  # JSON.stringify gives a string or undefined
        raise CodeError(f"the function returned something that is not JSON ({type(text).__name__})")
    loaded: JSON = json.loads(text)
    return loaded


def _exhausted(context: quickjs.Context) -> bool:
    """Whether the heap is at its limit: then even the error object may not have been allocated."""
    usage = context.memory()
    limit = usage.get("malloc_limit", 0)
    return bool(limit) and usage.get("malloc_size", 0) >= 0.95 * limit


# An engine out of memory while making its own error object throws a bare `null` instead; by then the
# script's frames may have been freed, so the heap no longer reads full. A script with no `throw` of its own
# cannot have thrown it.
_THROW_RE = re.compile(r"\bthrow\b")


def _engine_null(exc: quickjs.JSException, source: str) -> bool:
    return str(exc).strip() == "null" and not _THROW_RE.search(source)


def _error(exc: quickjs.JSException, limits: CodeLimits, *, exhausted: bool = False) -> CodeError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else "error"
    if first.startswith("InternalError: interrupted"):
        return CodeTimeout(f"code_timeout: the script ran past its timeout of {limits.timeout:g}s CPU and was stopped")
    if first.startswith("InternalError: out of memory") or exhausted:
        return CodeMemoryError(
            f"code_memory_limit: the script went past its memory limit of {limits.memory_mb} MiB and was stopped"
        )
    if first == "null":
        return CodeError("the script threw null: `throw new Error('...')` says what went wrong")
    line = _author_line(text)
    return CodeError(f"{first}{f' (line {line})' if line else ''}", line=line)


def _author_line(text: str) -> int | None:
    """The line of the innermost stack frame that is the author's (not the prelude's refusals)."""
    for match in _FRAME_RE.finditer(text):
        if match.group(1) in _PRELUDE_FRAMES:
            continue
        return int(match.group(2) or match.group(3))
    return None
