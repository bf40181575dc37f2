"""Recording mode: client sessions become executions, tool calls become steps.

`Recorder` owns the background `StoreWriter` (which feeds the drain process, `recorder.drain`,
and journals every entry first, `recorder._spool`) and one `RecordingSession` per client
session; the gateway calls `begin` before forwarding and `end` with the result, before answering.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolreel.core import faces
from toolreel.core.store_hooks import add_open_hook
from toolreel.recorder import _spool

if TYPE_CHECKING:
    from toolreel.recorder._recorder import Recorder
    from toolreel.recorder._rows import StepEntry
    from toolreel.recorder._session import EXECUTION_META, STEP_META, LiveStep, RecordingSession
    from toolreel.recorder._shared import SharedRecordings, shares_recordings
    from toolreel.recorder._spool import journal_dir, pending_journals
    from toolreel.recorder._writer import StoreWriter, backlog_mark

__all__ = [
    "EXECUTION_META",
    "STEP_META",
    "LiveStep",
    "Recorder",
    "RecordingSession",
    "SharedRecordings",
    "StepEntry",
    "StoreWriter",
    "backlog_mark",
    "journal_dir",
    "pending_journals",
    "shares_recordings",
]

# Every opening of a store writes what a gateway that died had journaled and not saved.
add_open_hook(_spool.recover)

# The face's names load on first use (PEP 562): `toolreel executions list` (`recorder.cli`) needs the
# open hook above, not the live recording machinery (anyio, the writer, the ref resolver).
_FACE = {
    "EXECUTION_META": "_session",
    "STEP_META": "_session",
    "LiveStep": "_session",
    "Recorder": "_recorder",
    "RecordingSession": "_session",
    "SharedRecordings": "_shared",
    "StepEntry": "_rows",
    "StoreWriter": "_writer",
    "backlog_mark": "_writer",
    "journal_dir": "_spool",
    "pending_journals": "_spool",
    "shares_recordings": "_shared",
}

__getattr__ = faces.lazy_face(__name__, _FACE)
