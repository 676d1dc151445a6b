"""Which claim-support scorer generalises to sources it was not fitted on?

Leave-one-source-out over the labelled sources (QAGS cnndm and xsum, SummEdits news,
podcast, samsum, sales_email): every scorer that needs fitting is fitted on the other
sources (plus, where the configuration says so, the synthetic ClapNQ claims, which are only
ever training data) and measured on the held-out one. The recommended scorer's feature set,
regularisation and use of synthetic data are chosen by an inner leave-one-source-out on the
training sources only, so nothing is tuned on the source it is reported on. Two coarser
hold-outs answer the issue's question directly: fitted without any QAGS, measured on QAGS;
fitted without any SummEdits, measured on SummEdits.

Scores are per sentence (the faithfulness metric judges sentences); a unit (a QAGS
sentence, a SummEdits summary) gets the minimum over its sentences unless said otherwise.
The current metric, the share of sentences with P(yes) >= 0.5, is the first baseline.
Balanced accuracy at 0.5 and ROC-AUC come with 95% bootstrap intervals resampling
documents. Also: seconds per sentence of each judge question, the sanity cases, synthetic
sets (labelled as such), and the response-level aggregation study.

Usage:
    python benchmarks/claim_support_eval.py --n 150 --seed 0 [--write-head]
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from claim_data import DEFAULT_DATA_DIR, SOURCES, labelled_units
from claim_sanity import sanity_units
from claim_table import load_units, sentence_table
from sklearn.linear_model import LogisticRegression

from ragmeter.bench.report import git_commit
from ragmeter.judges.local_model import packaged_calibration, recalibrate
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

HERE = Path(__file__).resolve().parent
SYNTHETIC = Path("/work/trust_cache")
LEXICAL = ["any_novel_numbers", "novel_names", "novel_word_share", "negation_added"]
FEATURE_SETS = {
    "P": ["logit_p_yes"],
    "P+E": ["logit_p_yes", "max_cosine"],
    "P+E+L": ["logit_p_yes", "max_cosine", *LEXICAL],
    # Only the evidence whose direction is plain (more unsupported detail, less support):
    # a summary edit is a near copy, so on these sources a high cosine and few novel words
    # go with unsupported claims, a direction that would not carry over to answers.
    "P+L-": ["logit_p_yes", "any_novel_numbers", "novel_names", "negation_added"],
    "P+E+L+len": ["logit_p_yes", "max_cosine", *LEXICAL, "log1p_claim_tokens"],
    "P+Q": ["logit_p_yes", "logit_contradict", "logit_novel"],
    "P+Q+E+L+len": ["logit_p_yes", "logit_contradict", "logit_novel", "max_cosine", *LEXICAL, "log1p_claim_tokens"],
    "E+L+len (no LLM)": ["max_cosine", "mean_top_cosine", *LEXICAL, "log1p_claim_tokens"],
}
#: Baseline only, never selected: the USE cosine alone.
BASELINE_SETS = {"E": ["max_cosine"]}
C_GRID = (0.03, 0.3, 3.0)


@dataclass(frozen=True)
class Config:
    """A fitted scorer's recipe: features, inverse regularisation, synthetic data or not."""

    features: str
    c: float
    synthetic: bool

    def __str__(self) -> str:
        return f"{self.features}, C={self.c}{', +synthetic' if self.synthetic else ''}"


CONFIGS = [Config(f, c, s) for f, c, s in itertools.product(FEATURE_SETS, C_GRID, (False, True))]


def features_of(config: Config) -> list[str]:
    return FEATURE_SETS.get(config.features) or BASELINE_SETS[config.features]


# ---- fitting -------------------------------------------------------------------------------


def training_rows(table: pd.DataFrame, sources: list[str], synthetic: bool) -> pd.DataFrame:
    """Sentences with a known label from ``sources`` (and the synthetic ClapNQ set)."""
    chosen = list(sources) + (["synthetic-clapnq"] if synthetic else [])
    return table[table.source.isin(chosen) & table.label.notna()]


def balanced_weights(rows: pd.DataFrame) -> np.ndarray:
    """Each source weighs the same, and within a source each class weighs half."""
    counts = rows.groupby(["source", "label"]).size()
    n_sources = rows.source.nunique()
    return np.array([1.0 / (2 * counts[(s, y)] * n_sources) for s, y in zip(rows.source, rows.label, strict=True)]) * len(rows)


def fit(rows: pd.DataFrame, features: list[str], c: float) -> tuple[np.ndarray, float]:
    """Class- and source-balanced logistic regression; raw-scale coefficients and intercept."""
    x = rows[features].to_numpy(dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=c, max_iter=2000)
    model.fit((x - mean) / scale, rows.label.astype(int).to_numpy(), sample_weight=balanced_weights(rows))
    w = model.coef_[0] / scale
    return w, float(model.intercept_[0] - (model.coef_[0] * mean / scale).sum())


def predict(rows: pd.DataFrame, features: list[str], w: np.ndarray, b: float) -> np.ndarray:
    z = rows[features].to_numpy(dtype=float) @ w + b
    return 1 / (1 + np.exp(-z))


def fitted_scores(table: pd.DataFrame, train_sources: list[str], test: pd.DataFrame, config: Config) -> np.ndarray:
    features = features_of(config)
    w, b = fit(training_rows(table, train_sources, config.synthetic), features, config.c)
    return predict(test, features, w, b)


# ---- units and statistics ---------------------------------------------------------------------


def unit_scores(rows: pd.DataFrame, p: np.ndarray, how: str = "min") -> pd.DataFrame:
    """One row per unit: label, document and the aggregated sentence scores."""
    frame = rows[["unit", "doc", "unit_label"]].assign(p=p)
    aggregate = {
        "min": lambda s: s.min(),
        "product": lambda s: float(np.prod(s)),
        "mean": lambda s: s.mean(),
        "mean_lowest_2": lambda s: np.sort(s.to_numpy())[:2].mean(),
        "share_at_0.5": lambda s: (s >= 0.5).mean(),
    }[how]
    return frame.groupby(["unit", "doc", "unit_label"], sort=False).p.agg(aggregate).reset_index()


def measure(units: pd.DataFrame, threshold: float = 0.5) -> dict[str, dict]:
    """BA at ``threshold`` and ROC-AUC with intervals resampling documents."""
    y, s, groups = units.unit_label.to_numpy(int), units.p.to_numpy(float), units.doc.to_numpy()
    return {
        "n": len(units),
        "ba": bootstrap_statistic(balanced_accuracy, y, (s >= threshold).astype(int), groups=groups),
        "auc": bootstrap_statistic(roc_auc, y, s, groups=groups),
    }


def quick(units: pd.DataFrame) -> float:
    """Selection criterion: mean of BA at 0.5 and ROC-AUC (no intervals)."""
    y, s = units.unit_label.to_numpy(int), units.p.to_numpy(float)
    return (balanced_accuracy(y, (s >= 0.5).astype(int)) + roc_auc(y, s)) / 2


def select(table: pd.DataFrame, sources: list[str], configs: list[Config] = CONFIGS) -> tuple[Config, dict[str, float]]:
    """The config with the best mean inner leave-one-source-out criterion over ``sources``."""
    results = {}
    for config in configs:
        values = []
        for held in sources:
            test = table[table.source == held]
            p = fitted_scores(table, [s for s in sources if s != held], test, config)
            values.append(quick(unit_scores(test, p)))
        results[str(config)] = float(np.mean(values))
    best = max(configs, key=lambda c: results[str(c)])
    return best, results


# ---- the comparisons ------------------------------------------------------------------------


def baselines(table: pd.DataFrame, held: str, train: list[str]) -> dict[str, pd.DataFrame]:
    """Unit scores of the baselines on source ``held`` (fitted ones fitted on ``train``)."""
    test = table[table.source == held]
    old = packaged_calibration()["supported/en"]
    return {
        "current: share of sentences with P(yes) >= 0.5": unit_scores(test, test.p_yes.to_numpy(), "share_at_0.5"),
        "raw P(yes), min over sentences": unit_scores(test, test.p_yes.to_numpy()),
        "old QAGS calibration (fitted on a quarter of QAGS)": unit_scores(
            test, np.array([recalibrate(p, old["slope"], old["intercept"]) for p in test.p_yes])
        ),
        "embedding max-cosine, Platt-fitted on the other sources": unit_scores(
            test, fitted_scores(table, train, test, Config("E", 3.0, False))
        ),
        "P(yes), Platt-fitted on the other sources": unit_scores(test, fitted_scores(table, train, test, Config("P", 3.0, False))),
    }


def holdout(table: pd.DataFrame, held: list[str], train: list[str]) -> dict:
    """Baselines, the inner-LOSO-selected head, and every fixed feature set, on ``held``."""
    config, inner = select(table, train)
    out = {"train": train, "selected": str(config), "inner": inner, "sources": {}}
    for source in held:
        test = table[table.source == source]
        scores = baselines(table, source, train)
        scores[f"head selected by inner LOSO ({config})"] = unit_scores(test, fitted_scores(table, train, test, config))
        for name in FEATURE_SETS:
            for synthetic in (False, True):
                fixed = Config(name, 0.3, synthetic)
                scores[f"fixed: {fixed}"] = unit_scores(test, fitted_scores(table, train, test, fixed))
        out["sources"][source] = {name: measure(units) for name, units in scores.items()}
    return out


def aggregation_study(table: pd.DataFrame, sources: list[str]) -> dict:
    """Response-level aggregators of out-of-fold calibrated sentence probabilities.

    SummEdits summaries are natural multi-sentence responses; for QAGS-cnndm a response is
    simulated by joining the claims of one article's summary (supported when all are)."""
    out = {}
    for held in sources:
        train = [s for s in sources if s != held]
        config, _ = select(table, train)
        test = table[table.source == held].copy()
        p = fitted_scores(table, train, test, config)
        if held == "qags-cnndm":
            test["unit"] = test.unit.str.rsplit("-", n=1).str[0]
            test["unit_label"] = test.groupby("unit").unit_label.transform("min")
        elif held == "qags-xsum":
            continue  # one sentence per summary: nothing to aggregate
        out[held] = {how: measure(unit_scores(test, p, how)) for how in ("min", "product", "mean", "mean_lowest_2", "share_at_0.5")}
        out[held]["multi_sentence_units"] = int((test.groupby("unit").size() > 1).sum())
    return out


def shipping_head(table: pd.DataFrame) -> dict:
    """The head to ship: config chosen by LOSO over all labelled sources, fitted on all."""
    config, inner = select(table, list(SOURCES))
    features = FEATURE_SETS[config.features]
    rows = training_rows(table, list(SOURCES), config.synthetic)
    w, b = fit(rows, features, config.c)
    return {
        "config": str(config),
        "inner_loso_criterion": inner[str(config)],
        "head": {"coefficients": {f: round(float(v), 6) for f, v in zip(features, w, strict=True)}, "intercept": round(b, 6)},
        "fitted_on": {s: int((rows.source == s).sum()) for s in sorted(rows.source.unique())},
    }


def sanity_and_synthetic(table: pd.DataFrame, head: dict) -> dict:
    """The shipped head on the hand-written cases and on the knowledge-base synthetic sets."""
    coefficients = head["head"]["coefficients"]
    features, w, b = list(coefficients), np.array(list(coefficients.values())), head["head"]["intercept"]
    out: dict = {"cases": [], "sets": {}}
    for source in ("sanity-en", "sanity-zh", "synthetic-kb-en", "synthetic-kb-zh", "synthetic-clapnq"):
        rows = table[table.source == source]
        if rows.empty:
            continue
        p = predict(rows, features, w, b)
        if source.startswith("sanity"):
            out["cases"] += [
                {"source": source, "claim": s, "label": int(y), "p_yes": round(float(q), 4), "p_supported": round(float(v), 4)}
                for s, y, q, v in zip(rows.sentence, rows.unit_label, rows.p_yes, p, strict=True)
            ]
        units = unit_scores(rows, p)
        raw = unit_scores(rows, rows.p_yes.to_numpy(), "share_at_0.5")
        out["sets"][source] = {"head": measure(units), "current": measure(raw)}
    return out


def timing(table: pd.DataFrame) -> dict:
    """Mean seconds (and evaluated tokens) per sentence of each judge question (one thread)."""
    labelled = table[table.source.isin(SOURCES)]
    return {
        "supported_seconds": float(labelled.seconds_supported.mean()),
        "supported_tokens_evaluated": float(labelled.tokens_supported.mean()),
        "contradict_extra_seconds": float(labelled.seconds_contradict.mean()),
        "novel_extra_seconds": float(labelled.seconds_novel.mean()),
        "lexical_features_seconds": float(labelled.seconds_lexical.mean()),
        "sentences": len(labelled),
    }


# ---- report -----------------------------------------------------------------------------------


def cell(statistic: dict) -> str:
    if statistic["ci_low"] is None:
        return f"{statistic['value']:.3f}"
    return f"{statistic['value']:.3f} [{statistic['ci_low']:.2f}, {statistic['ci_high']:.2f}]"


def source_table(results: dict[str, dict], fixed: bool) -> list[str]:
    lines = ["| scorer | n | BA at 0.5 [95% CI] | ROC-AUC [95% CI] |", "|---|---:|---|---|"]
    for name, r in results.items():
        if name.startswith("fixed: ") == fixed:
            lines.append(f"| {name} | {r['n']} | {cell(r['ba'])} | {cell(r['auc'])} |")
    return lines


def fixed_summary(loso: dict) -> list[str]:
    """Mean over held-out sources of each fixed config's BA and AUC (for information)."""
    names = [n for n in next(iter(loso.values()))["sources"][next(iter(next(iter(loso.values()))["sources"]))] if n.startswith("fixed: ")]
    lines = ["| fixed config (C = 0.3) | " + " | ".join(loso) + " | mean BA | mean AUC |", "|---|" + "---|" * (len(loso) + 2)]
    for name in names:
        ba = [fold["sources"][s][name]["ba"]["value"] for s, fold in loso.items()]
        auc = [fold["sources"][s][name]["auc"]["value"] for s, fold in loso.items()]
        row = " | ".join(f"{b:.3f} / {a:.3f}" for b, a in zip(ba, auc, strict=True))
        lines.append(f"| {name[7:]} | {row} | {np.mean(ba):.3f} | {np.mean(auc):.3f} |")
    return lines


def markdown(document: dict) -> str:
    lines = [
        "# Claim support: a calibrated head over the local judge, measured on sources it was not fitted on",
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M, one thread; seed {document['seed']};"
        f" units per source: {document['units_per_source']}. Generated by `benchmarks/claim_support_eval.py`.",
        "",
        "Commands:",
        "",
        *[f"    {c}" for c in document["commands"]],
        "",
        "Unit = one QAGS sentence or one SummEdits summary; a summary's score is the minimum over its sentences"
        " (the current metric: share of sentences with P(yes) >= 0.5). Intervals: 1,000 bootstrap resamples of documents.",
        "",
        "## Leave-one-source-out",
        "",
    ]
    for source, fold in document["loso"].items():
        lines += [f"### Held out: {source} (fitted on {', '.join(fold['train'])})", "", *source_table(fold["sources"][source], False), ""]
    lines += [
        "### Fixed configurations (BA / AUC per held-out source; not selected on the held-out source)",
        "",
        *fixed_summary(document["loso"]),
        "",
    ]
    for name, group in document["groups"].items():
        lines += [f"## {name}", "", f"Selected by inner leave-one-source-out on {', '.join(group['train'])}: {group['selected']}", ""]
        for source, results in group["sources"].items():
            lines += [f"### {source}", "", *source_table(results, False), ""]
    lines += [
        "## Response-level aggregation (out-of-fold calibrated sentence probabilities)",
        "",
        "| held out | multi-sentence units | aggregator | n | BA at 0.5 | ROC-AUC |",
        "|---|---:|---|---:|---|---|",
    ]
    for source, results in document["aggregation"].items():
        for how, r in results.items():
            if how != "multi_sentence_units":
                lines.append(f"| {source} | {results['multi_sentence_units']} | {how} | {r['n']} | {cell(r['ba'])} | {cell(r['auc'])} |")
    lines += ["", "## Sanity cases and synthetic sets (shipping head; synthetic sets are generated, not human-labelled)", ""]
    lines += ["| set | n | current BA | current AUC | head BA | head AUC |", "|---|---:|---|---|---|---|"]
    for source, r in document["sanity"]["sets"].items():
        lines.append(
            f"| {source} | {r['head']['n']} | {cell(r['current']['ba'])} | {cell(r['current']['auc'])} | {cell(r['head']['ba'])} | {cell(r['head']['auc'])} |"
        )
    lines += ["", "| set | label | P(yes) | P(supported) | claim |", "|---|---:|---:|---:|---|"]
    lines += [
        f"| {c['source']} | {c['label']} | {c['p_yes']:.3f} | {c['p_supported']:.3f} | {c['claim']} |" for c in document["sanity"]["cases"]
    ]
    t = document["timing"]
    lines += [
        "", "## Seconds per judged sentence (one thread, shared 2-core machine)", "",
        f"- product question (supported, k = 3 closest sentences): {t['supported_seconds']:.2f} s, {t['supported_tokens_evaluated']:.0f} tokens evaluated",
        f"- extra question after it (contradict): +{t['contradict_extra_seconds']:.2f} s; (novel detail): +{t['novel_extra_seconds']:.2f} s",
        f"- lexical features: {1000 * t['lexical_features_seconds']:.1f} ms; max cosine: free (closest_evidence computes it)",
        "", "## Shipping head", "", "```json", json.dumps(document["shipping"], indent=1), "```", "",
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "claim_support")
    parser.add_argument("--write-head", action="store_true", help="write resources/claim_support_head.json")
    args = parser.parse_args()
    units = [u for s in SOURCES for u in labelled_units(s, args.n, args.seed, args.data_dir)]
    synthetic = [SYNTHETIC / f"{n}.jsonl" for n in ("synthetic-clapnq", "synthetic-kb-en", "synthetic-kb-zh")]
    units += load_units([p for p in synthetic if p.exists()]) + sanity_units()
    table = sentence_table(units)
    present = [s for s in SOURCES if (table.source == s).any()] if not table.empty else []
    print({s: int((table.source == s).sum()) for s in table.source.unique()}, flush=True)
    qags = [s for s in present if s.startswith("qags")]
    summedits = [s for s in present if s.startswith("summedits")]
    shipping = shipping_head(table)
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "seed": args.seed,
        "units_per_source": {s: int(table[table.source == s].unit.nunique()) for s in table.source.unique()},
        "commands": [
            "python benchmarks/synthetic_claims.py --out-dir /work/trust_cache --clapnq 100 --seed 0",
            f"python benchmarks/claim_features.py --n {args.n} --seed {args.seed}",
            "python benchmarks/claim_features.py --sources --synthetic /work/trust_cache/synthetic-{clapnq,kb-en,kb-zh}.jsonl",
            "python benchmarks/claim_features.py --sources --sanity",
            f"python benchmarks/claim_support_eval.py --n {args.n} --seed {args.seed}" + (" --write-head" if args.write_head else ""),
        ],
        "loso": {h: holdout(table, [h], [s for s in present if s != h]) for h in present},
        "groups": {
            "Fitted without QAGS, measured on QAGS": holdout(table, qags, summedits),
            "Fitted without SummEdits, measured on SummEdits": holdout(table, summedits, qags),
        },
        "aggregation": aggregation_study(table, present),
        "shipping": shipping,
        "timing": timing(table),
    }
    document["sanity"] = sanity_and_synthetic(table, shipping)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(document), encoding="utf-8")
    if args.write_head:
        write_head(shipping)
    print(markdown(document))


def write_head(shipping: dict) -> None:
    """Write the shipping head into ``src/ragmeter/resources/claim_support_head.json``."""
    from ragmeter.judges.local_model import PACKAGED_MODEL, PACKAGED_SHA256

    path = HERE.parent / "src" / "ragmeter" / "resources" / "claim_support_head.json"
    data = {
        "model": PACKAGED_MODEL,
        "sha256": PACKAGED_SHA256,
        "fitted_by": "benchmarks/claim_support_eval.py --write-head",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "config": shipping["config"],
        "fitted_on": shipping["fitted_on"],
        "head": shipping["head"] | {"description": f"{shipping['config']}; fitted on {', '.join(shipping['fitted_on'])}"},
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
