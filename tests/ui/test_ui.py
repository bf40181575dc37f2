"""The web view without a browser: its credentials and Origin rules are those of `/mcp`, `--no-ui`
turns it off, `toolreel ui` serves a store on its own, and the review behind "save as template"
turns a rejected ref back into the recorded literal and verifies the result against the recording."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from fixtures._zygote import launch_command
from tests.gw import gateway_env, http_gateway
from tests.ui_data import thousand_step_recording, web_view
from toolreel.core.errors import TemplateError
from toolreel.core.model import StepKind, StepRecord, StepStatus
from toolreel.ui._review import Decision, ReviewRequest, review

TOKEN = "ui-test-token"
WRAPPED = ["--name", "ids", "--", sys.executable, "-m", "fixtures.ids"]


def _cookie(session: str) -> dict[str, str]:
    return {"Cookie": f"toolreel_ui={session}"}


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_web_view_is_refused_exactly_as_mcp_is(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 'toolreel.db'}", UI_TOKEN=TOKEN)
    async with http_gateway(["--token-env", "UI_TOKEN", *WRAPPED], env) as gw:
        base = f"http://127.0.0.1:{gw.port}"
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            mcp = await http.post("/mcp", json={})
            for path in ("/ui/", "/ui/executions/abc", "/ui/api/executions", "/ui/static/app.js", "/ui/?token=wrong"):
                answer = await http.get(path)
                assert (answer.status_code, answer.text) == (mcp.status_code, mcp.text), path
            assert mcp.status_code == 401
            refused = await http.get("/ui/", headers={"Cookie": "toolreel_ui=forged"})
            assert (refused.status_code, refused.text) == (mcp.status_code, mcp.text)

            login = await http.get(f"/ui/executions/abc?token={TOKEN}")
            assert login.status_code == 303 and login.headers["location"] == "/ui/executions/abc"
            cookie = login.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
            assert TOKEN not in cookie, "the cookie proves the token without being it"
            session = cookie.split(";")[0].split("=", 1)[1]
            page = await http.get("/ui/executions/abc", headers=_cookie(session))
            assert page.status_code == 200 and "content-security-policy" in page.headers
            listing = await http.get("/ui/api/executions", headers=_cookie(session))
            assert listing.status_code == 200 and listing.json()["executions"] == []

            foreign = {"Origin": "http://evil.example"}
            mcp_foreign = await http.post("/mcp", json={}, headers={**foreign, "Authorization": f"Bearer {TOKEN}"})
            ui_foreign = await http.get("/ui/api/executions", headers={**foreign, **_cookie(session)})
            assert mcp_foreign.status_code == 403
            assert (ui_foreign.status_code, ui_foreign.text) == (mcp_foreign.status_code, mcp_foreign.text)
            posted = await http.post("/ui/api/templates/x/run", json={}, headers={**foreign, **_cookie(session)})
            assert posted.status_code == 403, "a foreign page cannot start a run with the user's cookie"


@pytest.mark.anyio
@pytest.mark.slow
async def test_no_ui_turns_the_web_view_off(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 'toolreel.db'}")
    async with http_gateway(["--no-ui", *WRAPPED], env) as gw, httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(f"http://127.0.0.1:{gw.port}/ui/")).status_code == 404
        assert (await http.post(f"http://127.0.0.1:{gw.port}/mcp", json={})).status_code != 404


@pytest.mark.anyio
@pytest.mark.slow
async def test_toolreel_ui_serves_a_store_on_its_own(store_url: str) -> None:
    db = store_url
    execution_id = thousand_step_recording(db, 5)
    async with web_view(db, token_env={"UI_TOKEN": TOKEN}) as base, httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(f"{base}/ui/")).status_code == 401
        login = await http.get(f"{base}/ui/?token={TOKEN}")
        cookies = _cookie(login.headers["set-cookie"].split(";")[0].split("=", 1)[1])
        page = (await http.get(f"{base}/ui/api/executions/{execution_id}", headers=cookies)).json()
        assert [n["name"] for n in page["nodes"]] == [f"step_{i}" for i in range(1, 6)]
        assert [(e["source"], e["target"], e["label"]) for e in page["edges"]][:2] == [
            ("step_1", "step_2", "value"),
            ("step_2", "step_3", "value"),
        ]
        missing = await http.get(f"{base}/ui/api/executions/nope", headers=cookies)
        assert missing.status_code == 404 and "nope" in missing.json()["error"]
        assert missing.json()["code"] == "not_found"
        run = await http.post(f"{base}/ui/api/templates/x/run", json={"inputs": {}}, headers=cookies)
        assert run.status_code == 400 and "toolreel run x" in run.json()["error"]
        assert run.json()["code"] == "execution_refused"
        bad = await http.post(f"{base}/ui/api/executions/{execution_id}/review", content=b"{", headers=cookies)
        assert bad.status_code == 400 and "not JSON" in bad.json()["error"]
        assert bad.json()["code"] == "bad_request"


# --- the review behind "save as template" -----------------------------------------------------------


def _step(seq: int, name: str, tool: str, given: dict[str, object], output: object, **kw: object) -> StepRecord:
    return StepRecord(
        execution_id="rec",
        name=name,
        seq=seq,
        kind=StepKind.TOOL,
        status=StepStatus.SUCCEEDED,
        server="ids",
        tool=tool,
        input=given,
        resolved_input=given,
        result={"content": [], "structuredContent": output},
        output=output,
        started_at=1.0 + seq,
        ended_at=1.5 + seq,
        **kw,  # type: ignore[arg-type]
    )


RECORDING = [
    _step(1, "create_user_1", "create_user", {"name": "Ann"}, {"id": "usr_7f3a9c", "name": "Ann"}),
    _step(2, "get_user_1", "get_user", {"id": "usr_7f3a9c"}, {"id": "usr_7f3a9c", "name": "Ann"}),
]


def _steps(proposal: dict[str, object]) -> dict[str, dict[str, object]]:
    template = proposal["template"]
    assert isinstance(template, dict)
    return {s["name"]: s for s in template["steps"]}


def test_an_inferred_ref_is_applied_and_verified() -> None:
    proposal = review(RECORDING, ReviewRequest(name="t", inputs={}))
    assert _steps(proposal)["get_user_1"]["input"] == {"id": "@create_user_1.id"}
    inferred = [e for e in proposal["inferred"] if e["step"] == "get_user_1"]
    assert inferred and inferred[0]["accepted"] is True and inferred[0]["evidence"]
    assert proposal["verification"] == {"verified": True, "checked": 2, "differences": []}


def test_a_rejected_ref_becomes_the_recorded_literal_and_keeps_the_order() -> None:
    decision = Decision(step="get_user_1", input_path="$.id", ref=None)
    proposal = review(RECORDING, ReviewRequest(name="t", inputs={}, decisions=(decision,)))
    step = _steps(proposal)["get_user_1"]
    assert step["input"] == {"id": "usr_7f3a9c"}
    assert step["depends_on"] == ["create_user_1"]
    assert [e["accepted"] for e in proposal["inferred"] if e["step"] == "get_user_1"] == [False]
    assert proposal["verification"]["verified"] is True
    assert "usr_7f3a9c" in proposal["yaml"]


def test_a_wrong_ref_fails_verification_naming_the_step() -> None:
    decision = Decision(step="get_user_1", input_path="$.id", ref="@create_user_1.name")
    proposal = review(RECORDING, ReviewRequest(name="t", inputs={}, decisions=(decision,)))
    verification = proposal["verification"]
    assert verification["verified"] is False
    (difference,) = verification["differences"]
    assert difference["step"] == "get_user_1" and "Ann" in difference["problem"]


def test_a_literal_that_looks_like_a_ref_is_escaped() -> None:
    recording = [
        _step(1, "create_user_1", "create_user", {"name": "@ann"}, {"id": "@ann", "name": "@ann"}),
        _step(2, "get_user_1", "get_user", {"id": "@ann"}, {"id": "@ann"}),
    ]
    decision = Decision(step="get_user_1", input_path="$.id", ref=None)
    proposal = review(recording, ReviewRequest(name="t", inputs={}, decisions=(decision,)))
    assert _steps(proposal)["get_user_1"]["input"] == {"id": "@@ann"}
    assert proposal["verification"]["verified"] is True


def test_a_secret_is_never_turned_into_a_literal() -> None:
    recording = [
        _step(1, "login_1", "login", {"token": "[redacted]"}, {"ok": True}, redacted=("$.token",)),
    ]
    decision = Decision(step="login_1", input_path="$.token", ref=None)
    with pytest.raises(TemplateError, match="secret"):
        review(recording, ReviewRequest(name="t", inputs={}, decisions=(decision,)))


def test_renamed_inputs_name_the_template_inputs() -> None:
    proposal = review(RECORDING, ReviewRequest(name="t", inputs={"who": "Ann"}))
    template = proposal["template"]
    assert isinstance(template, dict)
    assert list(template["inputs"]) == ["who"]
    assert _steps(proposal)["create_user_1"]["input"] == {"name": "@input.who"}
    assert proposal["verification"]["verified"] is True


@pytest.mark.anyio
@pytest.mark.slow
async def test_secrets_stay_redacted_on_the_pages(tmp_path: Path) -> None:
    from tests.gw import call

    secret = "hunter2-not-for-pages"
    env = gateway_env(f"sqlite:///{tmp_path / 'toolreel.db'}")
    async with http_gateway(
        ["--name", "feat", "--", *launch_command([sys.executable, "-m", "fixtures.features"])], env
    ) as gw:
        async with gw.connect() as agent:
            await call(agent, "echo", {"text": "hello", "password": secret})
        base = f"http://127.0.0.1:{gw.port}/ui/api"
        async with httpx.AsyncClient(timeout=30) as http:
            (execution,) = (await http.get(f"{base}/executions")).json()["executions"]
            page = await http.get(f"{base}/executions/{execution['id']}")
            proposal = await http.post(f"{base}/executions/{execution['id']}/review", json={"name": "t"})
        assert page.status_code == 200 and proposal.status_code == 200, proposal.text
        (step,) = page.json()["nodes"]
        assert step["redacted"] == ["$.password"]
        for answer in (page, proposal):
            assert secret not in answer.text


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_stopping_server_ends_open_live_streams_cleanly(tmp_path: Path) -> None:
    import signal
    import subprocess
    import tempfile

    import anyio

    from tests.gw import TOOLREEL, free_port, wait_until

    db = f"sqlite:///{tmp_path / 'toolreel.db'}"
    port = free_port()
    args = launch_command([str(TOOLREEL), "ui", "--http", str(port), "--db", db])
    with tempfile.TemporaryFile() as stderr:
        process = await anyio.open_process(args, stdin=subprocess.DEVNULL, stderr=stderr, env=gateway_env(db))
        try:

            async def up() -> bool:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                except OSError:
                    return False
                return True

            await wait_until(up, 30.0, "toolreel ui to listen")
            async with (
                httpx.AsyncClient(timeout=30) as http,
                http.stream("GET", f"http://127.0.0.1:{port}/ui/api/events?topic=executions") as events,
            ):
                lines = events.aiter_lines()
                with anyio.fail_after(10):
                    while not (await anext(lines)).startswith("event: change"):
                        pass
                process.send_signal(signal.SIGTERM)
                with anyio.fail_after(10):
                    assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
        stderr.seek(0)
        assert "Traceback" not in stderr.read().decode()


@pytest.mark.anyio
@pytest.mark.slow
async def test_saving_an_unverified_template_needs_force(tmp_path: Path) -> None:
    from toolreel.core.store import open_store

    db = f"sqlite:///{tmp_path / 'toolreel.db'}"
    execution_id = thousand_step_recording(db, 3)
    whole_output = {"step": "step_2", "input_path": "$.value", "ref": "@step_1"}  # {"value": 1}, not 1
    wrong = {"name": "chain", "inputs": {}, "decisions": [whole_output]}
    async with web_view(db) as base, httpx.AsyncClient(timeout=30) as http:
        url = f"{base}/ui/api/executions/{execution_id}"
        refused = await http.post(f"{url}/save", json=wrong)
        assert refused.status_code == 409 and refused.json()["saved"] is False
        (difference,) = refused.json()["verification"]["differences"]
        assert difference["step"] == "step_2"
        store = open_store(db)
        try:
            assert store.list_templates() == [], "nothing is saved unless verified or forced"
        finally:
            store.close()
        forced = await http.post(f"{url}/save", json={**wrong, "force": True})
        assert forced.status_code == 200 and forced.json()["version"] == 1
        right = await http.post(f"{url}/save", json={"name": "chain", "inputs": {}})
        assert right.status_code == 200 and right.json()["version"] == 2
        assert right.json()["verification"]["verified"] is True
        page = (await http.get(f"{base}/ui/api/templates/chain")).json()
        assert [v["version"] for v in page["versions"]] == [2, 1]
        assert "step_3" in page["yaml"] and page["inputs"] == []
        older = (await http.get(f"{base}/ui/api/templates/chain?version=1")).json()
        assert older["version"] == 1 and "'@step_1'" in older["yaml"]
