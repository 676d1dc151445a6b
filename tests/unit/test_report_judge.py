"""The judge in the reports: the run says which verdict mode was used, what the verdict probe
found, and the judge's warnings, in run.json, report.md and report.html."""

from __future__ import annotations

import json

from test_llm_double import FixedVectors, ScriptedJudge

from ragmeter import Judges
from ragmeter.data import load_dataset
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.judges.probe import VerdictTally
from ragmeter.report import write_reports
from ragmeter.report.judge import judge_line
from ragmeter.run.engine import Evaluator

PROBE = {
    "chosen": "single",
    "tried": [
        {
            "mode": "batch",
            "method": "text",
            "n": 24,
            "roc_auc": 0.5,
            "balanced_accuracy": 0.5,
            "share_yes": 1.0,
            "passed": False,
            "error": None,
        },
        {
            "mode": "single",
            "method": "logprobs",
            "n": 24,
            "roc_auc": 0.96,
            "balanced_accuracy": 0.83,
            "share_yes": 0.6,
            "passed": True,
            "error": None,
        },
    ],
    "warning": None,
}


class TallyingJudge(ScriptedJudge):
    """A stand-in that describes itself as an endpoint in auto mode and keeps a real tally."""

    backend = "openai"

    def __init__(self):
        super().__init__(rule=lambda task, shared, item: 1.0)
        self.tally = VerdictTally(uniform_after=3)

    async def verdicts(self, task, shared, items, lang):
        verdicts = await super().verdicts(task, shared, items, lang)
        self.tally.add(task, verdicts)
        return verdicts

    def identity(self):
        return {"backend": "openai", "model": "qwen", "verdict_mode": "auto"}

    def describe(self):
        methods = {"logprobs": sum(e["n"] for e in self.tally.counts.values())}
        return {
            **self.identity(),
            "verdict_mode_used": "single",
            "verdict_methods": methods,
            "probe": PROBE,
            "warnings": self.tally.warnings(),
        }


def test_the_run_and_its_reports_say_how_the_judge_gave_its_verdicts(tmp_path):
    samples = [
        {"id": f"s{i}", "user_input": "When does it open?", "retrieved_contexts": ["It opens at nine."], "response": "It opens at nine."}
        for i in range(4)
    ]
    judges = Judges(embedder=BatchingEmbedder(FixedVectors({})), llm=TallyingJudge())
    result = Evaluator(["faithfulness"], judges=judges, progress=False).run(load_dataset(samples))
    judge = result.run["judge"]
    assert judge["verdict_mode_used"] == "single" and judge["verdict_methods"] == {"logprobs": 4}  # described after the run
    (warning,) = judge["warnings"]
    assert "all 4 verdicts of the task 'supported'" in warning
    write_reports(result, tmp_path)
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")  # the judge's values are code spans
    assert (
        "Judge: `openai` `qwen`; verdict mode `auto` → `single` (P(yes) read from: `logprobs` 4); verdict probe chose `single`" in markdown
    )
    assert "`batch` (`text`) ROC-AUC 0.50" in markdown and "`single` (`logprobs`) ROC-AUC 0.96" in markdown
    assert "> **Warning**: all 4 verdicts" in markdown
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Judge warning:" in html and "verdict mode auto → single" in html
    assert json.loads((tmp_path / "summary.json").read_text())["run"]["judge"]["probe"]["chosen"] == "single"


def test_a_run_without_an_llm_judge_has_no_judge_line():
    assert judge_line(None) is None


def test_a_model_free_run_names_no_judge_even_when_one_was_configured(tmp_path):
    """The CLI always builds a judge; a run whose metrics never used it must not claim one."""
    samples = [{"id": "s1", "user_input": "When?", "response": "At nine.", "reference": "At nine."}]
    judges = Judges(embedder=BatchingEmbedder(FixedVectors({})), llm=TallyingJudge())
    result = Evaluator(["token_f1"], judges=judges, progress=False).run(load_dataset(samples))
    assert result.run["judge"] is None
    write_reports(result, tmp_path)
    assert "Judge" not in (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Judge" not in (tmp_path / "report.html").read_text(encoding="utf-8")
