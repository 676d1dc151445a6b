"""Human-labelled sets turned into ragmeter samples, with the labels to compare against.

Each suite reads its file from the data folder (by default ``../shared/data``; nothing is
copied) and builds one or more :class:`~ragmeter.bench.task.Task`: samples for a metric, the human label of
each judged unit, and how to compare them. Sampling (``limit``) is seeded, so the same
command always measures the same units.

The sets (see the data folder's README for their provenance and licences):

- ``qags``: summary sentences judged faithful or not to their article (faithfulness).
- ``ragchecker``: two responses to a question, human preferences on correctness,
  completeness and overall (factual correctness as precision, recall and F1; answer
  correctness; semantic similarity).
- ``clapnq``: questions with a gold passage, annotator-selected answer sentences and a
  human answer; half are unanswerable (context precision with and without a reference,
  context and entity recall, answer correctness and relevancy, context utilization,
  recognising unanswerable questions; faithfulness of minimally edited human answers).
- ``msmarco``: query and passage, relevant or hard negative (context relevance).
- ``rgb``: Chinese queries with passages that contain the answer or only look related
  (Chinese context relevance and faithfulness; faithfulness of minimally edited answers,
  the twin of ClapNQ's; answer correctness and noise sensitivity of a sentence that gives
  the answer or only looks related): :mod:`ragmeter.bench.rgb`.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragmeter.bench.clapnq import clapnq
from ragmeter.bench.rgb import rgb
from ragmeter.bench.task import Task, draw, read_rows, relevance_task
from ragmeter.data import load_dataset
from ragmeter.data.encodings import decode_text
from ragmeter.metrics import create_metric


def in_qags_calibration_split(claim_id: str) -> bool:
    """Whether a QAGS claim (id ``source-article-sentence``) belongs to the split the local
    judge's P(yes) calibration was fitted on: articles whose number is divisible by 4."""
    return int(claim_id.rsplit("-", 2)[1]) % 4 == 0


def qags_rows(data_dir: Path) -> list[dict[str, Any]]:
    """Every QAGS claim with its article and labels."""
    return read_rows(data_dir / "qags_sentences.jsonl")


def qags(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """Faithfulness of summary sentences (``limit``: claims). Each claim is a one-sentence
    response judged against its article as the only retrieved context. Claims of the
    calibration split (:func:`in_qags_calibration_split`) are left out: the local judge was fitted on
    them. Claims of the same article come one after the other."""
    rows = draw([r for r in qags_rows(data_dir) if not in_qags_calibration_split(r["id"])], limit, seed)
    # Claims of one article next to each other: the local judge then reads the article once.
    first_seen = {context: n for n, context in reversed(list(enumerate(r["context"] for r in rows)))}
    rows.sort(key=lambda r: first_seen[r["context"]])
    samples = [
        {"id": r["id"], "user_input": "Summarise the article.", "retrieved_contexts": [r["context"]], "response": r["claim"]} for r in rows
    ]
    units = [{"sample": r["id"], "label": int(r["faithful_majority"]), "group": r["context"][:200], "part": None} for r in rows]
    dataset = load_dataset(samples)
    reference = "HHEM-2.1-Open 0.74-0.77 BA on comparable claim-level sets; GPT-4 zero-shot 0.74"
    return [
        Task("qags/faithfulness", "faithfulness", dataset, units, "binary", reference),
        Task("qags/embedding_groundedness", "embedding_groundedness", dataset, units, "binary", "embedding baseline"),
    ]


SUMMEDITS_DOMAINS = ("news", "podcast", "samsum", "sales_email")


def summedits(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """Faithfulness of short summaries in four domains (``limit``: claims per domain). Each
    claim (a summary, consistent or minimally edited to be inconsistent) is a response judged
    against its document as the only retrieved context; one task per domain, so that a
    fit can be checked on the domains it did not see. Claims of one document come together."""
    rows = read_rows(data_dir / "summedits_dev.jsonl")
    tasks = []
    for domain in SUMMEDITS_DOMAINS:
        chosen = draw([r for r in rows if r["domain"] == domain], limit, seed)
        first_seen = {context: n for n, context in reversed(list(enumerate(r["context"] for r in chosen)))}
        chosen.sort(key=lambda r: first_seen[r["context"]])
        samples = [
            {"id": f"se-{r['id']}", "user_input": "Summarise the document.", "retrieved_contexts": [r["context"]], "response": r["claim"]}
            for r in chosen
        ]
        units = [{"sample": f"se-{r['id']}", "label": int(r["consistent"]), "group": r["context"][:200], "part": None} for r in chosen]
        dataset = load_dataset(samples)
        reference = "GPT-4 zero-shot 0.82 BA on SummEdits (10 domains), humans about 0.91"
        tasks += [
            Task(f"summedits/{domain}_faithfulness", "faithfulness", dataset, units, "binary", reference),
            Task(f"summedits/{domain}_embedding_groundedness", "embedding_groundedness", dataset, units, "binary", "embedding baseline"),
        ]
    return tasks


# What RAGChecker's annotators rated, the claim-level score RAGChecker compares with each rating
# (correctness is its precision, completeness its recall, overall its F1; data/meta_evaluation/
# baseline_ragchecker.json of its repository), and the published agreement.
_RAGCHECKER_RATINGS = {
    "correctness": ("precision", "RAGChecker's precision 0.497 Pearson; two human annotators agree at 0.637"),
    "completeness": ("recall", "RAGChecker's recall 0.607 Pearson; two human annotators agree at 0.719"),
    "overall": ("f1", "RAGChecker's F1 0.619 Pearson; two human annotators agree at 0.701"),
}


def ragchecker(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """Preferences between two responses (``limit``: response pairs). Both responses of a pair
    are scored against the reference; the score difference (response 2 minus response 1) is
    compared with each annotator's preference (-2..2, positive: response 2 better).

    The annotators rated three things, and each is compared with the score that measures it,
    as RAGChecker's own meta-evaluation does: correctness (are the response's claims right?)
    with ``factual_correctness(precision)``, completeness (does it say what the reference
    says?) with ``factual_correctness(recall)``, and the overall rating with the scores that
    weigh both: ``factual_correctness`` (F1), ``answer_correctness`` and
    ``semantic_similarity``. The F1 scores are also measured counting claims as decided
    (``counting`` decided) instead of as expected shares, the default."""
    rows = read_rows(data_dir / "ragchecker_meta_eval.jsonl")
    pairs: dict[int, dict[str, Any]] = {}
    for row in rows:
        pairs.setdefault(row["instance_id"], {**row, "ratings": []})["ratings"].append(row)
    chosen = draw(list(pairs.values()), limit, seed)
    samples = []
    units: dict[str, list[dict[str, Any]]] = {rating: [] for rating in _RAGCHECKER_RATINGS}
    for pair in chosen:
        for side in (1, 2):
            samples.append(
                {
                    "id": f"rc-{pair['instance_id']}-{side}",
                    "user_input": pair["question"],
                    "response": pair[f"response_{side}"],
                    "reference": pair["reference"],
                }
            )
        for annotator in pair["ratings"]:
            for rating, unit_list in units.items():
                unit_list.append(
                    {
                        "sample": f"rc-{pair['instance_id']}-2",
                        "versus": f"rc-{pair['instance_id']}-1",
                        "label": float(annotator[f"{rating}_pref"]),
                        "group": pair["instance_id"],
                        "part": None,
                    }
                )
    dataset = load_dataset(samples)

    def task(name: str, metric: str, rating: str, params: dict[str, Any] | None = None) -> Task:
        reference = _RAGCHECKER_RATINGS[rating][1]
        return Task(f"ragchecker/{name}", metric, dataset, units[rating], "preference", reference, params or {}, rating)

    # The modes and countings share their verdicts: all but the first task are answered from the cache.
    # F1 is factual_correctness's default mode: its task runs with default settings.
    modes = {rating: {} if mode == "f1" else {"mode": mode} for rating, (mode, _) in _RAGCHECKER_RATINGS.items()}
    factual = [
        task(create_metric("factual_correctness", **params).id, "factual_correctness", rating, params) for rating, params in modes.items()
    ]
    return [
        task("answer_correctness", "answer_correctness", "overall"),
        task("answer_correctness[decided]", "answer_correctness", "overall", {"counting": "decided"}),
        *factual,
        task("factual_correctness[decided]", "factual_correctness", "overall", {"counting": "decided"}),
        task("semantic_similarity", "semantic_similarity", "overall"),
    ]


def msmarco_triples(data_dir: Path) -> list[tuple[str, str, int]]:
    """Every MS MARCO (query, passage, label) in file order: 1 relevant, 0 hard negative.

    Args:
        data_dir: The folder of the labelled sets (``--data-dir``).

    Raises:
        FileNotFoundError: The file is missing (the message says to pass --data-dir).
        ValueError: The file cannot be read or is not UTF-8 text (:func:`decode_text`); the
            message names the file.
    """
    path = data_dir / "msmarco_context_relevance.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: pass --data-dir with the folder of the labelled sets")
    try:
        text = decode_text(path.read_bytes())
    except ValueError as exc:  # not UTF-8: the message named neither the file nor what to do
        raise ValueError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the labelled set: {exc.strerror or exc}") from None
    return [(r["query"], r["expected_response"], int(float(r["expected_score"]))) for r in csv.DictReader(io.StringIO(text, newline=""))]


def msmarco(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """Context relevance (``limit``: passages). Passages of one query are the retrieved
    contexts of one sample, each judged against the query."""
    return [relevance_task("msmarco/context_relevance", msmarco_triples(data_dir), limit, seed, "ms")]


def labelled_file(path: Path, metric: str, label_field: str, limit: int | None, seed: int) -> tuple[Task, list[str]]:
    """A user's own labelled samples: any file ``load_dataset`` reads, with a human label
    per sample in ``label_field`` (a column, so it lands in ``metadata``). Labels that are
    all 0 or 1 make a binary task (balanced accuracy, ROC-AUC); others a graded one
    (Pearson, Spearman).

    Returns:
        The task, and one line for each drawn sample left out because its label is missing
        or not a finite number (file, line, field and value): one bad row does not end
        the benchmark.

    Raises:
        ValueError: Fewer than two samples have a usable label (the message gives the
            first unusable ones), or a sample has no id.
    """
    dataset = load_dataset(path)
    chosen = draw(list(dataset.samples), limit, seed)
    units, usable, left_out = [], [], []
    for loaded in chosen:
        label = loaded.sample.metadata.get(label_field)
        if isinstance(label, bool):
            label = int(label)
        if not isinstance(label, (int, float)) or not math.isfinite(label):
            problem = "is missing or null" if label is None else f"must be a finite number, got {label!r}"
            left_out.append(f"{loaded.source}, {loaded.location}: field '{label_field}' {problem}")
            continue
        units.append({"sample": loaded.key, "label": label, "group": loaded.key, "part": None})
        usable.append(loaded)
    if len(units) < 2:
        raise ValueError(f"{path}: {len(units)} sample(s) with a usable label, at least 2 are needed; " + "; ".join(left_out[:3]))
    kind = "binary" if {u["label"] for u in units} <= {0, 1} else "graded"
    subset = load_dataset([loaded.sample for loaded in usable])
    keys = {loaded.sample.id: loaded.key for loaded in usable}
    if any(sample_id is None for sample_id in keys):
        raise ValueError(f"{path}: every sample needs an 'id' to be benchmarked")
    return Task(f"{path.name}/{metric}", metric, subset, units, kind, f"labels from '{label_field}'"), left_out


SUITES: dict[str, Callable[[Path, int | None, int], list[Task]]] = {
    "qags": qags,
    "summedits": summedits,
    "ragchecker": ragchecker,
    "clapnq": clapnq,
    "msmarco": msmarco,
    "rgb": rgb,
}


def bench_tasks(names: Sequence[str], data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """The tasks ``names`` ask for, in their order: a set name (``clapnq``) stands for all its
    tasks, a task name (``clapnq/context_recall``) for that task only. Each set is built once.
    Raises ValueError naming what is unknown, or the set whose file lacks a field it reads."""
    unknown = sorted({name for name in names if name.split("/", 1)[0] not in SUITES})
    if unknown:
        raise ValueError(f"unknown set(s) {', '.join(unknown)}; use {', '.join(SUITES)}, or set/task")
    built: dict[str, list[Task]] = {}
    chosen: list[Task] = []
    for name in names:
        suite = name.split("/", 1)[0]
        if suite not in built:
            try:
                built[suite] = SUITES[suite](data_dir, limit, seed)
            except KeyError as exc:  # 'unexpected error: KeyError: 'answerable'', naming no set and no file
                raise ValueError(
                    f"set {suite}: a row of its file in {data_dir} has no field {exc}; is it the file the set expects?"
                ) from None
        matching = [task for task in built[suite] if name in (suite, task.name)]
        if not matching:
            raise ValueError(f"set {suite} has no task {name}; its tasks: {', '.join(t.name for t in built[suite])}")
        chosen += [task for task in matching if task.name not in {t.name for t in chosen}]
    return chosen
