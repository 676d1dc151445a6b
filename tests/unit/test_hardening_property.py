"""The class of issue 13's defects, as a property: whatever text a sample holds (control
characters, line separators, astral characters, bidi overrides, console markup, HTML, Markdown,
deep nesting), `ragmeter eval` with model-free metrics ends in exit 0 or 2 without a traceback,
writes files that `report`, `compare` and `gate` read back with the data unchanged, prints no
control code from the data, and puts no markup from the data into report.html."""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

from cli_helpers import strict_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter.cli import app

runner = CliRunner()
# What the console shows as escapes, but the line breaks between its own lines.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

METRICS = "exact_match,token_f1,nonllm_context_recall,ndcg@3,retrieval_recall"
TEXT_FIELDS = ("user_input", "response", "reference")
LIST_FIELDS = ("retrieved_contexts", "retrieved_context_ids", "reference_contexts", "reference_context_ids")

HOSTILE = [
    "[/]",
    "[/bold]",
    "[bold]",
    "[link=https://x]",
    "<script>alert(1)</script>",
    "</script><script>alert(2)</script>",
    "<img src=x onerror=alert(3)>",
    '"><svg onload=alert(4)>',
    "![x](http://evil/img.png)",
    "[link](http://evil)",
    "{{ 7*7 }}",
    "{% raw %}",
    "\x1b[31m",
    "\x1b]0;title\x07",
    "\u2028",
    "\u2029",
    "\u0085",
    "\u202e",
    "\r\n",
    "\x00",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀",
    "数据库变更",
    "|",
    "`",
    "&amp;",
    "NaN",
]

# Any character that UTF-8 can hold (no lone surrogates), controls and separators included.
characters = st.characters(exclude_categories=("Cs",))
text = st.one_of(
    st.text(characters, max_size=30),
    st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(characters, max_size=5)), max_size=6).map("".join),
)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), text)
json_value = st.recursive(
    json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)), max_leaves=12
)


@st.composite
def nested(draw):
    """A value nested 1 to 60 lists deep: within the 32-level limit or beyond it."""
    value = draw(json_leaf)
    for _ in range(draw(st.integers(1, 60))):
        value = [value]
    return value


@st.composite
def sample(draw, sample_id):
    row: dict = {"id": sample_id}
    for field in TEXT_FIELDS:
        if draw(st.booleans()) or field == "response":
            row[field] = draw(text)
    for field in LIST_FIELDS:
        if draw(st.booleans()):
            row[field] = draw(st.lists(text, max_size=3))
    if draw(st.booleans()):
        row["metadata"] = draw(st.dictionaries(text, st.one_of(json_value, nested()), max_size=3))
    return row


@st.composite
def samples(draw):
    """1 to 3 samples, then one more given twice: the issue about the repeated id quotes it on
    the console in every example."""
    ids = draw(st.lists(text, min_size=2, max_size=4, unique=True))
    repeated = ids.pop()
    return [*(draw(sample(i)) for i in ids), {"id": repeated, "response": "once"}, {"id": repeated, "response": "twice"}]


class _Tags(HTMLParser):
    """Start tags and event-handler attributes of a page, counted."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.handlers = 0

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        self.handlers += sum(1 for name, _ in attrs if name.lower().startswith("on"))


ACTIVE_TAGS = ("script", "iframe", "img", "object", "embed", "link", "meta", "base", "form", "style", "svg")


def _active(html: str) -> tuple[dict[str, int], int]:
    parser = _Tags()
    parser.feed(html)
    return {tag: parser.tags[tag] for tag in ACTIVE_TAGS if tag != "svg"}, parser.handlers


def _clean_page_shape() -> tuple[dict[str, int], int]:
    """The page's own active tags, from a run on plain data."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "plain.jsonl"
        data.write_text(json.dumps({"id": "p", "response": "plain words", "reference": "plain text"}) + "\n")
        result = runner.invoke(app, ["eval", str(data), "-m", METRICS, "-o", str(Path(folder) / "run")])
        assert result.exit_code == 0, result.output
        return _active((Path(folder) / "run" / "report.html").read_text(encoding="utf-8"))


CLEAN_PAGE: list[tuple[dict[str, int], int]] = []


def _no_crash(result, what: str) -> None:
    assert "Traceback" not in result.output, (what, result.output)
    assert "unexpected error" not in result.output, (what, result.output)
    assert not _CONTROL.search(result.output), (what, result.output)  # no control code from the data


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows=samples())
def test_any_text_in_any_field_runs_end_to_end(rows):
    """Issue 13's class: eval, report, compare and gate on arbitrary Unicode and markup in
    every sample field (see the module docstring)."""
    if not CLEAN_PAGE:
        CLEAN_PAGE.append(_clean_page_shape())
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        data = root / "data.jsonl"
        data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        out = root / "run"
        result = runner.invoke(app, ["eval", str(data), "-m", METRICS, "-o", str(out)])
        assert result.exit_code in (0, 2), result.output
        _no_crash(result, "eval")
        assert "duplicate id" in result.output
        if result.exit_code == 2:
            assert result.output.strip().splitlines()[-1].startswith("error: ")
            return

        # Every record is one line, even for readers that split at U+2028 and friends, and
        # strict JSON; every sample that was not skipped reads back as it was given.
        records = [strict_json(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
        issues = [strict_json(line) for line in (out / "input_issues.jsonl").read_text(encoding="utf-8").splitlines()]
        skipped = {int(i["location"].split()[-1]) for i in issues if i["skipped"]}
        kept = [row for number, row in enumerate(rows, start=1) if number not in skipped]
        assert [r["key"] for r in records] == [row["id"] for row in kept]
        for record, row in zip(records, kept, strict=True):
            for field in (*TEXT_FIELDS, *LIST_FIELDS):
                assert record["sample"].get(field) == row.get(field), field
            assert record["sample"].get("metadata", {}) == row.get("metadata", {})
        strict_json((out / "summary.json").read_text(encoding="utf-8"))
        strict_json((out / "run.json").read_text(encoding="utf-8"))

        html = (out / "report.html").read_text(encoding="utf-8")
        assert _active(html) == CLEAN_PAGE[0], "markup from the data became part of the page"
        for raw in ("<script>alert", "<img src=x", "<svg onload"):  # data that would be live markup unescaped
            assert raw not in html, raw

        report = runner.invoke(app, ["report", str(out)])
        assert report.exit_code == 0, report.output
        _no_crash(report, "report")
        compare = runner.invoke(app, ["compare", str(out), str(out), "-o", str(root / "cmp")])
        assert compare.exit_code == 0, compare.output
        _no_crash(compare, "compare")
        thresholds = root / "thresholds.yaml"
        thresholds.write_text("token_f1: 0.0\n")
        gate = runner.invoke(app, ["gate", str(out), "--thresholds", str(thresholds), "--baseline", str(out)])
        assert gate.exit_code in (0, 1), gate.output  # a pass or a reasoned fail, never an error
        _no_crash(gate, "gate")
