"""Order where order matters: the `depends_on` a saved template adds besides its data flow.

A replay runs a template as a DAG of its refs; what the refs do not say is the order of side effects.
A call that may write waits for the previous write and for the reads since it (they saw the state before
it); a read waits for the last write. Tools known to be read-only (`readOnlyHint` in the gateway's tool list)
are reads, so reads with no data between them run in parallel; a tool with no such knowledge is a write.
The order is kept across servers, not per server: servers share state the template cannot see (a file the
filesystem server writes is what the git server commits), so a write on one must not overtake a write on
another.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Call", "order_after"]


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    tool: str  # listed name, server__tool
    data: frozenset[str]  # the steps its refs already wait for


def order_after(calls: Sequence[Call], read_only: Collection[str]) -> Mapping[str, tuple[str, ...]]:
    """Each call's `depends_on`: the earlier calls it must wait for that its data flow does not already order."""
    last_write: str | None = None
    reads_since: list[str] = []
    out: dict[str, tuple[str, ...]] = {}
    for call in calls:
        reads = call.tool in read_only
        wanted = ([last_write] if last_write else []) + ([] if reads else reads_since)
        out[call.name] = tuple(step for step in wanted if step not in call.data)
        if reads:
            reads_since.append(call.name)
        else:
            last_write, reads_since = call.name, []
    return out
