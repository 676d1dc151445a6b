"""Does a probe of the local judge's hidden state tell supported claims apart better than
its yes/no, on sources the probe was not fitted on? (Measured: not on a fresh draw. The
product does not use it.)

The packaged 1.5B judge's P(yes) is one direction of its last hidden state (the "Yes" row
minus the "No" row of the output layer). Work on larger models finds that a linear probe
of the hidden state separates true from false statements better than the model's own
answer (Azaria and Mitchell, 2023, "The internal state of an LLM knows when it's lying";
Marks and Tegmark, 2023). Here the probe reads the final normalised hidden state (the
input of the output layer, 1,536 numbers) at the position where the judge answers the
product's ``supported`` question: after the verdict, the prompt's last token is read
again with embeddings switched on for the context, and llama.cpp returns the state beside
the logits (:class:`HiddenStateJudge`). On the first three units, the P(yes) of the
judge that reads the state is checked against a plain ``LocalJudge``'s.

For every sentence of the seeded units of ``claim_data.py`` (QAGS cnndm and xsum,
SummEdits news, podcast, samsum, sales_email), with its evidence as faithfulness picks it
(the 3 closest premise sentences), the hidden state and P(yes) are appended to a JSONL
file outside the repository (resumable).

Scorers, every one fitted leave one source out (on the other five sources' sentences with
a known label, class- and source-balanced logistic regression) and measured on the sixth;
a unit scores the minimum over its sentences, in log-odds, BA decides at 0:
- ``LOSO head``: the shipped head's features (logit P(yes), any novel number, novel
  names, negation added), C = 3.0 as the shipped configuration;
- ``probe``: the hidden state, standardised and reduced by PCA fitted on the training
  sentences, then logistic regression;
- ``head + probe``: the head's features and the PCA components together.
The probe's number of components (8, 32) and C (0.03, 0.3) are chosen for each held-out
source by leave one source out *within* its five training sources (mean of BA at 0 and
ROC-AUC), so nothing is tuned on the source reported.

The rule, set before any figure was seen: the probe goes into the product only if
``head + probe`` beats ``LOSO head`` on mean held-out BA at 0.5 and mean ROC-AUC, with
ROC-AUC higher on at least 4 of the 6 sources. Seed 1 met it by a hair (BA +0.002, every
paired interval reaching 0) after a partial collection had not, so, set before the second
draw was judged, the same rule must also hold on a fresh draw (``confirm``): each scorer
fitted on seed 1's other five sources as above, measured on the held-out source's seed-2
units that seed 1 did not draw.

Usage (one model job at a time):
    python benchmarks/claim_probe.py collect --n 40 --seed 1 --work DIR
    python benchmarks/claim_probe.py report --n 40 --seed 1 --work DIR [--out benchmarks/results]
    python benchmarks/claim_probe.py collect --n 40 --seed 2 --work DIR
    python benchmarks/claim_probe.py confirm --n 40 --seed 1 --confirm-seed 2 --work DIR [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import time
from datetime import datetime, timezone
from itertools import product
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import pandas as pd
from claim_contrast import cell, key_of
from claim_data import DEFAULT_DATA_DIR, SOURCES, interleave, labelled_units
from claim_prior import HEAD_FEATURES, C, judged_sentences, progress, sentence_row, write_unit
from claim_support_eval import balanced_weights, fit
from claim_surprise import held_out_statistics, means_lines, rule_line
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from ragmeter.bench.report import git_commit
from ragmeter.data.text import without_citations
from ragmeter.judges import Judges
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.windowing import premise_verdicts
from ragmeter.metrics.claim_support import derived_features, lexical_evidence
from ragmeter.metrics.evidence import closest_evidence
from ragmeter.results.stats import balanced_accuracy, roc_auc

#: The probe's settings searched within each held-out source's five training sources.
COMPONENTS = (8, 32)
PROBE_C = (0.03, 0.3)
SCORERS = ("LOSO head", "probe", "head + probe")


class HiddenStateJudge(LocalJudge):
    """The packaged local judge, also keeping the last hidden state of each verdict.

    After the product's pass has read the verdict's logits, the prompt's last token is
    read once more with embeddings switched on for the context (``llama_set_embeddings``):
    with no pooling, the embedding of an output position is the normalised hidden state the
    output layer reads. Only that token is re-read (embeddings on for the whole prompt
    would make llama.cpp compute the logits of every token). :attr:`states` holds one per
    verdict, in order.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.states: list[np.ndarray] = []

    def _next_token_logits(self) -> np.ndarray:
        logits = super()._next_token_logits()
        llm, ctx = self._llm, self._llm._ctx.ctx
        last = int(llm.input_ids[llm.n_tokens - 1])
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens - 1, -1)
        llama_cpp.llama_set_embeddings(ctx, True)
        try:
            llm._batch.set_batch(batch=[last], n_past=llm.n_tokens - 1, logits_all=True)
            llm._ctx.decode(llm._batch)
            width = llama_cpp.llama_model_n_embd(llm._model.model)
            state = np.ctypeslib.as_array(llama_cpp.llama_get_embeddings_ith(ctx, 0), shape=(width,)).astype(np.float32)
        finally:
            llama_cpp.llama_set_embeddings(ctx, False)
        self.states.append(state)
        return logits


def encode(state: np.ndarray) -> str:
    return base64.b64encode(state.astype(np.float16).tobytes()).decode("ascii")


def decode(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float64)


async def judge_unit(judges: Judges, judge: HiddenStateJudge, unit: dict[str, Any]) -> list[dict[str, Any]]:
    """Each sentence of the unit judged against its evidence, with the verdict's hidden state."""
    stated = [without_citations(c) or c for c in unit["claims"]]
    focused = await closest_evidence(judges, unit["premise"], stated, judge.evidence_sentences)
    records = []
    for index, claim in enumerate(stated):
        evidence = focused[index][0] if focused else unit["premise"]
        judge.states.clear()
        verdicts, strategy = await premise_verdicts(judge, "supported", evidence, [claim], unit["lang"])
        if len(judge.states) != 1:
            raise RuntimeError(f"expected one hidden state for one verdict, got {len(judge.states)} ({strategy})")
        records.append({"evidence": evidence, "strategy": strategy, "p": verdicts[0].p_yes, "state": encode(judge.states[0])})
    return records


def collect(units: list[dict[str, Any]], path: Path) -> None:
    done = {r["key"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())} if path.exists() else set()
    todo = [u for u in units if any(key_of(u, c) not in done for c in u["claims"])]
    print(f"{len(todo)} units to judge", flush=True)
    judge = HiddenStateJudge()
    judges = Judges(llm=judge)
    plain = Judges(llm=LocalJudge())
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        for n, unit in enumerate(todo, start=1):
            began = time.perf_counter()
            records = asyncio.run(judge_unit(judges, judge, unit))
            seconds = round((time.perf_counter() - began) / len(records), 2)
            if n <= 3:  # the hidden state must not change the verdict: check against the plain judge
                stated = [without_citations(c) or c for c in unit["claims"]]
                for claim, record in zip(stated, records, strict=True):
                    reference, _ = asyncio.run(
                        premise_verdicts(plain.require_llm(), "supported", record["evidence"], [claim], unit["lang"])
                    )
                    if abs(reference[0].p_yes - record["p"]) > 1e-3:
                        raise RuntimeError(f"P(yes) {record['p']:.4f} with embeddings on, {reference[0].p_yes:.4f} without")
            write_unit(out, unit, records, seconds)
            progress(n, len(todo), started)


def sentence_table(units_by_source: dict[str, list[dict[str, Any]]], records: dict[str, dict[str, Any]]) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per judged sentence of a fully judged unit (head features), and their hidden states."""
    rows, states = [], []
    for source, unit, claim, label, r in judged_sentences(units_by_source, records):
        features = derived_features(r["p"], lexical_evidence(claim, unit["premise"], r["evidence"]).as_dict())
        rows.append({**sentence_row(source, unit, claim, label), **{name: features[name] for name in HEAD_FEATURES}})
        states.append(decode(r["state"]))
    return pd.DataFrame(rows), np.array(states)


class Probe:
    """Standardise, PCA, then class- and source-balanced logistic regression, optionally
    with the head's features beside the components."""

    def __init__(self, components: int, c: float, with_head: bool):
        self.components, self.c, self.with_head = components, c, with_head

    def _raw(self, rows: pd.DataFrame, states: np.ndarray) -> np.ndarray:
        reduced = self.pca.transform((states - self.mean) / self.scale)
        if self.with_head:
            reduced = np.hstack([reduced, rows[HEAD_FEATURES].to_numpy(dtype=float)])
        return reduced

    def fit(self, rows: pd.DataFrame, states: np.ndarray) -> Probe:
        self.mean, self.scale = states.mean(axis=0), states.std(axis=0) + 1e-6
        self.pca = PCA(n_components=self.components, random_state=0).fit((states - self.mean) / self.scale)
        raw = self._raw(rows, states)
        self.centre, self.spread = raw.mean(axis=0), raw.std(axis=0) + 1e-9
        self.model = LogisticRegression(C=self.c, max_iter=5000)
        self.model.fit((raw - self.centre) / self.spread, rows.label.astype(int).to_numpy(), sample_weight=balanced_weights(rows))
        return self

    def log_odds(self, rows: pd.DataFrame, states: np.ndarray) -> np.ndarray:
        return self.model.decision_function((self._raw(rows, states) - self.centre) / self.spread)


def criterion(rows: pd.DataFrame, scores: np.ndarray) -> float:
    """Mean of BA at 0 and ROC-AUC over units (each the minimum of its sentences)."""
    units = rows.assign(s=scores).groupby("unit").agg(y=("unit_label", "first"), s=("s", "min"))
    y, s = units.y.to_numpy(int), units.s.to_numpy(float)
    return (balanced_accuracy(y, (s >= 0).astype(int)) + roc_auc(y, s)) / 2


def choose(rows: pd.DataFrame, states: np.ndarray, with_head: bool) -> tuple[int, float]:
    """The probe settings with the best mean inner leave-one-source-out criterion."""
    best, chosen = -1.0, (COMPONENTS[0], PROBE_C[0])
    for components, c in product(COMPONENTS, PROBE_C):
        values = []
        for inner in rows.source.unique():
            train = (rows.source != inner).to_numpy() & rows.label.notna().to_numpy()
            test = (rows.source == inner).to_numpy()
            probe = Probe(components, c, with_head).fit(rows[train], states[train])
            values.append(criterion(rows[test], probe.log_odds(rows[test], states[test])))
        if np.mean(values) > best:
            best, chosen = float(np.mean(values)), (components, c)
    return chosen


def loso(
    fitting: tuple[pd.DataFrame, np.ndarray], measured: tuple[pd.DataFrame, np.ndarray]
) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Every sentence of ``measured`` scored by each scorer fitted on the *other* sources'
    sentences of ``fitting`` (the same draw, or an earlier one), and the probe settings
    chosen per held-out source."""
    rows, states = fitting
    table, table_states = measured[0].copy(), measured[1]
    for name in SCORERS:
        table[name] = np.nan
    chosen: dict[str, dict[str, Any]] = {}
    for held in table.source.unique():
        train = (rows.source != held).to_numpy() & rows.label.notna().to_numpy()
        test = (table.source == held).to_numpy()
        w, b = fit(rows[train], HEAD_FEATURES, C)
        table.loc[test, "LOSO head"] = table.loc[test, HEAD_FEATURES].to_numpy(dtype=float) @ w + b
        chosen[held] = {}
        for name, with_head in (("probe", False), ("head + probe", True)):
            components, c = choose(rows[train], states[train], with_head)
            probe = Probe(components, c, with_head).fit(rows[train], states[train])
            table.loc[test, name] = probe.log_odds(table[test], table_states[test])
            chosen[held][name] = {"components": components, "C": c}
    return table, chosen


def report(fitting: tuple[pd.DataFrame, np.ndarray], measured: tuple[pd.DataFrame, np.ndarray]) -> dict[str, Any]:
    table, chosen = loso(fitting, measured)
    units = table.groupby(["source", "unit", "doc", "unit_label"], sort=False)[list(SCORERS)].min().reset_index()
    out: dict[str, Any] = {}
    for source, group in units.groupby("source", sort=False):
        y = group.unit_label.to_numpy(int)
        rows = held_out_statistics(group, SCORERS)
        out[str(source)] = {
            "units": len(group),
            "unsupported": int((y == 0).sum()),
            "sentences": int((table.source == source).sum()),
            "chosen": chosen[source],
            "scorers": rows,
        }
    return out


def markdown(document: dict[str, Any]) -> str:
    n, seed, confirm = document["n"], document["seed"], document["confirm_seed"]
    if confirm is None:
        drawn = f"{n} units per source drawn with seed {seed}"
        commands = [f"    python benchmarks/claim_probe.py report --n {n} --seed {seed} --work DIR"]
        measured = "each scorer is fitted on the other five sources' labelled sentences"
    else:
        drawn = f"fitted on {n} units per source drawn with seed {seed}, measured on the units of a fresh draw (seed {confirm}) not in it"
        commands = [
            f"    python benchmarks/claim_probe.py collect --n {n} --seed {confirm} --work DIR",
            f"    python benchmarks/claim_probe.py confirm --n {n} --seed {seed} --confirm-seed {confirm} --work DIR",
        ]
        measured = f"each scorer is fitted on the other five sources' labelled sentences of the seed-{seed} draw"
    lines = [
        "# Claim support: a probe of the local judge's hidden state" + (" (confirmation on a fresh draw)" if confirm is not None else ""),
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M; {drawn}. "
        "Generated by `benchmarks/claim_probe.py` (the method and the rule: its docstring).",
        "",
        "Commands:",
        "",
        f"    python benchmarks/claim_probe.py collect --n {n} --seed {seed} --work DIR",
        *commands,
        "",
        f"Every row is held out: {measured}; the probe's "
        "components and C are chosen by leave one source out within those five. Unit score: the minimum over its "
        "sentences, in log-odds; BA decides at 0. Intervals: 1,000 bootstrap resamples of documents; the gain is paired, "
        "minus `LOSO head`.",
        "",
        "| source | units (unsupported) | scorer | chosen (components, C) | ROC-AUC | AUC gain | BA at 0.5 |",
        "|---|---|---|---|---|---|---|",
    ]
    for source, row in document["sources"].items():
        for name, stats in row["scorers"].items():
            setting = row["chosen"].get(name)
            chosen = f"{setting['components']}, {setting['C']}" if setting else "–"
            gain = cell(stats["auc_gain"]) if "auc_gain" in stats else "–"
            lines.append(
                f"| {source} | {row['units']} ({row['unsupported']}) | {name} | {chosen} | {cell(stats['auc'])} | {gain} | {cell(stats['ba'])} |"
            )
    lines += [
        *means_lines(document["sources"], SCORERS),
        "",
        rule_line({s: r["scorers"] for s, r in document["sources"].items()}, "LOSO head", "head + probe", "the probe"),
        "",
        f"Seconds per sentence (the verdict, the hidden state's re-read, and on three units the plain judge's check): {document['seconds_per_sentence']}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report", "confirm"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--n", type=int, default=40, help="units drawn per source")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, required=True, help="folder for the collection (outside the repository)")
    parser.add_argument("--confirm-seed", type=int, default=2, help="confirm: the fresh draw measured (fitted on --seed's)")
    parser.add_argument("--out", type=Path, default=None, help="write claim_probe[_confirm].{json,md} here")
    args = parser.parse_args()
    by_source = {s: labelled_units(s, args.n, args.seed, args.data_dir) for s in SOURCES}
    path = args.work / f"claim_probe_n{args.n}_seed{args.seed}.jsonl"
    if args.action == "collect":
        args.work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        collect(interleave(list(by_source.values())), path)
        print(f"done in {time.perf_counter() - started:.0f} s")
        return
    records = {r["key"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    fitting = sentence_table(by_source, records)
    measured, name = fitting, "claim_probe"
    if args.action == "confirm":
        seen = {u["unit"] for units in by_source.values() for u in units}
        fresh = {s: [u for u in labelled_units(s, args.n, args.confirm_seed, args.data_dir) if u["unit"] not in seen] for s in SOURCES}
        confirm_path = args.work / f"claim_probe_n{args.n}_seed{args.confirm_seed}.jsonl"
        records = {r["key"]: r for r in map(json.loads, confirm_path.read_text(encoding="utf-8").splitlines())}
        measured, name = sentence_table(fresh, records), "claim_probe_confirm"
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "n": args.n,
        "seed": args.seed,
        "confirm_seed": args.confirm_seed if args.action == "confirm" else None,
        "sources": report(fitting, measured),
        "seconds_per_sentence": round(float(np.mean([r["seconds"] for r in records.values()])), 2),
    }
    text = markdown(document)
    print(text)
    if args.out:
        (args.out / f"{name}.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (args.out / f"{name}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
