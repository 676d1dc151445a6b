"""Does the local judge's surprise at a claim's words help the claim-support head on sources
it was not fitted on? (Measured: no. The product does not use it.)

The local judge reads a statement word by word before it answers whether the premise
supports it. Its logits after each token say how unexpected the next one was: *surprise*
is the largest gap, in nats, between the log-probability of the model's top choice and of
the statement's own token, over the statement's tokens after the first and outside
bracketed citations. A minimal edit (a swapped name, a changed number) is a word the model,
having just read the premise, did not expect, and the reading would cost nothing beyond
the verdict's own forward pass.

For every sentence of the seeded units of ``claim_data.py`` (QAGS cnndm and xsum, SummEdits
news, podcast, samsum, sales_email) this asks the product's question
(``metrics.evidence.supported`` with the packaged local judge: the 3 closest evidence
sentences, P(yes)), then reads the same prompt again keeping the logits of every statement
token (:class:`SurpriseReader`, benchmark code on the judge's internals, as
``claim_features.py`` does); each unit is cached in a JSONL file outside the repository
(resumable). Then, leave one source out, it compares the shipped head's features (P+L-:
logit P(yes), novel numbers, novel names, added negation) with the same plus surprise
(P+L-+S) and P+S. Heads are fitted on sentences (labels per sentence where known), class-
and source-balanced, C fixed a priori at 0.3; a unit's score is the minimum over its
sentences, as faithfulness does. Balanced accuracy at 0.5 and ROC-AUC per held-out source,
with 95% bootstrap intervals resampling documents.

Usage (one model process at a time):
    python benchmarks/claim_surprise.py collect --n 40 --seed 0 [--threads 1]
    python benchmarks/claim_surprise.py report
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from claim_data import DEFAULT_DATA_DIR, SOURCES, interleave, labelled_units
from claim_support_eval import fit, predict

from ragmeter.bench.report import git_commit
from ragmeter.data.text import CITATION
from ragmeter.judges import Judges
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.prompts import PromptBook, fence
from ragmeter.metrics.claim_support import derived_features, lexical_evidence
from ragmeter.metrics.evidence import supported
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

HERE = Path(__file__).resolve().parent
CACHE = Path("/work/trust_cache/claim_surprise.jsonl")
SHIPPED = ["logit_p_yes", "any_novel_numbers", "novel_names", "negation_added"]
FEATURE_SETS = {"P+L- (shipped head)": SHIPPED, "P+L-+S": [*SHIPPED, "surprise"], "P+S": ["logit_p_yes", "surprise"]}
C = 0.3


class SurpriseReader:
    """The packaged local judge's surprise at a statement, read from the logits of the
    product's ``supported`` prompt (head, evidence, statement + question)."""

    def __init__(self, judge: LocalJudge):
        self.judge = judge

    def surprise(self, evidence: list[str], statement: str, lang: str) -> float | None:
        """Largest top-choice gap over the statement's tokens after its first and outside
        its citations; None for a statement with no such token."""
        gaps = [
            float(logits.max() - logits[token]) for index, token, logits in self.statement_logits(evidence, statement, lang) if index > 0
        ]
        return round(max(gaps), 4) if gaps else None

    def statement_logits(self, evidence: list[str], statement: str, lang: str) -> list[tuple[int, int, np.ndarray]]:
        """``(index, token, logits)`` for each of the statement's tokens outside its
        citations, in the product's ``supported`` prompt with ``evidence`` as the premise:
        ``logits`` is the model's next-token row just before it read ``token``."""
        judge = self.judge
        book = PromptBook(lang)
        prompt = book.verdict("supported", {"premise": evidence})
        tag = book.item_tag("supported")
        head, shared, item = judge._segments_of(prompt, prompt.item(statement, tag))
        judge._memory.reach([head, shared])
        rows = self._evaluate_scored(item)
        llm = judge._llm
        opening = len(llm.tokenize(f"<{tag}>\n".encode(), add_bos=False, special=False))
        text = fence(tag, statement)[len(tag) + 3 : -(len(tag) + 4)]
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        matched = 0  # the statement's last token may merge with the newline after it
        while matched < len(tokens) and opening + matched < len(item) and item[opening + matched] == tokens[matched]:
            matched += 1
        cited = [(len(text[: m.start()].encode()), len(text[: m.end()].encode())) for m in CITATION.finditer(text)]
        out, end = [], 0
        for index, token in enumerate(tokens[:matched]):
            start, end = end, end + len(llm.detokenize([token]))
            if not any(start < stop and end > begin for begin, stop in cited):
                out.append((index, token, rows[opening + index - 1].astype(np.float64)))
        return out

    def _evaluate_scored(self, segment: tuple[int, ...]) -> np.ndarray:
        """Evaluate ``segment`` keeping the logits after each of its tokens (row i predicts
        the token after ``segment[i]``)."""
        llm = self.judge._llm
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        rows = []
        for start in range(0, len(segment), llm.n_batch):
            batch = list(segment[start : start + llm.n_batch])
            llm._batch.set_batch(batch=batch, n_past=llm.n_tokens, logits_all=True)
            llm._ctx.decode(llm._batch)
            rows.append(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(batch), llm.n_vocab())).copy())
            llm.input_ids[llm.n_tokens : llm.n_tokens + len(batch)] = batch
            llm.n_tokens += len(batch)
        self.judge._memory.segments.append(segment)
        return np.concatenate(rows)


def collect(units: list[dict[str, Any]], threads: int, cache: Path) -> None:
    """P(yes) and surprise of every unit's sentences, appended to ``cache``."""
    done = {json.loads(line)["unit"] for line in cache.read_text().splitlines() if line.strip()} if cache.exists() else set()
    todo = [u for u in units if u["unit"] not in done]
    print(f"{len(units)} units, {len(units) - len(todo)} cached, {len(todo)} to judge", flush=True)
    if not todo:
        return
    judge = LocalJudge(threads=threads)
    judges, reader = Judges(llm=judge), SurpriseReader(judge)
    cache.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with cache.open("a", encoding="utf-8") as out:
        for n, u in enumerate(todo, start=1):
            verdicts, _ = asyncio.run(supported(judges, [u["premise"]], u["claims"], u["lang"]))
            record = {
                "unit": u["unit"],
                "verdicts": [
                    {"p_yes": v.p_yes, "surprise": reader.surprise([v.evidence or u["premise"]], claim, u["lang"]), "evidence": v.evidence}
                    for claim, v in zip(u["claims"], verdicts, strict=True)
                ],
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            if n % 10 == 0 or n == len(todo):
                rate = (time.perf_counter() - started) / n
                print(f"{n}/{len(todo)} units, {rate:.1f} s each, eta {rate * (len(todo) - n) / 60:.0f} min", flush=True)


def sentence_table(units: list[dict[str, Any]], cache: Path) -> pd.DataFrame:
    """One row per judged sentence: source, doc, unit, labels and features."""
    by_unit = {}
    for line in cache.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            by_unit[record["unit"]] = record["verdicts"]
    rows = []
    for u in units:
        for index, (claim, verdict) in enumerate(zip(u["claims"], by_unit.get(u["unit"], []), strict=False)):
            if verdict["surprise"] is None:
                continue  # a one-token statement: nothing to read
            lexical = lexical_evidence(claim, u["premise"], verdict["evidence"]).as_dict()
            rows.append(
                {
                    "unit": u["unit"],
                    "source": u["source"],
                    "doc": u["doc"],
                    "unit_label": u["label"],
                    "label": u["claim_labels"][index],
                    **derived_features(verdict["p_yes"], lexical),
                    "surprise": verdict["surprise"],
                }
            )
    return pd.DataFrame(rows)


def unit_scores(rows: pd.DataFrame, p: np.ndarray) -> pd.DataFrame:
    """Each unit's score: the minimum of its sentences' probabilities."""
    frame = (
        rows.assign(p=p)
        .groupby("unit")
        .agg(source=("source", "first"), doc=("doc", "first"), label=("unit_label", "first"), p=("p", "min"))
    )
    return frame.reset_index()


def measure(units: pd.DataFrame) -> dict[str, Any]:
    labels, scores, groups = units.label.to_numpy(), units.p.to_numpy(), units.doc.to_numpy()
    return {
        "n": len(units),
        "ba": bootstrap_statistic(lambda y, s: balanced_accuracy(y, s >= 0.5), labels, scores, groups=groups),
        "auc": bootstrap_statistic(roc_auc, labels, scores, groups=groups),
    }


def loso(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for held in sorted(table.source.unique()):
        if table[table.source == held].unit_label.nunique() < 2:
            continue  # too few units judged yet to have both labels
        train = table[(table.source != held) & table.label.notna()].astype({"label": int})
        test = table[table.source == held]
        results[held] = {}
        for name, features in FEATURE_SETS.items():
            w, b = fit(train, features, C)
            results[held][name] = measure(unit_scores(test, predict(test, features, w, b)))
        results[held]["raw P(yes)"] = measure(unit_scores(test, 1 / (1 + np.exp(-test.logit_p_yes.to_numpy()))))
    return results


def cell(statistic: dict[str, Any]) -> str:
    return f"{statistic['value']:.3f} [{statistic['ci_low']:.2f}, {statistic['ci_high']:.2f}]"


def verdict_line(results: dict[str, dict[str, Any]]) -> str:
    """Whether the surprise head met the rule, in one sentence with the figures."""
    return rule_line(results, "P+L- (shipped head)", "P+L-+S", "surprise")


def held_out_statistics(group: pd.DataFrame, scorers: Sequence[str], base: str = "LOSO head") -> dict[str, Any]:
    """Per scorer of ``scorers`` (columns of ``group``, one held-out source's units with their
    ``unit_label`` and ``doc``, scores in log-odds): ROC-AUC and BA at 0 with bootstrap intervals
    resampling documents, and for each scorer but ``base`` its paired ROC-AUC gain over ``base``."""
    y, docs = group.unit_label.to_numpy(int), group.doc.to_numpy()
    reference = group[base].to_numpy(float)
    rows: dict[str, Any] = {}
    for name in scorers:
        values = group[name].to_numpy(float)
        rows[name] = {
            "auc": bootstrap_statistic(roc_auc, y, values, groups=docs),
            "ba": bootstrap_statistic(balanced_accuracy, y, (values >= 0).astype(int), groups=docs),
        }
        if name != base:
            rows[name]["auc_gain"] = bootstrap_statistic(
                lambda yy, s, t: roc_auc(yy, s) - roc_auc(yy, t), y, values, reference, groups=docs
            )
    return rows


def means_lines(sources: dict[str, dict[str, Any]], scorers: Sequence[str]) -> list[str]:
    """Markdown lines: each scorer's mean held-out ROC-AUC / BA at 0.5 over ``sources``
    (per source, each scorer's ``{"auc": ..., "ba": ...}`` statistics under ``"scorers"``)."""
    lines = ["", "Means over the sources (ROC-AUC / BA at 0.5):", ""]
    for name in scorers:
        auc = np.mean([r["scorers"][name]["auc"]["value"] for r in sources.values()])
        ba = np.mean([r["scorers"][name]["ba"]["value"] for r in sources.values()])
        lines.append(f"- {name}: {auc:.3f} / {ba:.3f}")
    return lines


def rule_line(by_source: dict[str, dict[str, Any]], old: str, new: str, feature: str) -> str:
    """Whether scorer ``new`` (the head with ``feature``) met the rule against ``old`` (the head
    without it): higher mean BA and mean ROC-AUC over the held-out sources, with ROC-AUC higher
    on at least 4 of them; one sentence with the figures.

    Args:
        by_source: Per held-out source, each scorer's ``{"ba": ..., "auc": ...}`` statistics.
        old: The scorer without the feature.
        new: The scorer with it.
        feature: The feature's name, as the sentence says it.
    """

    def mean(name: str, statistic: str) -> float:
        return float(np.mean([r[name][statistic]["value"] for r in by_source.values()]))

    higher = sum(r[new]["auc"]["value"] > r[old]["auc"]["value"] for r in by_source.values())
    met = mean(new, "ba") > mean(old, "ba") and mean(new, "auc") > mean(old, "auc") and higher >= 4
    return (
        f"Result: {'met' if met else 'not met'}. Mean BA {mean(new, 'ba'):.3f} with {feature} against {mean(old, 'ba'):.3f}, "
        f"mean ROC-AUC {mean(new, 'auc'):.3f} against {mean(old, 'auc'):.3f}, ROC-AUC higher on {higher} of {len(by_source)} sources."
    )


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Claim support: does the judge's surprise at a claim's words generalise?",
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M; seed {document['seed']}; "
        f"units per source: {document['units']}. Generated by `benchmarks/claim_surprise.py`.",
        "",
        "Commands:",
        "",
        f"    python benchmarks/claim_surprise.py collect --n {document['n']} --seed {document['seed']}",
        "    python benchmarks/claim_surprise.py report",
        "",
        "Surprise: the local judge reads each statement before answering; for each token after the first it notes the gap "
        "between the log-probability of the model's top choice and of the statement's token, and keeps the largest. Heads "
        f"are fitted on the other five sources (sentence labels, class- and source-balanced, C = {C} fixed beforehand); a "
        "unit scores the minimum over its sentences. Intervals: 1,000 bootstrap resamples of documents.",
        "",
    ]
    names = [*FEATURE_SETS, "raw P(yes)"]
    lines += ["| held out | n | " + " | ".join(f"{n}: BA at 0.5 / ROC-AUC" for n in names) + " |"]
    lines += ["|---|---:|" + "---|" * len(names)]
    for held, by_name in document["loso"].items():
        n = next(iter(by_name.values()))["n"]
        lines.append(f"| {held} | {n} | " + " | ".join(f"{cell(by_name[x]['ba'])} / {cell(by_name[x]['auc'])}" for x in names) + " |")
    means = {
        x: (
            np.mean([r[x]["ba"]["value"] for r in document["loso"].values()]),
            np.mean([r[x]["auc"]["value"] for r in document["loso"].values()]),
        )
        for x in names
    }
    lines.append("| mean | | " + " | ".join(f"{means[x][0]:.3f} / {means[x][1]:.3f}" for x in names) + " |")
    lines += [
        "",
        f"Surprise per sentence, mean (supported / unsupported sentences): {document['surprise_means']}. "
        f"Units not judged (collection stopped; sources are interleaved, so each lost about the same): "
        f"{document['unjudged_units']}.",
        "",
        "The rule, set when 81 units were in: surprise goes into the product only if P+L-+S beats the shipped head on "
        "mean held-out BA and mean ROC-AUC, with ROC-AUC higher on at least 4 of the 6 sources.",
        "",
        verdict_line(document["loso"]),
        "",
        "The cached verdicts of this run were collected by an earlier form of the script that read surprise in the "
        "verdict's own forward pass; on the 3 sentences checked, this form gives the same surprise and P(yes) equal to "
        "4 decimals.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--n", type=int, default=40, help="units drawn per labelled source")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    units = interleave([labelled_units(s, args.n, args.seed, args.data_dir) for s in SOURCES])
    if args.action == "collect":
        collect(units, args.threads, args.cache)
        return
    table = sentence_table(units, args.cache)
    judged = set(table.unit)
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "seed": args.seed,
        "n": args.n,
        "units": {s: int(table[table.source == s].unit.nunique()) for s in SOURCES},
        "unjudged_units": sum(1 for u in units if u["unit"] not in judged),
        "loso": loso(table),
        "surprise_means": {
            "supported": round(float(table[table.label == 1].surprise.mean()), 2),
            "unsupported": round(float(table[table.label == 0].surprise.mean()), 2),
        },
    }
    out = HERE / "results" / "claim_surprise"
    out.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(document), encoding="utf-8")
    print(markdown(document))


if __name__ == "__main__":
    main()
