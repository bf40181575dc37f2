"""The product's size and count limits, each written once and read by every front that applies it."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_MAX_BODY_MB", "PAGE_LIMIT"]

# An HTTP request body larger than this is refused (413) before it is read into memory: one tool call's
# arguments rarely pass a few MiB, and each MiB accepted costs about nine in the SDK's parsing and copies.
DEFAULT_MAX_BODY_MB: Final = 32.0

# The most executions one page lists: what `toolreel__list_executions` advertises and accepts, and what the
# CLI and the web view accept; a caller pages with the cursor beyond it.
PAGE_LIMIT: Final = 500
