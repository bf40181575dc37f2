"""toolreel's replayer: runs saved templates in auto mode, without the LLM (SPEC §7, §8).

    async with Engine(store, caller) as engine:          # caller: core.caller.ToolCaller
        execution = await engine.run_template(template, {"repo": "a/b"})
        engine.start(template, inputs, deadline=None) -> id    # pending, inputs checked
        engine.run(id, progress=None) -> Execution             # drive to the end or a pause
        engine.run_template(template, inputs, wait=True, deadline=None, progress=None) -> Execution
        engine.cancel(id) -> Execution                         # `cancelled` within a second, from any process
        engine.resume(id, response=None) -> Execution          # paused (response yes/no) or interrupted
        engine.recover(limit=64) -> [id]                       # resume orphaned runs in the background
        engine.get(id) / engine.view(id) -> Execution / dict   # `execution_view` of it
    load_template(store, name, version=None) -> Template     # the default template loader
    Worker(engine).run(stop_event)                           # `toolreel worker`

Semantics chosen where the SPEC is silent:
- A step runs once all its dependencies finished (succeeded or skipped): a step whose dependency
  was skipped runs, and refs to the skipped step give null. A `for_each` over null iterates nothing.
- A step failing fails the execution at once: steps not started stay unstarted (its direct
  dependents are recorded `failed`, naming it), in-flight steps are cancelled upstream and recorded
  `cancelled`. `include_failed` steps may fail without failing the execution; a ref into them
  fails the referring step with their reason.
- `return` ends the execution with its value as output (over the template's `output`); in-flight
  steps are cancelled, steps not started are recorded `skipped`.
- `when` comparisons between incompatible types are false; `exists` means "resolves to non-null".
- A paused execution asks one question at a time: `resume(id, response)` answers the oldest
  waiting approval (a yes/no word); others keep waiting, and their prompts come next.
- Retries count attempts within one drive: re-running an attempt cut short by a crash does not
  spend the retry budget. Only successful results are stored under an idempotency key.
- A `template` step's child execution has a deterministic id, so a resumed parent adopts the
  child its crashed predecessor started; children are driven by their parents, never on their own.
- If the task awaiting `run`/`run_template`/`resume` is cancelled, the execution is cancelled.
  `Engine.aclose()` (shutdown) instead interrupts: the execution stays `running`, claim released.
"""

from replayer._engine import MAX_DEPTH, Engine, TemplateLoader, child_execution_id, definition_hash, load_template
from replayer._inputs import bind_inputs, parse_cli_value
from replayer._policy import retry_delay
from replayer._view import execution_view
from replayer._worker import Worker

__all__ = [
    "MAX_DEPTH",
    "Engine",
    "TemplateLoader",
    "Worker",
    "bind_inputs",
    "child_execution_id",
    "definition_hash",
    "execution_view",
    "load_template",
    "parse_cli_value",
    "retry_delay",
]
