"""The templatizer: turn recorded steps into a reusable template, explaining every decision.

`templatize(recordings, name=...)` infers refs between steps (an index of every earlier
output, candidates scored by exactness, length, uniqueness, recency and key names), makes
inputs of named, redacted and varying values, verifies every ref against the recording, and
returns the validated template with the applied refs, the candidates and the likely inputs.
`verify(result, recordings)` replays it dry against the recordings (the replayer's own ref
resolution, nothing called), then against a changed world (the generalization check, whose stale
literals `propose_fixes` offers as unticked inputs); `summary` is the few lines a person reads first.
"""

from toolreel.templatizer._generalize import Finding
from toolreel.templatizer._result import Inference, LikelyInput, StayedLiteral, TemplatizeResult
from toolreel.templatizer._templatize import templatize
from toolreel.templatizer._verify import Verification, propose_fixes, summary, verify

__all__ = [
    "Finding",
    "Inference",
    "LikelyInput",
    "StayedLiteral",
    "TemplatizeResult",
    "Verification",
    "propose_fixes",
    "summary",
    "templatize",
    "verify",
]
