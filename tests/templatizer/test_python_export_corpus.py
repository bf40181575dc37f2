"""`templates export --as python` over every template of the user documentation and of the templatizer's
corpus (each recording of fixtures/recordings templatized): each is written as a program that compiles and
passes ruff and mypy --strict, or is refused naming what the export cannot write (a JSONPath ref, a join of
steps that can run at once). The
programs' calls are compared with `toolreel run`'s in tests/gateway/test_skills.py (fixture templates) and
tests/templatizer/test_python_export_worlds.py (every corpus template, against world servers)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from fixtures.recordings import load_corpus
from tests.gw import PYTHON
from toolreel.core.errors import TemplateError
from toolreel.core.template import Template
from toolreel.core.template_io import load_template_text
from toolreel.templatizer import templatize
from toolreel.templatizer.to_python import python_program

REPO = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
# What the export refuses on purpose (docs/decisions/skills.md): JSONPath refs, and joins whose steps could run
# at once (a faithful join would need the run's scheduler); nothing else may be refused.
_REFUSED = re.compile(
    r"uses JSONPath, which the export does not translate|joins \(wait_for\) steps that can run at once"
)


def _templates() -> list[Template]:
    documented = [
        load_template_text(match.group(1), source=str(path))
        for path in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
        for match in _BLOCK.finditer(path.read_text(encoding="utf-8"))
    ]
    corpus = [templatize(e.recordings, name=e.name, schemas=e.tools).template for e in load_corpus()]
    return documented + corpus


def _programs() -> tuple[dict[str, str], dict[str, str]]:
    """(template name -> program, template name -> why it was refused)."""
    templates = _templates()
    by_name = {template.name: template for template in templates}
    programs: dict[str, str] = {}
    refused: dict[str, str] = {}
    for template in templates:
        try:
            programs[template.name] = python_program(template, lambda name, version: by_name[name])
        except TemplateError as exc:
            refused[template.name] = str(exc)
    return programs, refused


def test_every_documented_and_corpus_template_exports_or_is_refused_for_a_stated_reason() -> None:
    programs, refused = _programs()
    assert {name: why for name, why in refused.items() if not _REFUSED.search(why)} == {}
    assert len(programs) >= 40 and len(refused) <= 2, (sorted(programs), refused)
    for name, program in programs.items():
        compile(program, f"{name}.py", "exec")  # a SyntaxError names the template
    kinds = {step.kind for template in _templates() if template.name in programs for step in template.steps}
    assert {
        "tool",
        "return",
        "code",
        "approve",
        "template",
        "script",
        "switch",
        "wait",
        "llm",
    } <= kinds  # every kind it writes is in the set


@pytest.mark.slow
def test_every_exported_program_passes_ruff_and_mypy_strict(tmp_path: Path) -> None:
    programs, _ = _programs()
    for name, program in programs.items():
        (tmp_path / f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}.py").write_text(program, encoding="utf-8")
    files = sorted(str(path) for path in tmp_path.glob("*.py"))
    bin_dir = Path(PYTHON).parent
    lint = subprocess.run([bin_dir / "ruff", "check", "--isolated", *files], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    # each program on its own: they share module names (`run`, `main`) that one mypy run would see twice
    typed = subprocess.run(
        [bin_dir / "mypy", "--strict", "--no-incremental", "--scripts-are-modules", *files],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert typed.returncode == 0, typed.stdout
