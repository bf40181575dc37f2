"""The templatizer: turn recorded steps into a reusable template, explaining every decision.

`templatize(recordings, name=...)` infers refs between steps (an index of every earlier
output, candidates scored by exactness, length, uniqueness, recency and key names), makes
inputs of named, redacted and varying values, verifies every ref against the recording, and
returns the validated template with the applied refs, the candidates and the likely inputs.
`verify(result, recordings)` replays it dry against the recordings (the replayer's own ref
resolution, nothing called); `summary` is the few lines a person reads first.
"""

from toolreel.templatizer._result import Inference, LikelyInput, TemplatizeResult
from toolreel.templatizer._templatize import templatize
from toolreel.templatizer._verify import Verification, summary, verify

__all__ = ["Inference", "LikelyInput", "TemplatizeResult", "Verification", "summary", "templatize", "verify"]
