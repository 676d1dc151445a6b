"""Helpers shared by the command-line tests: write samples, run ``ragmeter eval`` in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from ragmeter.cli import app

runner = CliRunner()


#: Two samples that token_f1 scores: what :func:`token_f1_run` evaluates.
TWO_SAMPLES = [
    {"id": "s1", "user_input": "q one", "response": "blue sky", "reference": "blue"},
    {"id": "s2", "user_input": "q two", "response": "blue", "reference": "blue"},
]


def token_f1_run(folder: Path) -> Path:
    """A finished ``ragmeter eval -m token_f1`` run of :data:`TWO_SAMPLES` in ``folder/run``; its path."""
    done = run_eval(write_jsonl(folder / "data.jsonl", TWO_SAMPLES), "-m", "token_f1", "-o", folder / "run", "--no-progress")
    assert done.exit_code == 0, done.output
    return folder / "run"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` to ``path`` as JSON lines (UTF-8, non-ASCII kept as it is); ``path``."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def run_eval(*args: Any) -> Result:
    """``ragmeter eval`` with ``args`` (each turned into text), run in this process."""
    return runner.invoke(app, ["eval", *map(str, args)])


def one_line_error(result: Result, *fragments: str) -> str:
    """Exit 2, the whole output one line ``error: ...`` holding each fragment, no traceback;
    that line."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def strict_json(text: str) -> Any:
    """``text`` parsed as standard JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are refused."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)
