"""Order where order matters: the `depends_on` a saved template adds besides its data flow.

A replay runs a template as a DAG of its refs; what the refs do not say is the order of side effects.
Per server: a call that may write waits for the server's previous write and for the reads since it (they
saw the state before it); a read waits for the server's last write. Tools known to be read-only
(`readOnlyHint` in the gateway's tool list) are reads, so reads with no data between them run in
parallel; a tool with no such knowledge is a write. Servers are independent of each other.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Call", "order_after"]


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    tool: str  # listed name, server__tool
    server: str
    data: frozenset[str]  # the steps its refs already wait for


@dataclass
class _Server:
    last_write: str | None = None
    reads_since: list[str] = field(default_factory=list)


def order_after(calls: Sequence[Call], read_only: Collection[str]) -> Mapping[str, tuple[str, ...]]:
    """Each call's `depends_on`: the earlier calls it must wait for that its data flow does not already order."""
    servers: dict[str, _Server] = {}
    out: dict[str, tuple[str, ...]] = {}
    for call in calls:
        state = servers.setdefault(call.server, _Server())
        reads = call.tool in read_only
        wanted = ([state.last_write] if state.last_write else []) + ([] if reads else state.reads_since)
        out[call.name] = tuple(step for step in wanted if step not in call.data)
        if reads:
            state.reads_since.append(call.name)
        else:
            state.last_write, state.reads_since = call.name, []
    return out
