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
  context and entity recall, answer correctness and relevancy, recognising unanswerable
  questions; faithfulness of minimally edited human answers).
- ``msmarco``: query and passage, relevant or hard negative (context relevance).
- ``rgb``: Chinese queries with passages that contain the answer or only look related
  (Chinese context relevance and faithfulness; faithfulness of minimally edited answers,
  the twin of ClapNQ's; answer correctness of a sentence that gives the answer or only
  looks related).
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragmeter.bench.clapnq import clapnq
from ragmeter.bench.edits import rgb_pairs, spellings, zh_claim
from ragmeter.bench.task import Task, draw, edit_tasks, read_rows
from ragmeter.data import load_dataset
from ragmeter.data.encodings import decode_text
from ragmeter.data.text import split_sentences
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
    return [_relevance_task("msmarco/context_relevance", msmarco_triples(data_dir), limit, seed, "ms")]


def rgb_triples(data_dir: Path) -> list[tuple[str, str, int]]:
    """Every RGB Chinese (query, passage, label) in file order: 1 if the passage contains
    the answer, 0 if it is related but does not."""
    return _triples(read_rows(data_dir / "rgb_zh_refine.jsonl"))


def _triples(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """The (query, passage, label) of RGB ``rows`` (see :func:`rgb_triples`)."""
    triples = []
    for row in rows:
        triples += [(row["query"], p, 1) for p in row["positive"]] + [(row["query"], p, 0) for p in row["negative"]]
    return triples


def rgb(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """Chinese context relevance (``limit``: passages): positive passages contain the
    answer, negative ones are related but do not; and Chinese faithfulness, easy
    (:func:`rgb_faithfulness`) and minimally edited (:func:`rgb_faithfulness_edits`),
    ``limit``: questions; and Chinese answer correctness (:func:`rgb_answer_correctness`). The
    file is read once for all of them."""
    rows = read_rows(data_dir / "rgb_zh_refine.jsonl")
    return [
        _relevance_task("rgb/context_relevance", _triples(rows), limit, seed, "rgb"),
        *rgb_faithfulness(rows, limit, seed),
        *rgb_faithfulness_edits(rows, limit, seed),
        rgb_answer_correctness(rows, limit, seed),
    ]


def rgb_faithfulness(rows: list[dict[str, Any]], limit: int | None, seed: int) -> list[Task]:
    """Chinese groundedness (``limit``: questions of the RGB ``rows``). A question's first gold answer is the
    response, judged once against one of its positive passages (label 1: the passage
    gives the answer) and once against one of its negative passages (label 0: on the
    topic, without the answer), each drawn with the seed and the question's id. In RGB
    nearly every positive passage contains the answer's exact string and nearly no
    negative one does, so this checks that the Chinese path works rather than judging a
    hard case; ``embedding_groundedness`` runs beside it."""
    samples, units = [], []
    for row in draw(rows, limit, seed):
        answer = row["answer"][0]
        while isinstance(answer, list):  # a list of accepted spellings: the first
            answer = answer[0]
        pick = random.Random(f"{seed}-{row['id']}")
        for kind, label in (("positive", 1), ("negative", 0)):
            sample_id = f"rgb-{row['id']}-{kind}"
            samples.append(
                {"id": sample_id, "user_input": row["query"], "retrieved_contexts": [pick.choice(row[kind])], "response": answer}
            )
            units.append({"sample": sample_id, "label": label, "group": f"rgb-{row['id']}", "part": None})
    dataset = load_dataset(samples)
    return [
        Task("rgb/faithfulness", "faithfulness", dataset, units, "binary", "ROC-AUC target 0.85 (within 0.05 of English)"),
        Task("rgb/embedding_groundedness", "embedding_groundedness", dataset, units, "binary", "embedding baseline"),
    ]


def rgb_faithfulness_edits(rows: list[dict[str, Any]], limit: int | None, seed: int) -> list[Task]:
    """Chinese faithfulness on minimal edits (``limit``: questions of the RGB ``rows``, two claims each): the
    claim "<query>：<gold answer>。" against a positive passage that contains the answer
    (label 1), and the same claim with the answer replaced by a wrong one of the same kind
    that the passage never states (label 0), against the same passage
    (:func:`ragmeter.bench.edits.rgb_pairs`). The English twin is
    :func:`~ragmeter.bench.clapnq.clapnq_faithfulness_edits`."""
    return edit_tasks("rgb", rgb_pairs(rows, draw(rows, None, seed), limit, seed))


#: Longest sentence a correctness response is built from, in characters: RGB passages hold
#: unpunctuated runs of a whole page, which would be no answer at all.
LONGEST_SENTENCE = 200


def rgb_answer_correctness(rows: list[dict[str, Any]], limit: int | None, seed: int) -> Task:
    """Chinese answer correctness (``limit``: questions of the RGB ``rows``), the twin of ClapNQ's. The reference is
    the claim that the first gold answer answers the question (:func:`~ragmeter.bench.edits.zh_claim`);
    against it, the sentence of a positive passage that holds an accepted answer and shares the
    most characters with the query (correct), and the sentence of a negative passage that shares
    the most characters with the query and holds no accepted answer (wrong: same topic and
    words, not the answer). Questions without both sentences are left out."""
    samples, units = [], []
    for row in draw(rows, None, seed):
        accepted = [s for entry in row["answer"] for s in spellings(entry)]
        right = _nearest_sentence(row["query"], row["positive"], accepted, holds=True)
        wrong = _nearest_sentence(row["query"], row["negative"], accepted, holds=False)
        if right is None or wrong is None:
            continue
        group, reference = f"rgbc-{row['id']}", zh_claim(row["query"], accepted[0])
        for suffix, response, label in (("right", right, 1), ("wrong", wrong, 0)):
            samples.append({"id": f"{group}-{suffix}", "user_input": row["query"], "response": response, "reference": reference})
            units.append({"sample": f"{group}-{suffix}", "label": label, "group": group, "part": None})
        if limit is not None and len(samples) >= 2 * limit:
            break
    reference = "a sentence giving the gold answer vs a related one that does not"
    return Task("rgb/answer_correctness", "answer_correctness", load_dataset(samples), units, "binary", reference)


def _nearest_sentence(query: str, passages: Sequence[str], answers: Sequence[str], holds: bool) -> str | None:
    """The sentence of ``passages`` (at most :data:`LONGEST_SENTENCE` characters) that shares
    the most distinct characters with ``query`` (the first on a tie) among those that hold one
    of ``answers`` (``holds``) or none of them (not ``holds``)."""
    candidates = [s for p in passages for s in split_sentences(p) if len(s) <= LONGEST_SENTENCE and any(a in s for a in answers) == holds]
    return max(candidates, key=lambda s: len(set(s) & set(query)), default=None)


def relevance_draw(triples: list[tuple[str, str, int]], limit: int | None, seed: int) -> list[tuple[str, str, int]]:
    """The (query, passage, label) triples a relevance task with this ``limit`` and
    ``seed`` measures, before duplicates of a query's passage are dropped."""
    return draw(triples, limit, seed)


def _relevance_task(name: str, triples: list[tuple[str, str, int]], limit: int | None, seed: int, prefix: str) -> Task:
    chosen = relevance_draw(triples, limit, seed)
    by_query: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for query, passage, label in chosen:
        if passage not in {p for p, _ in by_query[query]}:
            by_query[query].append((passage, label))
    samples, units = [], []
    for number, (query, passages) in enumerate(sorted(by_query.items())):
        sample_id = f"{prefix}-{number}"
        samples.append({"id": sample_id, "user_input": query, "retrieved_contexts": [p for p, _ in passages]})
        units += [{"sample": sample_id, "label": label, "group": sample_id, "part": index} for index, (_, label) in enumerate(passages)]
    return Task(name, "context_relevance", load_dataset(samples), units, "binary", "ROC-AUC target 0.85")


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
            left_out.append(f"{loaded.source}, {loaded.location}: field '{label_field}' must be a finite number, got {label!r}")
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
