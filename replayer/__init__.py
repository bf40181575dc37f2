"""toolreel's replayer: runs saved templates in auto mode, without the LLM (SPEC §7, §8).

    async with Engine(store, caller) as engine:        # caller: core.caller.ToolCaller (the gateway's hub)
        engine.start(template, inputs, deadline=None, execution_id=None) -> id  # `pending`, checked; an id
                                                                     # already run is returned, not run again
        engine.run(id, progress=None) -> Execution                   # drive to the end or a pause
        engine.run_template(template, inputs, wait=True, deadline=None, progress=None) -> Execution
        engine.wait(id) -> Execution                                 # once finished or paused
        engine.cancel(id) -> Execution                               # `cancelled` within 1 s, from any process
        engine.resume(id, response=None, progress=None) -> Execution # paused (yes/no, or JSON fields) or interrupted
        engine.retry(id, from_step=None, inputs=None) -> Execution   # failed/cancelled: same id, attempt + 1
        engine.signal(id, name, data=None) -> Execution              # to the step waiting for it; drives on
        engine.recover(limit=64) -> [id]                             # drive orphaned runs in the background
        engine.get(id) -> Execution; engine.view(id) -> dict         # the `toolreel__get_execution` JSON
        engine.aclose(grace=0)                                       # shutdown: runs left resumable
    Worker(engine).run(stop_event)                                 # the loop of `toolreel worker`: starts
                                                                   # due schedule ticks, claims, drives
    execution_view(execution, steps) -> dict; load_template(store, name, version=None) -> Template
    dry_replay(template, inputs, recording) -> [Difference]      # recorded outputs preset, nothing called

`deadline` is epoch seconds; past it the run fails with `deadline_exceeded: ...`. `progress` gets
(steps finished, steps in the template, "name: status") after each step. `Engine(..., approver=)`
asks approvals (None: the run pauses), `observer=` sees every step row (the CLI's live view),
`secret_values=` are redacted from stored rows (secret inputs always are).

Semantics chosen where the SPEC is silent:
- A step runs once all its dependencies finished (succeeded or skipped): a step whose dependency
  was skipped runs, and refs to the skipped step give null. A `for_each` over null iterates nothing.
- `max_concurrency` bounds upstream calls in flight (for_each items included); approvals, returns
  and child templates do not hold a slot (a child waiting for slots its parent holds would deadlock).
- A step failing fails the execution at once: steps not started stay unstarted (its direct
  dependents are recorded `failed`, naming it), in-flight steps are cancelled upstream and recorded
  `cancelled`. `include_failed` steps may fail without failing the execution; a ref into them
  fails the referring step with their reason.
- `return` ends the execution with its value as output (over the template's `output`); in-flight
  steps are cancelled, steps not started are recorded `skipped`.
- `when` comparisons between incompatible types are false; `exists` means "resolves to non-null".
- A paused execution asks one question at a time: `resume(id, response)` answers the oldest
  waiting approval (a yes/no word, or for `approve: {message, schema}` a JSON object of the fields,
  checked before anything resumes); others keep waiting, and their prompts come next. Resuming a
  child execution resumes its root.
- `code` steps run one at a time per engine, each in a fresh QuickJS sandbox in a worker thread
  (the sandbox's time limit counts the process's CPU time).
- Retries count attempts within one drive: re-running an attempt cut short by a crash does not
  spend the retry budget. Only successful results are stored under an idempotency key; `global`
  keys are shared by every template, `execution` keys by one run and its resumes.
- A step's start row is written once it has run 50 ms (its result row carries the start anyway);
  its result row is committed, with everything queued before it, before its dependents start.
- A `template` step's child execution has a deterministic id, so a resumed parent adopts the
  child its crashed predecessor started; children are driven by their parents, never on their own.
- `timeout` and `retry` apply to `template` steps (and to each for_each item of one) per attempt:
  each attempt runs a new child (its id keyed by the attempt, so recovery adopts that attempt's
  child, never an earlier failed one, which stays as it was). Past `timeout` the child is cancelled
  with its upstream calls (its error names the parent step's timeout) and the attempt fails as
  `timeout`; a `failed` child is a `tool_error`; a child that cannot start because no upstream
  lists one of its tools is `transient`. Time a child spends `paused` does not count: the parent's
  drive ends when the child pauses, and the resumed attempt gets what was left of its timeout.
- If the task awaiting `run`/`run_template`/`resume` is cancelled, the execution is cancelled.
  `Engine.aclose()` (shutdown) instead interrupts: the execution stays `running`, claim released.
"""

from toolreel.core.view import execution_view
from toolreel.replayer._dry import Difference, dry_replay
from toolreel.replayer._engine import Engine, TemplateLoader
from toolreel.replayer._inputs import bind_inputs, parse_cli_value, refuse_given_secrets
from toolreel.replayer._ledger import MAX_DEPTH, child_execution_id, definition_hash, load_template
from toolreel.replayer._policy import retry_delay
from toolreel.replayer._worker import Worker

__all__ = [
    "MAX_DEPTH",
    "Difference",
    "Engine",
    "TemplateLoader",
    "Worker",
    "bind_inputs",
    "child_execution_id",
    "definition_hash",
    "dry_replay",
    "execution_view",
    "load_template",
    "parse_cli_value",
    "refuse_given_secrets",
    "retry_delay",
]
