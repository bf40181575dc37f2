"""The web view's credentials: the server's bearer token, brought once as `/ui/?token=...`.

The browser then holds an HTTP-only, same-site session cookie; its value is an HMAC of the
token, so it proves the token without being it, and stops working when the token changes.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl

__all__ = ["COOKIE", "cookie_header", "session_value", "ui_authorized", "wants_login"]

COOKIE = "toolreel_ui"


def session_value(token: str) -> str:
    return hmac.new(token.encode(), b"toolreel web view session", hashlib.sha256).hexdigest()


def _query_token(query_string: bytes) -> str | None:
    for key, value in parse_qsl(query_string.decode("latin-1")):
        if key == "token":
            return value
    return None


def _cookie(headers: Mapping[str, str]) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # junk in the header: no session
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def ui_authorized(headers: Mapping[str, str], query_string: bytes, token: str) -> bool:
    """The session cookie, or the token in the query (which then sets the cookie)."""
    given = _query_token(query_string)
    if given is not None and hmac.compare_digest(given.encode(), token.encode()):
        return True
    cookie = _cookie(headers)
    return cookie is not None and hmac.compare_digest(cookie.encode(), session_value(token).encode())


def wants_login(query_string: bytes) -> bool:
    return _query_token(query_string) is not None


def cookie_header(token: str, secure: bool) -> str:
    parts = [f"{COOKIE}={session_value(token)}", "Path=/ui", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)
