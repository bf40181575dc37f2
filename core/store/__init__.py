"""Durable storage of executions, steps, templates, idempotency results and claims.

`open_store(url)` returns the one implementation, `SQLStore`, over SQLite (the default file in the user data
directory) or PostgreSQL (`postgresql+psycopg://...`); `Store` is the interface the other packages rely on.
"""

from core.store._api import Store
from core.store._migrate import SCHEMA_VERSION
from core.store._paths import default_db_url
from core.store._sql import SQLStore, open_store

__all__ = ["SCHEMA_VERSION", "SQLStore", "Store", "default_db_url", "open_store"]
