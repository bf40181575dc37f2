"""Every example in the user documentation is real: templates validate, client configs load."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolreel.core.errors import ConfigError
from toolreel.core.template_io import load_template_text
from toolreel.upstreams.config import load_config

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for i, match in enumerate(_BLOCK.finditer(path.read_text())):
            if match.group(1) == lang:
                found.append((f"{path.relative_to(REPO)}#{i}", match.group(2)))
    return found


@pytest.mark.parametrize(("where", "text"), _blocks("yaml"), ids=[w for w, _ in _blocks("yaml")])
def test_every_yaml_example_is_a_valid_template(where: str, text: str) -> None:
    template = load_template_text(text, source=where)
    assert template.steps, where


def _configs() -> list[tuple[str, str]]:
    return [(w, t) for lang in ("json", "jsonc") for w, t in _blocks(lang) if '"mcpServers"' in t or '"servers"' in t]


@pytest.mark.parametrize(("where", "text"), _configs(), ids=[w for w, _ in _configs()])
def test_every_client_config_example_loads(
    where: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TOKEN", "example")
    path = tmp_path / ("mcp.jsonc" if "//" in text else "mcp.json")
    path.write_text(text)
    config = load_config(path)
    assert config.servers, where


def test_a_config_example_with_a_missing_variable_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: the same loader refuses what the docs warn about."""
    monkeypatch.delenv("API_TOKEN", raising=False)
    (where, text) = next((w, t) for w, t in _configs() if "${env:API_TOKEN}" in t)
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match="API_TOKEN"):
        load_config(path)
    assert json.loads(text), where
