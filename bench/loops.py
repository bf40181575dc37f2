"""Loops replayed on a changed world: `.venv/bin/python bench/loops.py`.

Each family is a task an agent does once per element of a list (or per value the user gave): the agent is
run against a world of 3 elements and recorded, the recording is templatized (and verified), then the saved
template is replayed with the real replayer (`Engine`, in-memory store) against worlds of 1 and of 5 elements.
A replay is exact when it succeeds and makes exactly the calls the agent makes in that world, in the same
order per tool.
The world answers from its data and mints ids as servers do: it stands in for the servers because what is
measured is the template, and every family's world is the same small set of rules.
Prints one line per family and world, then the bar: every family exact on 1 and on 5; exits 1 if missed.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolreel.core.caller import ToolCall
from toolreel.core.errors import ToolreelError
from toolreel.core.model import JSON, StepKind, StepRecord, StepStatus
from toolreel.core.store import open_store
from toolreel.replayer import Engine
from toolreel.templatizer import templatize, verify

NAMES = ["Ann Lee", "Bob Stone", "Cyd Marsh", "Dee Ford", "Eve Kahn", "Fay Moss"]
TITLES = ["Fix the printer", "Order toner", "Call the landlord", "Renew the lease", "Book the van"]


@dataclass
class World:
    """Users and tickets; every call is logged; ids are minted from the world's seed and a counter."""

    seed: str
    users: list[dict[str, Any]]
    tickets: list[dict[str, Any]]
    channels: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, str]] = field(default_factory=list)
    calls: list[tuple[str, JSON]] = field(default_factory=list)
    minted: int = 0

    def mint(self, prefix: str) -> str:
        self.minted += 1
        return f"{prefix}_{_hex(f'{self.seed}/{self.minted}')}"

    def answer(self, tool: str, args: Mapping[str, Any]) -> JSON:
        self.calls.append((tool, dict(args)))
        match tool:
            case "crm__list_users":
                return {"data": {"users": self.users}, "total": len(self.users)}
            case "crm__get_user":
                user = next(u for u in self.users if u["id"] == args["id"])
                return {"id": user["id"], "email": f"{user['name'].split()[0].lower()}.{user['id'][-4:]}@example.com"}
            case "shop__create_order":
                return {"order_id": self.mint("ord"), "user_id": args["user_id"], "total": 12.5}
            case "desk__list_tickets":
                return {"tickets": self.tickets}
            case "desk__close_ticket":
                return {"ticket": args["ticket_id"], "state": "closed"}
            case "chat__list_channels":
                return {"channels": self.channels}
            case "desk__create_issue":
                return {"id": self.mint("iss"), "title": args["title"]}
            case "kube__pods_list":
                return _table(self.pods)
            case "kube__pods_delete":
                return f"pod {args['name']} deleted"
            case _:
                return {"ok": True}


def _hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def world(size: int, seed: str) -> World:
    users = [
        {"id": f"usr_{hashlib.sha256(f'{seed}/u{i}'.encode()).hexdigest()[:12]}", "name": NAMES[i]} for i in range(size)
    ]
    # Every other ticket is open, and one more closed ticket sits first: a filter, not a prefix.
    # Some open ones are pending: "every ticket not closed" is a filter that excludes.
    tickets = [
        {"id": f"T-{seed[:3]}-{i:03d}", "state": ("pending" if i % 4 == 3 else "open") if i % 2 else "closed"}
        for i in range(2 * size + 1)
    ]
    # The channel the task posts to sits after `size` others: its position shifts from world to world.
    names = [f"team-{i}" for i in range(size)] + ["triage", "random"]
    channels = [{"id": f"C{_hex(f'{seed}/c{i}')[:8].upper()}", "name": name} for i, name in enumerate(names)]
    # A kubectl-style table (text) where every other pod crash-loops: the rows a status word selects.
    pods = [
        {"NAME": f"api-{_hex(f'{seed}/p{i}')[:10]}", "STATUS": "CrashLoopBackOff" if i % 2 else "Running"}
        for i in range(2 * size + 1)
    ]
    return World(seed, users, tickets, channels, pods)


def _table(rows: list[dict[str, str]]) -> str:
    """Rows as `kubectl get` prints them: a header of capitals, columns padded to align."""
    lines = [("NAME", "READY", "STATUS", "AGE")]
    lines += [(r["NAME"], "0/1" if r["STATUS"] != "Running" else "1/1", r["STATUS"], "3d2h") for r in rows]
    widths = [max(len(line[i]) for line in lines) + 3 for i in range(4)]
    return "\n".join("".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


# --------------------------------------------------------------------------- the agents (what a correct agent does)


def orders_and_notes(w: World, given: Mapping[str, Any]) -> None:
    users = w.answer("crm__list_users", {"limit": 100})["data"]["users"]
    for user in users:
        order = w.answer("shop__create_order", {"user_id": user["id"], "items": [{"sku": "cheese", "qty": 1}]})
        w.answer("chat__post", {"text": f"Order {order['order_id']} placed for {user['name']}"})


def emails(w: World, given: Mapping[str, Any]) -> None:
    users = w.answer("crm__list_users", {"limit": 100})["data"]["users"]
    found = [w.answer("crm__get_user", {"id": user["id"]}) for user in users]
    w.answer("chat__post", {"to": [f["email"] for f in found], "text": "Welcome aboard"})


def close_open(w: World, given: Mapping[str, Any]) -> None:
    tickets = w.answer("desk__list_tickets", {"project": "ops"})["tickets"]
    for ticket in tickets:
        if ticket["state"] == "open":
            w.answer("desk__close_ticket", {"ticket_id": ticket["id"], "reason": "stale"})


def nudge_not_closed(w: World, given: Mapping[str, Any]) -> None:
    tickets = w.answer("desk__list_tickets", {"project": "ops"})["tickets"]
    for ticket in tickets:
        if ticket["state"] != "closed":
            w.answer("desk__nudge", {"ticket_id": ticket["id"]})


def list_open(w: World, given: Mapping[str, Any]) -> None:
    tickets = w.answer("desk__list_tickets", {"project": "ops"})["tickets"]
    w.answer("chat__post", {"text": "Open: " + ", ".join(t["id"] for t in tickets if t["state"] == "open")})


def post_to_triage(w: World, given: Mapping[str, Any]) -> None:
    channels = w.answer("chat__list_channels", {})["channels"]
    triage = next(c for c in channels if c["name"] == "triage")
    w.answer("chat__post", {"channel": triage["id"], "text": "New incident"})


def delete_crashlooping(w: World, given: Mapping[str, Any]) -> None:
    text = w.answer("kube__pods_list", {"namespace": "payments"})
    assert isinstance(text, str)
    for line in text.splitlines()[1:]:
        name, _, status, _ = line.split()
        if status == "CrashLoopBackOff":
            w.answer("kube__pods_delete", {"name": name, "namespace": "payments"})


def welcome_everyone(w: World, given: Mapping[str, Any]) -> None:
    users = w.answer("crm__list_users", {"limit": 100})["data"]["users"]
    w.answer("chat__post", {"text": "Welcome " + ", ".join(u["name"] for u in users) + "!"})


def issues(w: World, given: Mapping[str, Any]) -> None:
    for title in given["titles"]:
        w.answer("desk__create_issue", {"title": title, "project": "ops"})


@dataclass(frozen=True)
class Family:
    name: str
    agent: Callable[[World, Mapping[str, Any]], None]
    per_call_inputs: bool = False  # the user gave one value per call: named title, title_2, ...


FAMILIES = (
    Family("group: order + note per user", orders_and_notes),
    Family("read per user, all ids after", emails),
    Family("write per filtered element", close_open),
    Family("write per element not closed", nudge_not_closed),
    Family("one user input per call", issues, per_call_inputs=True),
    Family("an element of a shifting list", post_to_triage),
    Family("write per row of a text table", delete_crashlooping),
    Family("one text listing every element", welcome_everyone),
    Family("one text listing filtered elements", list_open),
)


# --------------------------------------------------------------------------- record, save, replay


def recorded(calls: list[tuple[str, JSON]], outputs: list[JSON]) -> list[StepRecord]:
    """The calls as the recorder stores them: `<tool>_<n>`, seq from 1, arguments and output."""
    counts: dict[str, int] = {}
    steps: list[StepRecord] = []
    for seq, ((listed, args), output) in enumerate(zip(calls, outputs, strict=True), start=1):
        server, _, tool = listed.partition("__")
        counts[tool] = counts.get(tool, 0) + 1
        steps.append(
            StepRecord(
                execution_id="bench", name=f"{tool}_{counts[tool]}", seq=seq, kind=StepKind.TOOL,
                status=StepStatus.SUCCEEDED, server=server, tool=tool, input=args, resolved_input=args, output=output,
            )
        )  # fmt: skip
    return steps


@dataclass
class _Recorder(World):
    """A world that keeps each answer, so the recording holds what the agent saw."""

    outputs: list[JSON] = field(default_factory=list)

    def answer(self, tool: str, args: Mapping[str, Any]) -> JSON:
        out = super().answer(tool, args)
        self.outputs.append(out)
        return out


def record(family: Family, size: int) -> tuple[list[StepRecord], dict[str, Any]]:
    base = world(size, "recorded")
    w = _Recorder(base.seed, base.users, base.tickets, base.channels, base.pods)
    given = {"titles": TITLES[:size]}
    family.agent(w, given)
    steps = recorded(w.calls, w.outputs)
    named = {("title" if i == 0 else f"title_{i + 1}"): t for i, t in enumerate(given["titles"])}
    return steps, (named if family.per_call_inputs else {})


class _WorldCaller:
    def __init__(self, w: World) -> None:
        self.world = w

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        answer = self.world.answer(call.name, call.arguments)
        if isinstance(answer, str):  # a tool that prints text
            return {"content": [{"type": "text", "text": answer}], "isError": False}
        return {"content": [], "structuredContent": answer, "isError": False}

    def server_of(self, name: str) -> str | None:
        return name.partition("__")[0]


async def replay(template: Any, inputs: Mapping[str, Any], w: World) -> str:
    store = open_store("sqlite://")
    try:
        async with Engine(store, _WorldCaller(w)) as engine:
            execution = await engine.run_template(template, inputs)
        return str(execution.status)
    finally:
        store.close()


def _inputs(template: Any, titles: list[str]) -> dict[str, Any]:
    """The user's titles: the list input, or (a template with one input per recorded call) one per input,
    the last repeated where the user has fewer: such a template cannot take another number of them."""
    out: dict[str, Any] = {}
    for name, spec in template.inputs.items():
        if spec.type == "array":
            out[name] = titles
        else:
            k = int(name.rpartition("_")[2]) - 1 if name.rpartition("_")[2].isdigit() else 0
            out[name] = titles[min(k, len(titles) - 1)]
    return out


def by_tool(calls: list[tuple[str, JSON]]) -> dict[str, list[JSON]]:
    out: dict[str, list[JSON]] = {}
    for tool, args in calls:
        out.setdefault(tool, []).append(args)
    return out


def run_family(family: Family) -> list[tuple[int, bool, str]]:
    steps, named = record(family, 3)
    result = templatize([steps], name="bench", inputs=named)
    if not verify(result, [steps]).verified:
        return [(size, False, "not verified") for size in (1, 5)]
    out = []
    for size in (1, 5):
        given = {"titles": TITLES[:size]}
        expected, replayed = world(size, f"world{size}"), world(size, f"world{size}")
        family.agent(expected, given)
        inputs = _inputs(result.template, given["titles"]) if family.per_call_inputs else {}
        try:
            status = anyio.run(replay, result.template, inputs, replayed)
        except ToolreelError as exc:  # a template that cannot take this world's inputs
            status = f"refused: {exc}"
        exact = status == "succeeded" and by_tool(replayed.calls) == by_tool(expected.calls)
        out.append((size, exact, f"{status}, {len(replayed.calls)} calls (a correct agent: {len(expected.calls)})"))
    return out


def main() -> int:
    exact = total = 0
    for family in FAMILIES:
        for size, ok, detail in run_family(family):
            total += 1
            exact += ok
            print(f"{family.name:<34} {size} element(s): {'exact' if ok else 'WRONG'}  ({detail})")
    print(f"\n{exact}/{total} replays exact")
    passed = exact == total
    print(f"[{'PASS' if passed else 'FAIL'}] every loop family recorded on 3 replays exactly on 1 and on 5")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
