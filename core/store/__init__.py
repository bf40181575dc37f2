"""Durable storage of executions, steps, templates, idempotency results and claims.

`open_store(url)` returns the one implementation, `SQLStore`, over SQLite (the default file in the user data
directory) or PostgreSQL (`postgresql+psycopg://...`); `Store` is the interface the other packages rely on.
"""

from toolreel.core.store._api import Store
from toolreel.core.store._migrate import SCHEMA_VERSION
from toolreel.core.store._paths import default_db_url, display_url
from toolreel.core.store._prune import PRUNABLE, PruneReport, check_statuses
from toolreel.core.store._riding import riding_out
from toolreel.core.store._sql import SQLStore, open_store

__all__ = [
    "PRUNABLE",
    "SCHEMA_VERSION",
    "PruneReport",
    "SQLStore",
    "Store",
    "check_statuses",
    "default_db_url",
    "display_url",
    "open_store",
    "riding_out",
]
