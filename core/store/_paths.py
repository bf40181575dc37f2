"""Where the store lives by default, and how a store URL is shown: `default_db_url()`, `display_url()`.

The default is one SQLite file in the user data directory; `TOOLREEL_DB` overrides it. A URL shown in a
message or a status never carries a password.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import platformdirs
from sqlalchemy.engine import URL, make_url

__all__ = ["DB_ENV", "default_db_url", "display_url", "normalize_url", "resolve_url"]

DB_ENV = "TOOLREEL_DB"
_SECRET_QUERY_KEYS = ("password", "sslpassword")


def default_db_url() -> str:
    """`sqlite:///<user data dir>/toolreel.db` (platformdirs), the store used when nothing else is named."""
    return f"sqlite:///{Path(platformdirs.user_data_dir('toolreel')) / 'toolreel.db'}"


def resolve_url(url: str | None) -> str:
    """The URL given, else $TOOLREEL_DB, else the default SQLite file."""
    return url or os.environ.get(DB_ENV) or default_db_url()


def normalize_url(url: str) -> URL:
    """Parse a store URL; bare `postgresql://` / `postgres://` mean psycopg 3, the driver toolreel ships with."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def display_url(url: URL | str) -> str:
    """The URL with its password (userinfo or query) replaced by ***."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() == "sqlite":  # no credentials; SQLAlchemy would percent-encode `file:` URIs
        query = urlencode(parsed.query, doseq=True)
        return f"{parsed.drivername}:///{parsed.database or ''}" + (f"?{query}" if query else "")
    hidden = {key: "***" for key in parsed.query if key.lower() in _SECRET_QUERY_KEYS}
    if hidden:
        parsed = parsed.update_query_dict(hidden)
    return parsed.render_as_string(hide_password=True)
