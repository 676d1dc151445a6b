"""The journal of ``ragmeter answer``: each answered question, appended as it completes.

An interrupted or killed run (SIGKILL included) loses at most the line being written (see
:class:`ragmeter.run.journal.Journal`, whose file handling this reuses). The same command run
again keeps a journalled answer when the test-set sample (its content) and the pipeline spec
are unchanged, and asks only the other questions; a question whose call failed is not
journalled, so it is asked again. The journal lies beside the output, ``<out>.journal``, and
is removed once the output is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.data import Dataset, LoadedSample
from ragmeter.data.schema import Sample
from ragmeter.run.journal import Journal

#: The journal's records' "metric": what the record holds (the journal format's key).
_KIND = "answer"


def journal_path(out: Path) -> Path:
    """The journal of the run writing ``out``."""
    return out.with_name(out.name + ".journal")


class AnswerJournal:
    """The answers of one ``ragmeter answer`` run, journalled as they come.

    Args:
        out: The ``--out`` file the answers are for (the journal lies beside it).
        pipeline: The pipeline spec; an answer journalled for another one is not reused.
    """

    def __init__(self, out: Path, pipeline: str):
        self.path = journal_path(out)
        self.pipeline = pipeline
        self.written = 0
        self._journal = Journal(self.path.parent, self.path.name)

    def resumed(self, testset: Dataset) -> dict[str, tuple[Sample, list[str]]]:
        """The journalled answers still valid for ``testset``, with their reply-key warnings,
        by sample key."""
        records = self._journal.read()
        kept: dict[str, tuple[Sample, list[str]]] = {}
        for loaded in testset:
            record = records.get((loaded.key, _KIND))
            if record and record.get("fingerprint") == loaded.sample.fingerprint() and record.get("config") == self.pipeline:
                try:
                    kept[loaded.key] = (Sample.model_validate(record["answered"]), [str(w) for w in record.get("warnings", [])])
                except (KeyError, TypeError, ValueError):
                    continue  # a record this version cannot read: the question is asked again
        return kept

    def record(self, asked: LoadedSample, answered: LoadedSample, warnings: list[str]) -> None:
        """Journal ``answered``, the reply to the test-set sample ``asked``, unless its call failed.

        Args:
            asked: The test-set sample.
            answered: The same sample with the pipeline's answer (or its error).
            warnings: The reply keys refused for it (:attr:`PipelineRun.warnings` lines).
        """
        if "pipeline_error" in answered.sample.metadata:
            return
        self._journal.append(
            {
                "sample": asked.key,
                "metric": _KIND,
                "fingerprint": asked.sample.fingerprint(),
                "config": self.pipeline,
                "answered": answered.sample.model_dump(exclude_none=True),
                "warnings": warnings,
            }
        )
        self.written += 1

    def close(self) -> None:
        self._journal.close()

    def remove(self) -> None:
        """Delete the journal (its answers are in the output now, or a fresh run starts)."""
        self.close()
        self.path.unlink(missing_ok=True)


def left_to_ask(testset: Dataset, resumed: dict[str, Any]) -> Dataset:
    """``testset`` without the samples whose keys ``resumed`` holds: the questions left to ask."""
    return Dataset(samples=[loaded for loaded in testset if loaded.key not in resumed], issues=list(testset.issues))
