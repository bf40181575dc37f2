"""Refs whose JSONPath can run long are resolved in a worker process, within a time and a memory budget.

jsonpath-ng evaluates a filter (`[?(...)]`) or a descendant path (`..key`) in pure Python: one clause over
100,000 items takes seconds, a few thousand clauses minutes. On the event loop that froze every client of
the gateway, and a thread would still hold the interpreter's lock most of the time. A worker process
(anyio's pool) runs it apart: the loop stays free, and a worker still busy when the budget ends is killed,
so the caller gets a named error and the next call a fresh worker. Plain paths (keys, indexes), wildcards,
slices and unions cost no more than reading the output once: they stay on the loop, as does everything
when no ref in the value needs a worker.
"""

from __future__ import annotations

import dataclasses
import os
import resource
from collections.abc import Callable, Iterable
from typing import Final

import anyio
from anyio import BrokenWorkerProcess, to_process

from toolreel.core.errors import RefBudgetError, RefError
from toolreel.core.model import JSON
from toolreel.core.refs import MappingScope, Ref, Scope, evaluate, parse_ref, refs_in, resolve

__all__ = ["REF_MEMORY_ENV", "REF_TIME_ENV", "costly", "ref_budget", "resolve_bounded"]

REF_TIME_ENV: Final = "TOOLREEL_REF_TIME_LIMIT"
REF_MEMORY_ENV: Final = "TOOLREEL_REF_WORKER_MB"
DEFAULT_SECONDS: Final = 5.0
DEFAULT_MEMORY_MB: Final = 1024
WORKER_NICENESS: Final = 10
INLINE_WORK: Final = 1_000_000  # output bytes x path characters below which a filter runs on the loop
WORKERS: Final = 2  # worker processes at most: more costly refs wait their turn within their own budget

Source = tuple[Callable[[bytes], JSON], bytes]
"""A step output as bytes and the function that parses them (a module-level one: it is sent by name)."""
Sources = Callable[[str], Source | None]

_limiter: anyio.CapacityLimiter | None = None
_memory_set = False  # in a worker: its address-space limit and niceness are in place


def ref_budget() -> tuple[float, int]:
    """Seconds and MiB a costly ref may take (`TOOLREEL_REF_TIME_LIMIT`, `TOOLREEL_REF_WORKER_MB`)."""
    return _positive(REF_TIME_ENV, DEFAULT_SECONDS), int(_positive(REF_MEMORY_ENV, DEFAULT_MEMORY_MB))


def _positive(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default


def costly(ref: Ref) -> bool:
    """A ref whose path runs a JSONPath filter or a descendant search."""
    return ref.path is not None and ("[?" in ref.path or ".." in ref.path)


async def resolve_bounded(value: JSON, scope: Scope, sources: Sources | None = None) -> JSON:
    """`resolve(value, scope)`; when a ref in `value` is costly, in a worker process within the budget.
    `sources`: a step output's parser and bytes, when it has them, which the worker parses itself (pickling
    a large parsed output would hold the loop longer than the parse). Raises RefError as `resolve` does,
    and RefBudgetError when the budget is spent."""
    refs = refs_in(value)
    if not any(costly(ref) for ref in refs):
        return resolve(value, scope)
    frozen, raw = _snapshot(scope, refs, sources or _no_sources)
    if _small(refs, raw):
        return resolve(value, scope)
    seconds, memory_mb = ref_budget()
    # A worker's start (a second or more on a busy machine) is not the ref's to pay: one is made ready first.
    await to_process.run_sync(_ready, limiter=_workers())
    try:
        with anyio.fail_after(seconds):
            return await to_process.run_sync(
                _resolve_in_worker, value, frozen, raw, memory_mb, cancellable=True, limiter=_workers()
            )
    except TimeoutError:
        raise RefBudgetError(
            f"{_named(refs)} took longer than {seconds:g} s to evaluate (the limit on a ref's JSONPath filter, "
            f"{REF_TIME_ENV}); it was stopped and nothing was sent. Narrow the filter, or filter fewer items",
            ref=_first_costly(refs),
        ) from None
    except BrokenWorkerProcess:
        raise RefBudgetError(
            f"{_named(refs)} could not be evaluated: the worker process evaluating it ended "
            f"(past its {memory_mb} MiB, {REF_MEMORY_ENV}?); nothing was sent",
            ref=_first_costly(refs),
        ) from None


def _small(refs: Iterable[Ref], raw: dict[str, Source]) -> bool:
    """A filter over a small output costs less than a worker's round trip (tens of ms on a busy machine):
    its work grows with the items (about the output's bytes) times the clauses (about the path's length),
    and under INLINE_WORK it is a few milliseconds at most, so it runs where it is."""
    work = sum(len(raw[ref.root][1]) * len(ref.path or "") for ref in refs if costly(ref) and ref.root in raw)
    return work <= INLINE_WORK and all(ref.root in raw for ref in refs if costly(ref))


def _workers() -> anyio.CapacityLimiter:
    global _limiter
    if _limiter is None:
        _limiter = anyio.CapacityLimiter(WORKERS)
    return _limiter


def _no_sources(name: str) -> Source | None:
    return None


def _snapshot(scope: Scope, refs: Iterable[Ref], sources: Sources) -> tuple[MappingScope, dict[str, Source]]:
    """What the refs read, as values a worker can be sent: parsed outputs, or the bytes to parse them from.
    A step that does not exist or failed is refused here, on the loop, with the message `resolve` gives."""
    steps: dict[str, JSON] = {}
    raw: dict[str, Source] = {}
    for ref in refs:
        if ref.root in ("input", "item", "index") or ref.root in steps or ref.root in raw:
            continue
        source = sources(ref.root)
        if source is not None:
            raw[ref.root] = source
            continue
        plain = parse_ref("@" + ref.root)
        assert plain is not None
        steps[ref.root] = evaluate(plain, scope)  # RefError for a step that is unknown or failed
    frozen = MappingScope(
        steps=steps, inputs=dict(scope.inputs), item=scope.item, index=scope.index, in_loop=scope.in_loop
    )
    return frozen, raw


def _ready() -> None:
    pass


def _resolve_in_worker(value: JSON, scope: MappingScope, raw: dict[str, Source], memory_mb: int) -> JSON:
    global _memory_set
    if not _memory_set:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.nice(WORKER_NICENESS)  # the CPU goes to the gateway and its other clients first
        _memory_set = True
    try:
        steps = {**scope.steps, **{name: parse(data) for name, (parse, data) in raw.items()}}
        return resolve(value, dataclasses.replace(scope, steps=steps))
    except MemoryError:
        raise RefError(
            f"a ref's JSONPath went past the {memory_mb} MiB its worker may use ({REF_MEMORY_ENV})"
        ) from None


def _first_costly(refs: Iterable[Ref]) -> str:
    return next((ref.text for ref in refs if costly(ref)), "")


def _named(refs: Iterable[Ref]) -> str:
    text = _first_costly(refs)
    return f"`{text if len(text) <= 80 else text[:79] + '…'}`"
