"""The helpers an exported Python program carries for its code and approve steps (`to_python`).

Each is source text pasted into the program only when one of its templates has such a step. Code steps
run their JavaScript in the same sandbox library toolreel uses (`quickjs-ng`), with the same prelude (no
clock, no randomness), so they give the same output for the same input. Script steps (Code Mode) run with
toolreel's own glue: the script's tool calls are queued as requests, which the program makes with its
clients and answers, until the script returns. Approvals are asked on the
terminal, or answered yes by `--yes`; an approval refused ends the program, as it fails a run. Wait steps
sleep; a signal's data and an llm step's answer are given on the command line, else read on the terminal
or asked of the OpenAI-compatible endpoint toolreel asks, and checked against the step's JSON Schema.
"""

from __future__ import annotations

from typing import Final

from toolreel.core.sandbox import PRELUDE
from toolreel.core.script_sandbox import SCRIPT_PRELUDE, SCRIPT_START

__all__ = [
    "APPROVE_RUNTIME",
    "GIVEN_RUNTIME",
    "LLM_RUNTIME",
    "SIGNAL_RUNTIME",
    "WAIT_RUNTIME",
    "code_runtime",
    "script_runtime",
]

_YES_WORDS: Final = (
    "yes",
    "y",
    "approve",
    "approved",
    "ok",
    "okay",
    "true",
    "accept",
    "accepted",
    "allow",
    "go",
    "continue",
)


def code_runtime() -> str:
    return (
        f"\n\n# Runs before every code step's script: no clock, no randomness (as in toolreel's sandbox).\n"
        f"_PRELUDE = {PRELUDE!r}\n"
        + r'''

def _code(source: str, value: Any, timeout: float, memory_mb: int) -> Any:
    """A code step: its `export default function(input)` in a fresh QuickJS sandbox (the quickjs-ng
    package, as toolreel uses), called with `value`; its return value as JSON."""
    quickjs: Any = importlib.import_module("quickjs")
    context = quickjs.Context()
    context.eval(_PRELUDE)
    context.set_memory_limit(memory_mb * 1024 * 1024)
    context.set_time_limit(timeout)
    main = r"\1globalThis.__main = "
    script = re.sub(r"^([ \t]*)export[ \t]+default[ \t]+", main, source, count=1, flags=re.MULTILINE)
    context.set("__input", json.dumps(value, ensure_ascii=False))
    try:
        context.eval(script)
        context.eval("globalThis.__out = globalThis.__main(JSON.parse(__input)); undefined")
        text = context.eval("JSON.stringify(globalThis.__out)")
    except quickjs.JSException as exc:
        raise SystemExit(f"a code step failed: {exc}") from None
    return None if text is None else json.loads(text)
'''
    )


APPROVE_RUNTIME: Final = (
    f"\n\n_YES = frozenset({sorted(_YES_WORDS)!r})  # the words toolreel takes for yes\n"
    + r'''

def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("an approval needs an answer on standard input (or --yes)")
    return line.strip()


def _approve(prompt: str, yes: bool) -> dict[str, Any]:
    """An approval: yes with --yes, else asked on the terminal; any other answer ends the program."""
    response = "yes" if yes else _ask(f"{prompt} [yes/no] ")
    if response.lower().rstrip(".!") not in _YES:
        raise SystemExit(f"approval refused: {prompt!r} (response: {response!r})")
    return {"approved": True, "response": response}


def _approve_data(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An approval that asks for fields: a JSON object of them, read on the terminal."""
    fields = ", ".join(schema.get("properties") or {})
    text = _ask(f"{message}\nAnswer with a JSON object of: {fields}\n> ")
    try:
        answer = json.loads(text)
    except ValueError:
        raise SystemExit(f"the answer is not a JSON object of {fields}: {text!r}") from None
    missing = [name for name in schema.get("required") or [] if not isinstance(answer, dict) or name not in answer]
    if not isinstance(answer, dict) or missing:
        raise SystemExit(f"the answer must be a JSON object with {fields} (missing: {', '.join(missing)})")
    return answer
'''
)


def script_runtime() -> str:
    return (
        f"\n\n# A script step's glue, as toolreel runs Code Mode scripts: calls queued as requests, answered here.\n"
        f"_SCRIPT_PRELUDE = {SCRIPT_PRELUDE!r}\n_SCRIPT_START = {SCRIPT_START!r}\n"
        + r'''

async def _script(source: str, value: Any, clients: dict[str, Client], limits: tuple[float, int, int]) -> Any:
    """A script step: its async JavaScript in QuickJS; each tool call it awaits is made with `clients`."""
    timeout, memory_mb, max_calls = limits
    quickjs: Any = importlib.import_module("quickjs")
    context = quickjs.Context()
    context.eval(_PRELUDE)
    context.eval(_SCRIPT_PRELUDE)
    context.set_memory_limit(memory_mb * 1024 * 1024)
    context.set_time_limit(timeout)
    context.set("__toolreel_input", json.dumps(value, ensure_ascii=False))
    export = re.compile(r"^([ \t]*)export[ \t]+default[ \t]+", re.MULTILINE)
    if export.search(source):
        script = export.sub(r"\1globalThis.__toolreel_main = ", source, count=1)
    else:
        script = "globalThis.__toolreel_main = async function (input) {\n" + source + "\n};"
    calls = 0
    try:
        context.eval(script)
        context.eval(_SCRIPT_START)
        while True:
            while context.execute_pending_job():
                pass
            raw = json.loads(str(context.eval("__toolreel_poll()")))
            if isinstance(raw, dict):
                if "error" in raw:
                    raise SystemExit(f"a script step failed: {raw['error']}")
                return json.loads(raw["value"])
            if not raw:
                raise SystemExit("a script step waits on a promise that nothing will settle")
            calls += len(raw)
            if calls > max_calls:
                raise SystemExit(f"a script step made more than {max_calls} tool calls")
            answers = [await _answer(clients, int(ident), str(name), json.loads(text)) for ident, name, text in raw]
            context.get("__toolreel_answer")(json.dumps(answers, ensure_ascii=False))
    except quickjs.JSException as exc:
        raise SystemExit(f"a script step failed: {exc}") from None


async def _answer(clients: dict[str, Client], ident: int, name: str, arguments: Any) -> list[Any]:
    """[id, ok, output or error message]: what the script's awaited call resolves or rejects with."""
    server, _, tool = name.partition("__")
    if server not in clients:
        return [ident, False, f"unknown tool {name!r}; servers: {', '.join(sorted(clients))}"]
    result = await clients[server].call_tool(tool, arguments)
    if result.is_error:  # the message the script sees, as toolreel words it: the texts of the result
        said = " ".join(c.text for c in result.content if c.type == "text" and c.text).strip()[:2000]
        return [ident, False, said or "the tool reported an error"]
    return [ident, True, _output(result)]
'''
    )


WAIT_RUNTIME: Final = r'''

def _epoch(when: Any) -> float:
    """A time as toolreel takes it: ISO 8601 with its zone, or epoch seconds."""
    if isinstance(when, int | float) and not isinstance(when, bool):
        return float(when)
    try:
        moment = datetime.fromisoformat(when) if isinstance(when, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise SystemExit(f"a wait step needs a time in ISO 8601 with its zone, or epoch seconds; got {when!r}")
    return moment.timestamp()


async def _wait(due: float) -> dict[str, Any]:
    """A wait step: sleeps until `due` (epoch seconds; a time already past does not wait)."""
    await anyio.sleep(max(due - time.time(), 0.0))
    return {"until": datetime.fromtimestamp(due, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")}
'''

# Given answers (`--signal NAME=JSON`, `--llm-answer STEP=JSON`) and the JSON Schema check they share.
GIVEN_RUNTIME: Final = r'''

_GIVEN: dict[str, dict[str, Any]] = {"signal": {}, "llm": {}}  # filled from the command line by main()


def _given(option: str, pairs: list[str]) -> dict[str, Any]:
    """`NAME=JSON` options as a mapping; a malformed one ends the program naming it."""
    given: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        try:
            given[name] = json.loads(text) if sep and name else None
        except ValueError:
            raise SystemExit(f"{option} {pair!r}: the part after = is not JSON") from None
        if not sep or not name:
            raise SystemExit(f"{option} {pair!r}: write it NAME=JSON")
    return given


def _check(schema: Any, value: Any, what: str) -> Any:
    """`value` if it matches the JSON Schema `schema` (the jsonschema package, as toolreel checks), else exit."""
    if isinstance(schema, dict):
        jsonschema: Any = importlib.import_module("jsonschema")
        problem = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
        if problem is not None:
            where = "/".join(str(part) for part in problem.absolute_path) or "(the whole value)"
            raise SystemExit(f"{what} does not match its schema at {where}: {problem.message}")
    return value
'''

SIGNAL_RUNTIME: Final = r'''

def _signal(step: str, name: str, schema: Any) -> Any:
    """A wait for a signal: its data from --signal NAME=JSON, else read as JSON on the terminal."""
    if name in _GIVEN["signal"]:
        data = _GIVEN["signal"][name]
    else:
        sys.stderr.write(f"step {step} waits for signal {name!r}: its data as JSON (schema: {json.dumps(schema)})\n> ")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(f"step {step} waits for signal {name!r}: give --signal {name}=JSON or its data on stdin")
        try:
            data = json.loads(line)
        except ValueError:
            raise SystemExit(f"the data of signal {name!r} is not JSON: {line.strip()!r}") from None
    return _check(schema, data, f"the data of signal {name!r}")
'''

LLM_RUNTIME: Final = r'''

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


async def _llm(step: str, prompt: str, schema: Any, max_tokens: int, timeout: float) -> Any:
    """An llm step: the answer from --llm-answer STEP=JSON, else from the OpenAI-compatible endpoint in
    TOOLREEL_LLM_URL (key TOOLREEL_LLM_KEY, model TOOLREEL_LLM_MODEL); parsed and checked with a schema."""
    if step in _GIVEN["llm"]:
        given = _GIVEN["llm"][step]
        text = given if isinstance(given, str) else json.dumps(given, ensure_ascii=False)
    else:
        text = await _ask_model(step, prompt, schema, max_tokens, timeout)
    if schema is None:
        return text
    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        raise SystemExit(f"llm_answer_invalid: the answer of step {step} is not JSON: {text[:300]!r}") from None
    return _check(schema, value, f"llm_answer_invalid: the answer of step {step}")


async def _ask_model(step: str, prompt: str, schema: Any, max_tokens: int, timeout: float) -> str:
    url = os.environ.get("TOOLREEL_LLM_URL")
    if not url:
        raise SystemExit(f"step {step} needs a model: set TOOLREEL_LLM_URL or give --llm-answer {step}=JSON")
    if schema is not None:
        prompt += "\n\nAnswer with JSON only, matching this JSON Schema:\n" + json.dumps(schema)
    model = os.environ.get("TOOLREEL_LLM_MODEL") or "default"
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    key = os.environ.get("TOOLREEL_LLM_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(url.rstrip("/") + "/chat/completions", json=body, headers=headers)
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise SystemExit(f"llm: the model endpoint {url} failed: {exc or type(exc).__name__}") from None
    if not isinstance(text, str):
        raise SystemExit(f"llm: the model endpoint {url} answered {type(text).__name__}, not text")
    return text
'''
