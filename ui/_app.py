"""The web view as an ASGI app, mounted at `/ui` by every toolreel HTTP server.

Pages (`/ui/`, `/ui/executions/<id>`, `/ui/templates/<name>`) are one HTML shell whose script
reads the path; data comes from `/ui/api/...` as JSON and changes from `/ui/api/events`.
Credentials and Origin are checked in front of it, as for `/mcp`; this app only turns a
`?token=` into the session cookie.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from toolreel.core.errors import NotFoundError, ToolreelError
from toolreel.core.limits import PAGE_LIMIT
from toolreel.core.model import ExecutionQuery, ExecutionStatus
from toolreel.ui._auth import cookie_header
from toolreel.ui._backend import RunRequest, SaveRequest, UiBackend
from toolreel.ui._live import Fingerprints, Streams, digest
from toolreel.ui._review import Decision, ReviewRequest, review
from toolreel.ui._views import execution_page, execution_summary, template_page

__all__ = ["STATIC", "ui_app"]

STATIC = Path(__file__).parent / "static"
SECURITY_HEADERS = {
    # Nothing inline, nothing from elsewhere: even a mistake in the page cannot run a tool's output.
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
Handler = Callable[[Request], Awaitable[Response]]
BAD_REQUEST = "bad_request"  # a malformed body or parameter: no exception of the tree, a code all the same


class _Json(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, default=str).encode()


def _error(status: int, message: str, code: str) -> Response:
    """`{error, code}`: the message for the page, the stable code (docs/errors.md) for programs."""
    return _Json({"error": message, "code": code}, status_code=status, headers=SECURITY_HEADERS)


def _api(handler: Handler) -> Handler:
    """Errors the user can act on become a JSON answer that says what to do, never a 500."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except NotFoundError as exc:
            return _error(404, str(exc), exc.code)
        except ToolreelError as exc:
            return _error(400, str(exc), exc.code)
        except (ValueError, TypeError) as exc:  # malformed JSON body or parameter
            return _error(400, f"bad request: {exc}", BAD_REQUEST)

    return wrapped


class _Ui:
    def __init__(self, backend: UiBackend, token: str | None) -> None:
        self.backend = backend
        self.token = token
        self.fingerprints = Fingerprints(self._fingerprint)
        self.streams = Streams()

    async def _thread(self, func: Callable[..., Any], *args: Any) -> Any:
        store = await self.backend.store()
        return await anyio.to_thread.run_sync(func, store, *args)

    # pages -------------------------------------------------------------------------------
    async def page(self, request: Request) -> Response:
        if self.token is not None and "token" in request.query_params:
            # Trade the token in the address for the cookie, and drop it from the address bar.
            target = quote(request.url.path) + _without_token(request)
            secure = request.url.scheme == "https"
            return RedirectResponse(target, 303, headers={"set-cookie": cookie_header(self.token, secure)})
        return FileResponse(STATIC / "index.html", headers=SECURITY_HEADERS)

    # reads -------------------------------------------------------------------------------
    async def executions(self, request: Request) -> Response:
        await self.backend.flush()
        params = request.query_params
        status = ExecutionStatus(params["status"]) if params.get("status") else None
        limit = min(int(params.get("limit") or 100), PAGE_LIMIT)

        def listing(store: Any) -> dict[str, Any]:
            wanted = ExecutionQuery(status, params.get("template") or None, limit, params.get("cursor"))
            page, cursor = store.list_executions(wanted)
            templates = sorted({r.name for r in store.list_templates()})
            return {"executions": [execution_summary(e) for e in page], "next_cursor": cursor, "templates": templates}

        return _Json(await self._thread(listing), headers=SECURITY_HEADERS)

    async def execution(self, request: Request) -> Response:
        await self.backend.flush()
        return _Json(await self._thread(execution_page, request.path_params["id"]), headers=SECURITY_HEADERS)

    async def templates(self, request: Request) -> Response:
        def listing(store: Any) -> list[dict[str, Any]]:
            return [
                {"name": r.name, "version": r.version, "description": r.description, "created_at": r.created_at}
                for r in store.list_templates()
            ]

        return _Json({"templates": await self._thread(listing)}, headers=SECURITY_HEADERS)

    async def template(self, request: Request) -> Response:
        version = request.query_params.get("version")
        page = await self._thread(template_page, request.path_params["name"], int(version) if version else None)
        return _Json(page, headers=SECURITY_HEADERS)

    async def events(self, request: Request) -> Response:
        topic = request.query_params.get("topic") or "executions"
        stream = self.streams.events(self.fingerprints, topic)
        headers = {**SECURITY_HEADERS, "x-accel-buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def _fingerprint(self, topic: str) -> str:
        await self.backend.flush()
        kind, _, key = topic.partition(":")
        if kind == "execution":
            return digest(await self._thread(_execution_marks, key))
        if kind == "templates":
            return digest(await self._thread(lambda s: [(r.name, r.version) for r in s.list_templates()]))
        return digest(await self._thread(_list_marks))

    # actions -----------------------------------------------------------------------------
    async def review(self, request: Request) -> Response:
        proposal = await self._review(request, await _body(request))
        return _Json(proposal, headers=SECURITY_HEADERS)

    async def save(self, request: Request) -> Response:
        body = await _body(request)
        proposal = await self._review(request, body)
        if not proposal["verification"]["verified"] and not body.get("force"):
            proposal["saved"] = False
            return _Json(proposal, status_code=409, headers=SECURITY_HEADERS)
        execution_id = request.path_params["id"]
        saved = await self.backend.save_template(
            SaveRequest(
                name=proposal["template"]["name"],
                definition=proposal["template"],
                description=proposal["template"].get("description"),
                source_executions=(execution_id,),
            )
        )
        proposal.update(saved=True, version=saved.version, hash=saved.hash)
        return _Json(proposal, headers=SECURITY_HEADERS)

    async def _review(self, request: Request, body: dict[str, Any]) -> dict[str, Any]:
        await self.backend.flush()
        recording = await self._thread(lambda s: s.get_steps(request.path_params["id"]))
        wanted = _review_request(body)
        result: dict[str, Any] = await anyio.to_thread.run_sync(review, recording, wanted)
        return result

    async def run(self, request: Request) -> Response:
        body = await _body(request)
        inputs = body.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise TypeError("'inputs' must be an object of input name -> value")
        version = body.get("version")
        run = RunRequest(request.path_params["name"], inputs, int(version) if version else None)
        return _Json({"execution_id": await self.backend.run_template(run)}, headers=SECURITY_HEADERS)

    async def cancel(self, request: Request) -> Response:
        await self.backend.cancel(request.path_params["id"])
        return _Json({"ok": True}, headers=SECURITY_HEADERS)

    async def retry(self, request: Request) -> Response:
        await self.backend.retry(request.path_params["id"])
        return _Json({"ok": True}, headers=SECURITY_HEADERS)

    async def resume(self, request: Request) -> Response:
        body = await _body(request)
        response = body.get("response")
        await self.backend.resume(request.path_params["id"], None if response is None else str(response))
        return _Json({"ok": True}, headers=SECURITY_HEADERS)


def _execution_marks(store: Any, execution_id: str) -> list[Any]:
    execution = store.get_execution(execution_id)
    rows = store.get_steps(execution_id, all_attempts=True)
    return [
        execution.status.value,
        execution.updated_at,
        [(r.name, r.attempt, r.status.value, r.ended_at) for r in rows],
    ]


def _list_marks(store: Any) -> list[Any]:
    page, _ = store.list_executions(ExecutionQuery(limit=200))
    return [(e.id, e.status.value, e.updated_at) for e in page]


def _without_token(request: Request) -> str:
    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    if not rest:
        return ""
    from urllib.parse import urlencode

    return "?" + urlencode(rest)


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"the body is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise TypeError("the body must be a JSON object")
    return body


def _review_request(body: dict[str, Any]) -> ReviewRequest:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise TypeError("'name' is required: the template's name")
    inputs = body.get("inputs")
    if inputs is not None and not isinstance(inputs, dict):
        raise TypeError("'inputs' must be an object of input name -> the recorded value it replaces")
    decisions = tuple(
        Decision(step=str(d["step"]), input_path=str(d["input_path"]), ref=d.get("ref"))
        for d in body.get("decisions") or []
    )
    return ReviewRequest(name=name, description=body.get("description") or None, inputs=inputs, decisions=decisions)


def ui_app(backend: UiBackend, *, token: str | None) -> Starlette:
    """The app to mount at `/ui` (credentials and Origin are checked in front of it)."""
    ui = _Ui(backend, token)
    api = [
        Route("/api/executions", _api(ui.executions)),
        Route("/api/executions/{id}", _api(ui.execution)),
        Route("/api/executions/{id}/cancel", _api(ui.cancel), methods=["POST"]),
        Route("/api/executions/{id}/resume", _api(ui.resume), methods=["POST"]),
        Route("/api/executions/{id}/retry", _api(ui.retry), methods=["POST"]),
        Route("/api/executions/{id}/review", _api(ui.review), methods=["POST"]),
        Route("/api/executions/{id}/save", _api(ui.save), methods=["POST"]),
        Route("/api/templates", _api(ui.templates)),
        Route("/api/templates/{name}", _api(ui.template)),
        Route("/api/templates/{name}/run", _api(ui.run), methods=["POST"]),
        Route("/api/events", ui.events),
    ]
    pages = [Route(path, ui.page) for path in ("/", "/executions/{id}", "/templates", "/templates/{name}")]
    app = Starlette(routes=[*api, *pages, Mount("/static", StaticFiles(directory=STATIC, follow_symlink=True))])
    app.state.stop_streams = ui.streams.stop  # the server ends the live streams before it stops
    return app
