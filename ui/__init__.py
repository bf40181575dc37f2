"""toolreel's web view (SPEC §11): executions live, a run's DAG and steps, save as template, run.

    ui_app(backend, token=...) -> ASGI app        # mounted at /ui by every toolreel HTTP server
    UiBackend                                     # what the page's buttons need (the gateway's, or)
    StoreBackend(open_store)                      # `toolreel ui`: a store alone, no upstreams
    ui_authorized(headers, query, token)          # the session cookie or ?token= (checked like /mcp)

Every asset ships in `static/` (the vendored graph layout, `static/vendor/`, refreshed from npm by
`scripts/vendor-ui`); nothing is fetched from elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolreel.core import faces
from toolreel.ui._backend import RunRequest, SaveRequest, StoreBackend, UiBackend, save_reviewed

if TYPE_CHECKING:
    from toolreel.ui._app import ui_app
    from toolreel.ui._auth import COOKIE, ui_authorized

__all__ = [
    "COOKIE",
    "RunRequest",
    "SaveRequest",
    "StoreBackend",
    "UiBackend",
    "save_reviewed",
    "ui_app",
    "ui_authorized",
]

# The page and its routes load on first use (PEP 562): a stdio gateway saves templates through
# `save_reviewed` and serves no page, so it need not import the web app (Starlette routes, the review
# and its dry replay) while its servers start.
_LATER = {"COOKIE": "_auth", "ui_app": "_app", "ui_authorized": "_auth"}

__getattr__ = faces.lazy_face(__name__, _LATER)
