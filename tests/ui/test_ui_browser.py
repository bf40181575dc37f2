"""The web view in a real headless browser (Debian's Chromium, Playwright), against a real gateway:
a session recorded through `toolreel serve --http` appears live, its DAG and step drawer show what was
recorded (a tool output holding `<script>` as text), it is saved as a template with one inferred ref
turned back into a literal, and the template runs from its form while the page watches it finish."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.browser import chromium, screenshot_dir
from tests.gw import HttpGateway, call, gateway_env, http_gateway, wait_until
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]

TOKEN = "ui-test-token"
WAIT_MS = 30_000
SCRIPT = "<script>document.title='pwned'</script><b>bold?</b>"


async def _gateway_args() -> list[str]:
    return ["--token-env", "UI_TOKEN", "--name", "ids", "--", sys.executable, "-m", "fixtures.ids"]


def _ui(gw: HttpGateway, path: str = "/ui/") -> str:
    return f"http://127.0.0.1:{gw.port}{path}"


async def test_a_recording_is_watched_saved_as_a_template_and_replayed_from_the_page(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'toolreel.db'}"
    shots = screenshot_dir(tmp_path)
    env = gateway_env(db, UI_TOKEN=TOKEN)
    async with (
        http_gateway(await _gateway_args(), env) as gw,
        gw.connect(headers={"Authorization": f"Bearer {TOKEN}"}) as agent,
        chromium() as browser,
    ):
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        await page.goto(_ui(gw, f"/ui/?token={TOKEN}"))
        assert page.url == _ui(gw), "the token is traded for the cookie and leaves the address bar"
        await page.wait_for_selector("text=Nothing yet", timeout=WAIT_MS)
        await page.evaluate("window.__sameDocument = true")

        # the agent's first call: the execution appears without a reload
        user = await call(agent, "create_user", {"name": "Ann", "email": "ann@example.com"})
        row = page.locator("tr[data-execution]")
        await row.first.wait_for(timeout=WAIT_MS)
        assert await page.evaluate("window.__sameDocument === true"), "the list updated live, not by a reload"
        assert await row.count() == 1
        assert await row.first.get_attribute("data-status") == "recording"
        await call(agent, "create_order", {"user_id": "@create_user_1.id", "items": [{"sku": "apple", "qty": 2}]})
        await call(agent, "note", {"text": SCRIPT})
        await page.screenshot(path=str(shots / "executions.png"))

        await row.first.locator("a").click()
        await page.wait_for_selector("svg.dag g.node[data-step='note_1']", timeout=WAIT_MS)
        names = await page.eval_on_selector_all("svg.dag g.node", "ns => ns.map(n => n.dataset.step)")
        assert names == ["create_user_1", "create_order_1", "note_1"]
        statuses = await page.eval_on_selector_all("svg.dag g.node", "ns => ns.map(n => n.dataset.status)")
        assert statuses == ["succeeded"] * 3
        edge = page.locator("svg.dag g.edge[data-source='create_user_1'][data-target='create_order_1']")
        assert await edge.count() == 1
        assert await edge.get_attribute("data-kind") == "ref"
        assert await edge.locator("text.edge-label").text_content() == "id"

        # a new step appears live on the execution page too
        await call(agent, "get_user", {"id": "@create_user_1.id"})
        await page.wait_for_selector("svg.dag g.node[data-step='get_user_1']", timeout=WAIT_MS)
        assert await page.locator("svg.dag g.edge[data-target='get_user_1']").count() == 1

        # the drawer: a tool output holding <script> is text; refs lead to their source step
        await page.click("svg.dag g.node[data-step='note_1']")
        output = page.locator("#drawer-output")
        await output.wait_for(timeout=WAIT_MS)
        assert "<script>document.title='pwned'</script>" in (await output.text_content() or "")
        assert await page.locator("#drawer script, #drawer b").count() == 0
        assert await page.title() == "toolreel"
        await page.click("svg.dag g.node[data-step='create_order_1']")
        assert (await page.locator("#drawer-title").text_content() or "").startswith("create_order_1")
        user_id = user.structured_content["id"]
        assert user_id in (await page.locator("#drawer-resolved").text_content() or "")
        await page.screenshot(path=str(shots / "execution-drawer.png"))
        await page.click("#drawer-input a.ref[data-ref-step='create_user_1']")
        await page.locator("#drawer-title", has_text="create_user_1").wait_for(timeout=WAIT_MS)
        await page.click("#drawer .close")

        # save as template, with the order's inferred ref turned back into the recorded literal
        await page.click("#save-as-template")
        await page.wait_for_selector("#review-verification [data-verified='true']", timeout=WAIT_MS)
        await page.fill("#template-name", "onboard")
        ref_box = page.locator("input[data-ref-step='create_order_1'][data-ref-path='$.user_id']")
        assert await ref_box.is_checked()
        await ref_box.uncheck()
        # the page's policy allows no eval, so no wait_for_function: the text is waited for as an element
        await page.locator("#review-yaml", has_text=user_id).wait_for(state="attached", timeout=WAIT_MS)
        await page.wait_for_selector("#review-verification [data-verified='true']", timeout=WAIT_MS)
        await page.screenshot(path=str(shots / "save-as-template.png"), full_page=True)
        await page.click("#review-save")
        await page.wait_for_selector("#review-saved", timeout=WAIT_MS)
        saved = _stored_template(db, "onboard")
        order = next(s for s in saved["steps"] if s["name"] == "create_order_1")
        assert order["input"]["user_id"] == user_id, "the rejected ref is the recorded literal again"
        assert "create_user_1" in order.get("depends_on", []), "and the step still waits for the one it named"
        get_user = next(s for s in saved["steps"] if s["name"] == "get_user_1")
        assert get_user["input"]["id"] == "@create_user_1.id", "the accepted refs stay"

        # the template page: YAML and DAG side by side, and a form that runs it
        await page.click("#review-saved a")
        await page.wait_for_selector("#template-yaml", timeout=WAIT_MS)
        assert "create_order_1" in (await page.locator("#template-yaml").text_content() or "")
        assert await page.locator("svg.dag g.node").count() == 4
        assert await page.locator("svg.dag g.edge[data-kind='depends_on']").count() >= 1
        await _fill_inputs(page, {"name": "Bob", "email": "bob@example.com"})
        await page.screenshot(path=str(shots / "template.png"), full_page=True)
        await page.click("#run")
        await page.wait_for_url("**/ui/executions/*", timeout=WAIT_MS)
        await page.wait_for_selector(".exec-head .badge[data-status='succeeded']", timeout=WAIT_MS)
        finals = await page.eval_on_selector_all("svg.dag g.node", "ns => ns.map(n => n.dataset.status)")
        assert finals == ["succeeded"] * 4
        await page.screenshot(path=str(shots / "replay.png"))
        run_id = page.url.rsplit("/", 1)[1]
        steps = open_store(db).get_steps(run_id)
        created = next(s for s in steps if s.name == "create_user_1")
        assert created.resolved_input["name"] == "Bob", "the form's inputs reached the replay"


async def _fill_inputs(page: Any, values: dict[str, str]) -> None:
    fields = await page.eval_on_selector_all("#run-form [name]", "els => els.map(e => e.name)")
    for name in fields:
        await page.fill(f"#run-form [name='{name}']", values.get(name, f"{name}-value"))


def _stored_template(db: str, name: str) -> dict[str, Any]:
    store = open_store(db)
    try:
        return dict(store.get_template(name).definition)
    finally:
        store.close()


async def test_a_thousand_step_execution_renders_in_the_browser(tmp_path: Path) -> None:
    """`toolreel ui` on its own over a store holding a 1,000-step recording: every node is drawn."""
    from tests.ui_data import thousand_step_recording

    db = f"sqlite:///{tmp_path / 'big.db'}"
    execution_id = thousand_step_recording(db, 1000)
    from tests.ui_data import web_view

    async with web_view(db) as base, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        await page.goto(f"{base}/ui/executions/{execution_id}")
        await page.wait_for_selector("body[data-rendered]", state="attached", timeout=WAIT_MS)
        assert await page.locator("svg.dag g.node").count() == 1000
        assert await page.locator("svg.dag g.edge").count() == 999
        assert await page.locator(".timeline .tl-row").count() == 1000
        await page.click(".tab[data-view='timeline']")
        await page.screenshot(path=str(screenshot_dir(tmp_path) / "timeline-1000.png"))
        await page.click(".tab[data-view='dag']")
        with anyio.fail_after(5):
            await page.click("svg.dag g.node[data-step='step_500']")
            await page.locator("#drawer-title").wait_for()


APPROVE = {
    "name": "approve-echo",
    "inputs": {"text": {"type": "string"}},
    "steps": [
        {"name": "confirm", "approve": "Echo {{@input.text}}?"},
        {"name": "echo_1", "tool": "feat__echo", "input": {"text": "@input.text"}, "depends_on": ["confirm"]},
    ],
}
SLEEPY = {"name": "sleepy", "steps": [{"name": "slow_1", "tool": "feat__slow", "input": {"seconds": 60}}]}


async def test_a_paused_run_is_resumed_with_an_answer_and_a_running_one_cancelled(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'toolreel.db'}"
    store = open_store(db)
    for definition in (APPROVE, SLEEPY):
        store.save_template(TemplateDraft(str(definition["name"]), definition))
    store.close()
    args = ["--name", "feat", "--", sys.executable, "-m", "fixtures.features"]
    async with http_gateway(args, gateway_env(db)) as gw, chromium() as browser:
        async with gw.connect() as agent:  # the gateway listens before its upstream is up: until it answers

            async def up() -> bool:
                return not (await call(agent, "echo", {"text": "up?"})).is_error

            await wait_until(up, 60, "the fixture server behind the gateway to answer")
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        await page.goto(_ui(gw, "/ui/templates/approve-echo"))
        await page.fill("#run-form [name='text']", "hello")
        await page.click("#run")
        await page.wait_for_selector(".exec-head .badge[data-status='paused']", timeout=WAIT_MS)
        assert "Echo hello?" in (await page.locator(".actions .prompt").text_content() or "")
        await page.fill("#resume-response", "yes")
        await page.click("#resume")
        await page.wait_for_selector(".exec-head .badge[data-status='succeeded']", timeout=WAIT_MS)
        assert await page.locator("svg.dag g.node[data-step='echo_1'][data-status='succeeded']").count() == 1

        await page.goto(_ui(gw, "/ui/templates/sleepy"))
        await page.click("#run")
        await page.wait_for_selector("svg.dag g.node[data-step='slow_1'][data-status='running']", timeout=WAIT_MS)
        assert await page.locator("#resume").count() == 0, "a run this gateway drives is not offered to resume"
        await page.click("#cancel")
        await page.wait_for_selector(".exec-head .badge[data-status='cancelled']", timeout=WAIT_MS)
        # a cancelled run is retried from the page: the same execution runs its cancelled step again
        await page.click("#retry")
        await page.wait_for_selector("svg.dag g.node[data-step='slow_1'][data-status='running']", timeout=WAIT_MS)
        assert "attempt 2" in (await page.locator(".exec-head").text_content() or "")
        assert await page.locator("#retry").count() == 0, "a running execution is not offered to retry"
        await page.click("#cancel")
        await page.wait_for_selector(".exec-head .badge[data-status='cancelled']", timeout=WAIT_MS)

        # the list filters by template and by status
        await page.goto(_ui(gw, "/ui/?template=approve-echo"))
        rows = page.locator("tr[data-execution]")
        await rows.first.wait_for(timeout=WAIT_MS)
        assert await rows.evaluate_all("rs => rs.map(r => r.dataset.status)") == ["succeeded"]
        await page.select_option("#filter-template", "")
        await page.select_option("#filter-status", "cancelled")
        await page.locator("tr[data-execution]:not([data-status='cancelled'])").first.wait_for(
            state="detached", timeout=WAIT_MS
        )
        await page.locator("tr[data-execution][data-status='cancelled']").wait_for(timeout=WAIT_MS)
        assert await rows.evaluate_all("rs => rs.map(r => r.dataset.status)") == ["cancelled"]
        assert "status=cancelled" in page.url
