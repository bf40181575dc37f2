"""`riding_out(store)`: a store whose calls ride out a short outage with bounded retries.

For the commands that drive runs in the foreground (`toolreel run`, `executions resume`): a database
restarted or briefly unreachable should not fail a run that could simply wait a few seconds. Only a
plain `StoreError` is retried (the database is unreachable or refused the statement); what it says
about the data (`NotFoundError`, `StaleClaimError`, `SchemaVersionError`) is final. Every write is
idempotent or fenced, so one that committed before its answer was lost is harmless to repeat.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from toolreel.core.errors import StoreError

if TYPE_CHECKING:
    from toolreel.core.store._api import Store

__all__ = ["RIDE_OUT_SECONDS", "riding_out"]

logger = logging.getLogger("toolreel.store")

RIDE_OUT_SECONDS = 30.0  # how long a call keeps retrying before its error stands
_DELAYS = (0.2, 0.5, 1.0, 2.0)
# Called on an event loop (no waiting allowed there), or ending the store: never retried.
_AS_IS = frozenset({"try_put_steps", "close", "writes_now", "url"})


class _Riding:
    def __init__(self, store: Store, budget: float) -> None:
        self._store = store
        self._budget = budget

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name in _AS_IS or not callable(attribute):
            return attribute
        return self._retrying(name, attribute)

    def _retrying(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def retried(*args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + self._budget
            failures = 0
            while True:
                try:
                    result = call(*args, **kwargs)
                except StoreError as exc:
                    if type(exc) is not StoreError or time.monotonic() >= deadline:
                        raise
                    if not failures:
                        logger.warning("%s; retrying for up to %g s", exc, self._budget)
                    time.sleep(_DELAYS[min(failures, len(_DELAYS) - 1)])
                    failures += 1
                    continue
                if failures:
                    logger.warning("the store answers again (%s after %d retries)", name, failures)
                return result

        return retried


def riding_out(store: Store, budget: float = RIDE_OUT_SECONDS) -> Store:
    """`store`, each of whose calls retries a plain StoreError for up to `budget` seconds."""
    return cast("Store", _Riding(store, budget))
