"""toolreel's web view (SPEC §11): executions live, a run's DAG and steps, save as template, run.

    ui_app(backend, token=...) -> ASGI app        # mounted at /ui by every toolreel HTTP server
    UiBackend                                     # what the page's buttons need (the gateway's, or)
    StoreBackend(open_store)                      # `toolreel ui`: a store alone, no upstreams
    ui_authorized(headers, query, token)          # the session cookie or ?token= (checked like /mcp)

Every asset ships in `static/` (the vendored graph layout, `static/vendor/`, refreshed from npm by
`scripts/vendor-ui`); nothing is fetched from elsewhere.
"""

from toolreel.ui._app import ui_app
from toolreel.ui._auth import COOKIE, ui_authorized
from toolreel.ui._backend import RunRequest, SaveRequest, StoreBackend, UiBackend, save_reviewed

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
