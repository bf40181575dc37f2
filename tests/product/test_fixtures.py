"""The fixture servers behave as the other tests rely on, talking to them directly with the `mcp` client.

One `features` and one `ids` process serve the whole module over stdio on the handshake era; a few tests start
their own process (2026-07-28 era, HTTP, crashes). Everything waits on events under `fail_after`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    EmptyResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    Root,
    ServerNotification,
    SubscribeRequest,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    ToolListChangedNotification,
)
from pydantic import FileUrl

from fixtures import crash_at_start
from fixtures.servers import fixture_command, fixture_params, http_fixture

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("fixtures")]

WAIT: Final = 10.0
FEATURE_TOOLS: Final = {
    "echo", "add", "image", "annotated", "fail", "progress", "log", "toggle_tool", "bump", "add_resource",
    "ask_user", "sample", "roots", "slow", "hang", "crash", "counter", "refuse",
}  # fmt: skip
ROOT = Root(uri=FileUrl("file:///tmp/fixture-root"), name="fixture root")


@dataclass
class Inbox:
    """What the server sent the client unasked: notifications and log messages, awaitable by predicate."""

    notifications: list[ServerNotification] = field(default_factory=list)
    logs: list[LoggingMessageNotificationParams] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    async def on_message(self, message: ServerNotification | Exception) -> None:
        if not isinstance(message, Exception):
            self.notifications.append(message)
            self._wake()

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, found: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not found():
                await self._changed.wait()


async def answer_elicitation(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"answer": f"answer to {params.message}"})


async def answer_sampling(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="sampled text"), model="test-model")


async def answer_roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[ROOT])


def answering_client(server: Any, inbox: Inbox, *, mode: str = "legacy") -> Client:
    return Client(
        server,
        mode=mode,
        elicitation_callback=answer_elicitation,
        sampling_callback=answer_sampling,
        list_roots_callback=answer_roots,
        logging_callback=inbox.on_log,
        message_handler=inbox.on_message,
        read_timeout_seconds=WAIT,
    )


@dataclass(frozen=True)
class Features:
    client: Client
    inbox: Inbox
    counter_file: Path
    cancel_log: Path


@pytest.fixture(scope="module")
async def features(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Features]:
    scratch = tmp_path_factory.mktemp("features")
    counter_file, cancel_log = scratch / "counts.json", scratch / "cancelled.log"
    env = {"FIXTURE_COUNTER_FILE": str(counter_file), "FIXTURE_CANCEL_LOG": str(cancel_log)}
    inbox = Inbox()
    async with answering_client(fixture_params("features", env=env), inbox) as client:
        yield Features(client, inbox, counter_file, cancel_log)


@pytest.fixture(scope="module")
async def ids() -> AsyncIterator[Client]:
    async with Client(fixture_params("ids"), mode="legacy", read_timeout_seconds=WAIT) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    assert not result.is_error, result.content
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def leaf_errors(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in leaf_errors(inner)]
    return [group]


# --- features: tools ------------------------------------------------------------------------------------------


async def test_features_lists_every_tool_with_its_schemas(features: Features) -> None:
    tools = {tool.name: tool for tool in (await features.client.list_tools()).tools}
    assert set(tools) >= FEATURE_TOOLS
    assert "$defs" in (tools["add"].output_schema or {})
    annotated = tools["annotated"]
    assert annotated.annotations is not None and annotated.annotations.read_only_hint is True
    assert annotated.meta == {"fixtures/tool": {"kind": "annotated"}}
    assert features.client.instructions and "features" in features.client.instructions


async def test_echo_returns_its_text(features: Features) -> None:
    assert text_of(await features.client.call_tool("echo", {"text": "hello"})) == "hello"


async def test_add_returns_structured_output_with_nested_operands(features: Features) -> None:
    result = await features.client.call_tool("add", {"a": 2, "b": 3.5})
    assert result.structured_content == {"sum": 5.5, "operands": {"a": 2.0, "b": 3.5}}
    assert json.loads(text_of(result)) == result.structured_content


async def test_image_returns_image_audio_and_embedded_resource(features: Features) -> None:
    result = await features.client.call_tool("image", {})
    assert [item.type for item in result.content] == ["image", "audio", "resource"]


async def test_annotated_result_keeps_meta_and_annotations(features: Features) -> None:
    result = await features.client.call_tool("annotated", {})
    assert result.meta == {"fixtures/result": {"kind": "annotated"}}
    item = result.content[0]
    assert isinstance(item, TextContent) and item.annotations is not None and item.annotations.priority == 0.7


async def test_bad_arguments_and_fail_are_tool_errors(features: Features) -> None:
    assert (await features.client.call_tool("echo", {})).is_error
    failed = await features.client.call_tool("fail", {"message": "broken on purpose"})
    assert failed.is_error and failed.content == [TextContent(text="broken on purpose")]


async def test_progress_reaches_the_callers_progress_callback(features: Features) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    result = await features.client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result) == "completed 3 steps"
    assert seen == [(1, 3), (2, 3), (3, 3)]


async def test_log_message_reaches_the_logging_callback(features: Features) -> None:
    await features.client.call_tool("log", {"level": "warning", "message": "careful now"})
    await features.inbox.wait_for(lambda: any(log.data == "careful now" for log in features.inbox.logs))
    assert [log.level for log in features.inbox.logs if log.data == "careful now"] == ["warning"]


async def test_ask_user_is_answered_by_the_elicitation_callback(features: Features) -> None:
    result = await features.client.call_tool("ask_user", {"question": "Which colour?"})
    assert text_of(result) == "answer to Which colour?"


async def test_sample_returns_the_sampling_callback_text(features: Features) -> None:
    assert text_of(await features.client.call_tool("sample", {"prompt": "Say something"})) == "sampled text"


async def test_roots_returns_the_client_roots(features: Features) -> None:
    result = await features.client.call_tool("roots", {})
    assert result.structured_content == {"roots": [{"uri": "file:///tmp/fixture-root", "name": "fixture root"}]}


async def test_counter_increments_the_counter_file(features: Features) -> None:
    first = await features.client.call_tool("counter", {"key": "visits"})
    second = await features.client.call_tool("counter", {"key": "visits"})
    assert [first.structured_content, second.structured_content] == [
        {"key": "visits", "count": 1},
        {"key": "visits", "count": 2},
    ]
    assert json.loads(features.counter_file.read_text())["visits"] == 2


async def test_cancelled_slow_call_is_recorded_in_the_cancel_log(features: Features) -> None:
    with pytest.raises(MCPError) as timed_out:
        await features.client.call_tool("slow", {"seconds": 60}, read_timeout_seconds=0.3)
    assert timed_out.value.code == -32001
    # The server handles the client's notifications/cancelled before this later request, in order.
    assert text_of(await features.client.call_tool("echo", {"text": "after"})) == "after"
    assert "slow cancelled seconds=60.0" in features.cancel_log.read_text()


async def test_toggle_tool_changes_the_list_and_notifies(features: Features) -> None:
    inbox = features.inbox
    before = sum(isinstance(n, ToolListChangedNotification) for n in inbox.notifications)
    assert text_of(await features.client.call_tool("toggle_tool", {})) == "extra added"
    await inbox.wait_for(lambda: sum(isinstance(n, ToolListChangedNotification) for n in inbox.notifications) > before)
    assert "extra" in {tool.name for tool in (await features.client.list_tools()).tools}
    assert text_of(await features.client.call_tool("extra", {})) == "extra tool called"
    assert text_of(await features.client.call_tool("toggle_tool", {})) == "extra removed"
    assert "extra" not in {tool.name for tool in (await features.client.list_tools()).tools}


# --- features: resources, prompts, completions -----------------------------------------------------------------


async def test_resources_read_static_template_and_counter(features: Features) -> None:
    client = features.client
    static = (await client.read_resource("test://static")).contents[0]
    assert isinstance(static, TextResourceContents) and static.text == "This is the static test resource."
    item = (await client.read_resource("test://item/42")).contents[0]
    assert isinstance(item, TextResourceContents) and json.loads(item.text) == {"id": "42", "name": "item 42"}
    templates = (await client.list_resource_templates()).resource_templates
    assert [template.uri_template for template in templates] == ["test://item/{id}"]


async def test_bump_notifies_subscribers_of_the_counter(features: Features) -> None:
    client, inbox = features.client, features.inbox
    subscribe = SubscribeRequest(params=SubscribeRequestParams(uri="test://counter"))
    await client.session.send_request(subscribe, EmptyResult)
    count = text_of(await client.call_tool("bump", {}))
    await inbox.wait_for(
        lambda: any(
            isinstance(n, ResourceUpdatedNotification) and n.params.uri == "test://counter" for n in inbox.notifications
        )
    )
    current = (await client.read_resource("test://counter")).contents[0]
    assert isinstance(current, TextResourceContents) and current.text == count


async def test_add_resource_lists_it(features: Features) -> None:
    assert text_of(await features.client.call_tool("add_resource", {"name": "fresh"})) == "test://dynamic/fresh"
    assert "test://dynamic/fresh" in {r.uri for r in (await features.client.list_resources()).resources}


async def test_greet_prompt_and_completions(features: Features) -> None:
    client = features.client
    prompt = await client.get_prompt("greet", {"name": "Ada", "style": "formal"})
    assert prompt.messages[0].content == TextContent(text="Good day, Ada!")
    names = await client.complete(PromptReference(name="greet"), {"name": "name", "value": "al"})
    assert names.completion.values == ["alice", "albert"]
    ids = await client.complete(ResourceTemplateReference(uri="test://item/{id}"), {"name": "id", "value": "4"})
    assert ids.completion.values == ["42"]


# --- ids -------------------------------------------------------------------------------------------------------


async def test_ids_mints_user_and_order_ids_and_reads_them_back(ids: Client) -> None:
    user = (await ids.call_tool("create_user", {"name": "Ada", "email": "ada@example.com"})).structured_content
    assert isinstance(user, dict) and user["id"].startswith("usr_")
    assert (await ids.call_tool("get_user", {"id": user["id"]})).structured_content == user
    items = [{"sku": "apple", "qty": 4}, {"sku": "cheese", "qty": 1}]
    order = (await ids.call_tool("create_order", {"user_id": user["id"], "items": items})).structured_content
    assert isinstance(order, dict) and order["order_id"].startswith("ord_")
    assert order["total"] == 9.0 and [line["amount"] for line in order["lines"]] == [2.0, 7.0]
    assert (await ids.call_tool("get_order", {"order_id": order["order_id"]})).structured_content == order
    assert (await ids.call_tool("get_user", {"id": "usr_missing"})).is_error


async def test_ids_pages_users_by_cursor(ids: Client) -> None:
    for name in ("P1", "P2", "P3"):
        await ids.call_tool("create_user", {"name": name, "email": f"{name.lower()}@paging.test"})
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = (await ids.call_tool("list_users", {"cursor": cursor} if cursor else {})).structured_content
        assert isinstance(page, dict) and len(page["users"]) <= 2
        seen += [user["name"] for user in page["users"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[-3:] == ["P1", "P2", "P3"]


async def test_ids_search_is_json_in_text_and_note_is_plain_text(ids: Client) -> None:
    await ids.call_tool("create_user", {"name": "Searchable", "email": "s@search.test"})
    found = await ids.call_tool("search", {"query": "search.test"})
    assert found.structured_content is None
    body = json.loads(text_of(found))
    assert body["count"] == 1 and body["results"][0]["name"] == "Searchable"
    assert text_of(await ids.call_tool("note", {"text": "remember"})) == "Noted: remember"


# --- start-up failures and crashes ------------------------------------------------------------------------------


async def test_crash_at_start_exits_3_with_its_stderr() -> None:
    done = await anyio.run_process(fixture_command("crash_at_start"), check=False, cwd=Path(__file__).parents[2])
    assert (done.returncode, done.stdout) == (crash_at_start.EXIT_STATUS, b"")
    assert done.stderr.decode().strip() == crash_at_start.MESSAGE


async def test_crash_at_start_fails_the_handshake() -> None:
    with tempfile.TemporaryFile("w+") as errlog:
        with pytest.raises(BaseExceptionGroup) as failed:
            async with Client(stdio_client(fixture_params("crash_at_start"), errlog=errlog), mode="legacy"):
                pass
        errlog.seek(0)
        assert crash_at_start.MESSAGE in errlog.read()
    assert [(e.code, e.message) for e in leaf_errors(failed.value) if isinstance(e, MCPError)] == [
        (-32000, "Connection closed")
    ]


async def test_silent_server_times_out_at_initialize() -> None:
    with pytest.raises(BaseExceptionGroup) as failed:
        async with Client(fixture_params("silent"), mode="legacy", read_timeout_seconds=0.5):
            pass
    assert [e.code for e in leaf_errors(failed.value) if isinstance(e, MCPError)] == [-32001]


async def test_crash_tool_ends_the_server_process() -> None:
    with pytest.raises(BaseExceptionGroup) as failed:
        async with Client(fixture_params("features"), mode="legacy") as client:
            await client.call_tool("crash", {})
    assert [e.message for e in leaf_errors(failed.value) if isinstance(e, MCPError)] == ["Connection closed"]


# --- the 2026-07-28 era and HTTP -------------------------------------------------------------------------------


async def test_modern_era_asks_through_input_required_and_listens_for_changes() -> None:
    inbox = Inbox()
    async with answering_client(fixture_params("features"), inbox, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("ask_user", {"question": "Name?"})) == "answer to Name?"
        assert text_of(await client.call_tool("sample", {"prompt": "hi"})) == "sampled text"
        roots = await client.call_tool("roots", {})
        assert roots.structured_content == {"roots": [{"uri": "file:///tmp/fixture-root", "name": "fixture root"}]}
        async with client.listen(tools_list_changed=True) as changes:
            await client.call_tool("toggle_tool", {})
            with anyio.fail_after(WAIT):
                event = await anext(changes)
        assert isinstance(event, ToolsListChanged)


async def test_features_over_http_serves_both_eras() -> None:
    async with http_fixture("features") as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        for mode, version in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
            async with Client(url, mode=mode, read_timeout_seconds=WAIT) as client:
                assert client.protocol_version == version
                assert text_of(await client.call_tool("echo", {"text": mode})) == mode


@pytest.mark.real_exec
def test_fixture_commands_use_this_interpreter() -> None:
    assert fixture_command("ids") == [sys.executable, "-m", "fixtures.ids"]
    with pytest.raises(ValueError, match="unknown fixture server"):
        fixture_command("nope")
