"""`llm` steps: ask a model, check its answer, record prompt, answer and model.

Who is asked, in order: the recorded answer when the run pins them (`--llm recorded`); the client that
started the run, through MCP sampling (`Sampler`, either era); the OpenAI-compatible endpoint in
`TOOLREEL_LLM_URL` (`/chat/completions`, key `TOOLREEL_LLM_KEY`, model `TOOLREEL_LLM_MODEL`); else the
step waits and the execution pauses with the named reason `no model available` (resumed once one is).
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from toolreel.core.caller import ModelAnswer
from toolreel.core.form import mismatch
from toolreel.core.model import JSON, StepRecord
from toolreel.replayer._llm_settings import LLMSettings
from toolreel.replayer._state import AWAITING, StepState, failed, succeeded

if TYPE_CHECKING:
    from toolreel.replayer._host import StepHost

__all__ = ["NO_MODEL", "LLMSettings", "llm_step"]

logger = logging.getLogger("toolreel.replayer")

NO_MODEL = "no model available"
INVALID = "llm_answer_invalid"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)
_DEFAULT_TIMEOUT = 120.0


async def llm_step(host: StepHost, state: StepState, record: StepRecord) -> StepRecord:
    spec = state.spec.llm
    assert spec is not None
    prompt = str(state.args)
    settings = host.ctx.llm
    if settings.mode == "recorded":
        if not spec.has_recorded:
            return failed(record, f"{INVALID}: the run pins recorded answers (--llm recorded) and this step has none")
        answer: ModelAnswer | None = ModelAnswer(_text(spec.recorded), None, "recorded")
    else:
        try:
            answer = await _ask(host, prompt, spec.max_tokens, spec.schema, state.spec.timeout)
        except _EndpointError as exc:
            return failed(record, f"llm: the model endpoint {settings.url} failed: {exc}")
    if answer is None:
        message = f"step {record.name} needs a model: {NO_MODEL} (set TOOLREEL_LLM_URL, or run it from a client "
        message += "that supports sampling), then resume it"
        return record.replace(result={AWAITING: "llm", "prompt": {"llm": NO_MODEL, "message": message}})
    result = {"prompt": prompt, "answer": answer.text, "model": answer.model, "via": answer.via}
    if spec.schema is None:
        return succeeded(record, answer.text, result)
    try:
        value = _parsed(answer.text)
    except ValueError as exc:
        return failed(record, f"{INVALID}: the answer is not JSON ({exc}): {answer.text[:300]!r}", result)
    problem = mismatch(spec.schema, value)
    if problem is not None:
        return failed(record, f"{INVALID}: the answer does not match the step's schema {problem}", result)
    return succeeded(record, value, result)


async def _ask(host: StepHost, prompt: str, max_tokens: int, schema: JSON, timeout: float | None) -> ModelAnswer | None:
    asked = prompt
    if schema is not None:
        asked += "\n\nAnswer with JSON only, matching this JSON Schema:\n" + json.dumps(schema)
    sampler = host.ctx.sampler
    if sampler is not None:
        try:
            answer = await sampler.sample(asked, max_tokens=max_tokens)
        except Exception:  # the client went away: try the endpoint, else pause
            logger.warning("execution %s: sampling failed", host.execution_id, exc_info=True)
            answer = None
        if answer is not None:
            return answer
    settings = host.ctx.llm
    if settings.url is None:
        return None
    return await _endpoint(settings, asked, max_tokens, schema, timeout or _DEFAULT_TIMEOUT)


async def _endpoint(settings: LLMSettings, prompt: str, max_tokens: int, schema: JSON, timeout: float) -> ModelAnswer:
    assert settings.url is not None
    body: dict[str, Any] = {
        "model": settings.model or "default",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
    }
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    import httpx  # loaded by the first run that asks an endpoint, not by every command

    headers = {"Authorization": f"Bearer {settings.key}"} if settings.key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(settings.url.rstrip("/") + "/chat/completions", json=body, headers=headers)
            response.raise_for_status()
            data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise _EndpointError(str(exc) or type(exc).__name__) from exc
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _EndpointError(f"the answer has no choices[0].message.content: {str(data)[:300]}") from None
    if not isinstance(text, str):
        raise _EndpointError(f"the answer's content is {type(text).__name__}, not text")
    model = data.get("model")
    return ModelAnswer(text, model if isinstance(model, str) else settings.model, "endpoint")


class _EndpointError(Exception):
    """The endpoint could not be reached or gave no usable answer."""


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _parsed(text: str) -> JSON:
    fenced = _FENCE.match(text)
    try:
        return json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at character {exc.pos}") from None
