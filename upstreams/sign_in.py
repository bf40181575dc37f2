"""Signing in to OAuth-protected HTTP upstreams: what the `mcp` SDK's client auth (`mcp.client.auth`) leaves
to the application besides keeping tokens (`upstreams.auth`).

The SDK runs the flow (metadata discovery with each era's fallbacks, Client ID Metadata Documents or
dynamic registration, PKCE, `iss`, resource indicators, scopes from `WWW-Authenticate`, step-up,
refresh); this module gives it:
- `Loopback`, the redirect target on 127.0.0.1 that receives the authorization code;
- the `httpx2.Auth` for one server: interactive (a browser, or `--auth-follow`) for
  `toolreel auth login` and `toolreel call`, or unattended for a gateway and a worker, where a
  needed sign-in raises `SignInNeeded` naming the command to run.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import sys
import webbrowser
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from toolreel.upstreams.auth import SecretTokens, SignInNeeded, sign_in_command, sign_in_place, storage_name
from toolreel.upstreams.config import OAuthSettings, ServerConfig

__all__ = ["Loopback", "interactive_auth", "sign_in_error", "signed_in", "unattended_auth"]

logger = logging.getLogger("toolreel.auth")

CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT = 300.0  # seconds a sign-in waits for the browser to come back


class Loopback:
    """`http://127.0.0.1:PORT/callback`: receives the authorization response once."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"
        self._answer: dict[str, str] | None = None
        self._arrived = anyio.Event()

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route

        async def callback(request: Request) -> PlainTextResponse:
            self._answer = dict(request.query_params)
            self._arrived.set()
            if "error" in self._answer:
                return PlainTextResponse(f"toolreel: sign-in refused ({self._answer['error']}).", status_code=400)
            return PlainTextResponse("toolreel: signed in. You can close this window.")

        return Starlette(routes=[Route(CALLBACK_PATH, callback)])

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Loopback]:
        import uvicorn

        server = uvicorn.Server(uvicorn.Config(self.app(), log_level="warning", lifespan="off", access_log=False))
        setattr(server, "install_signal_handlers", lambda: None)  # noqa: B010 - the caller owns signals
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [self.sock])
            try:
                yield self
            finally:
                server.should_exit = True
                tg.cancel_scope.deadline = anyio.current_time() + 5

    async def result(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        with anyio.fail_after(LOGIN_TIMEOUT):
            await self._arrived.wait()
        answer = self._answer or {}
        if "code" not in answer:
            raise OAuthFlowError(f"the authorization server refused: {answer.get('error', 'no code')}")
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))


# --- the SDK's provider --------------------------------------------------------------------------------------


def _client_metadata(settings: OAuthSettings, redirect_uri: str) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    return OAuthClientMetadata(
        client_name="toolreel",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic reads the URL
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=" ".join(settings.scopes) or None,
    )


def _preset_client(settings: OAuthSettings, redirect_uri: str) -> Any | None:
    if settings.client_id is None:
        return None
    from mcp.shared.auth import OAuthClientInformationFull

    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_basic" if settings.client_secret else "none",
        grant_types=["authorization_code", "refresh_token"],
    )


def _redirect_port(storage: SecretTokens) -> int:
    """A registered client keeps its redirect URI: sign in again on the port it was registered with."""
    info = storage.record().get("client_info") or {}
    for uri in info.get("redirect_uris") or ():
        match = re.match(r"http://127\.0\.0\.1:(\d+)/", str(uri))
        if match:
            return int(match.group(1))
    return 0


def _provider(
    url: str,
    storage: SecretTokens,
    settings: OAuthSettings,
    redirect_uri: str,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[Any]],
) -> Any:
    from mcp.client.auth import OAuthClientProvider

    preset = _preset_client(settings, redirect_uri)
    if preset is not None:
        storage._preset_client = preset

    class _Provider(OAuthClientProvider):
        """The SDK's provider, refreshing where it would otherwise ask a person to sign in again.

        - It is told when a kept access token expires (the SDK keeps that only in memory, so after a restart
          it would send a spent token), and it refreshes a little before that (`SecretTokens.refresh_at`).
        - When the server still answers 401 to a token our clock thought good (clock skew, a slow request),
          it refreshes and retries once before the SDK's full sign-in, as it would at expiry.
        """

        async def _initialize(self) -> None:
            await super()._initialize()
            self.context.token_expiry_time = storage.refresh_at()
            kept = self.context.client_info
            if kept is not None and redirect_uri not in {str(uri) for uri in kept.redirect_uris or ()}:
                # A client registered for another redirect (another process signing in meanwhile, on another
                # loopback port): the server would refuse this flow's redirect with it. Register afresh.
                self.context.client_info = None

        async def _handle_token_response(self, response: Any) -> None:
            await super()._handle_token_response(response)
            self.context.token_expiry_time = storage.refresh_at()

        async def _handle_refresh_response(self, response: Any) -> bool:
            refreshed = await super()._handle_refresh_response(response)
            if refreshed:
                self.context.token_expiry_time = storage.refresh_at()
            return refreshed

        async def _auth_flow(self, request: Any) -> AsyncGenerator[Any, Any]:
            flow = super()._auth_flow(request)
            outgoing = await flow.__anext__()
            while True:
                incoming = yield outgoing
                if outgoing is request and incoming.status_code == 401 and self.context.can_refresh_token():
                    answer = yield await self._refresh_token()
                    if await self._handle_refresh_response(answer):
                        self._add_auth_header(request)
                        incoming = yield request  # the SDK's flow goes on from this answer (a sign-in on a 401)
                try:
                    outgoing = await flow.asend(incoming)
                except StopAsyncIteration:
                    return

    return _Provider(
        server_url=url,
        client_metadata=_client_metadata(settings, redirect_uri),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=settings.client_metadata_url,
    )


@contextlib.asynccontextmanager
async def interactive_auth(
    url: str, storage: SecretTokens, settings: OAuthSettings, *, follow: bool
) -> AsyncIterator[Any]:
    """An `httpx2.Auth` that signs in when the server asks: the URL opens in a browser (and is printed on
    stderr), or with `follow` is fetched by toolreel itself, following redirects to the loopback."""
    loopback = Loopback(_redirect_port(storage))
    async with loopback.serving():

        async def redirect(authorization_url: str) -> None:
            if follow:
                await _follow(authorization_url)
                return
            print(f"toolreel: sign in at {authorization_url}", file=sys.stderr)
            opened = False
            with contextlib.suppress(webbrowser.Error):
                opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
            if not opened and not sys.stdin.isatty():  # nobody to open it: say so now, not after a long wait
                from mcp.client.auth import OAuthFlowError

                raise OAuthFlowError("no browser could be opened and no one is at a terminal to open the URL")

        yield _provider(url, storage, settings, loopback.redirect_uri, redirect, loopback.result)


async def _follow(authorization_url: str) -> None:
    """Fetch the authorization URL and follow its redirects to the loopback (servers that approve alone)."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=True, timeout=30.0) as client:
        response = await client.get(authorization_url)
    if response.status_code >= 400:
        from mcp.client.auth import OAuthFlowError

        raise OAuthFlowError(f"the authorization page answered HTTP {response.status_code}; sign in with a browser")


class _ExpectedSignIn(logging.Filter):
    """The SDK logs every failed flow with its traceback; a sign-in only a person can give is reported by
    toolreel itself, with the command to run (the upstream's status, the tool error, the paused run)."""

    def filter(self, record: logging.LogRecord) -> bool:
        raised = record.exc_info[1] if record.exc_info else None
        return raised is None or sign_in_error(raised) is None


_SDK_FLOW_LOG = logging.getLogger("mcp.client.auth.oauth2")
_QUIET = _ExpectedSignIn()


def unattended_auth(
    url: str,
    storage: SecretTokens,
    settings: OAuthSettings,
    server: str,
    command: str,
    on_needed: Callable[[SignInNeeded], None] | None = None,
) -> Any:
    """An `httpx2.Auth` that uses and refreshes the stored sign-in, and raises `SignInNeeded` when a person
    must sign in again (no sign-in yet, a refused refresh, a new scope). `on_needed` hears it first: raised
    inside a request, it ends the transport, and the request itself only sees its connection close."""

    if _QUIET not in _SDK_FLOW_LOG.filters:
        _SDK_FLOW_LOG.addFilter(_QUIET)

    def needed() -> SignInNeeded:
        exc = SignInNeeded(server, command)
        if on_needed is not None:
            on_needed(exc)
        return exc

    async def refuse(_url: str) -> None:
        raise needed()

    async def never() -> Any:
        raise needed()

    redirect_uri = f"http://127.0.0.1:{_redirect_port(storage) or 1}{CALLBACK_PATH}"
    return _provider(url, storage, settings, redirect_uri, refuse, never)


def sign_in_error(exc: BaseException) -> SignInNeeded | None:
    """The `SignInNeeded` inside what an SDK transport raised (groups, causes), if that is why it failed."""
    if isinstance(exc, SignInNeeded):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = sign_in_error(inner)
            if found is not None:
                return found
    cause = exc.__cause__ or exc.__context__
    return sign_in_error(cause) if cause is not None else None


def signed_in(server: ServerConfig, on_needed: Callable[[SignInNeeded], None] | None = None) -> Any | None:
    """The unattended auth of an HTTP upstream of a gateway or a run: its kept sign-in, refreshed as
    needed; None when its config sends an Authorization header of its own."""
    if server.url is None or any(key.lower() == "authorization" for key in server.headers):
        return None
    storage = SecretTokens(sign_in_place(None), storage_name(server.name, server.url), server.url, attended=False)
    command = sign_in_command(server.name, server.source)
    return unattended_auth(server.url, storage, server.oauth or OAuthSettings(), server.name, command, on_needed)
