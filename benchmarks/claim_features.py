"""Cache the local judge's verdicts on labelled claims, for the claim-support head.

For every sentence of every unit drawn by ``claim_data.py`` (and of the synthetic units of
``synthetic_claims.py``), the packaged 1.5B judge is asked, exactly as faithfulness asks it
today, whether the statement can be inferred from the ``k`` premise sentences closest to it
(USE cosine; the whole premise when it has no more than ``k`` sentences), and P(yes) is
read from the next-token logits. With the statement already read, extra questions cost
only their own tokens: the model's memory is cut back to the end of the statement and
another question is asked (``contradict``: does the statement contradict the premise;
``novel``: does it add a detail the premise does not state). The first question's tokens
are exactly the product's, so ``p.supported`` is the P(yes) faithfulness sees.

Each answer is appended to a JSONL cache outside the repository, keyed by premise, sentence,
language, k and :data:`VERSION`; a stopped job resumes where it stopped.

Usage (one thread, one model process at a time):
    python benchmarks/claim_features.py --n 150 --seed 0 [--sources ...] [--synthetic FILE ...]
    python benchmarks/claim_features.py --check-product 5     # our P(yes) == faithfulness's
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from claim_data import DEFAULT_DATA_DIR, SOURCES, interleave, labelled_units
from claim_sanity import sanity_units

from ragmeter.data.text import join_text, split_sentences
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.prompts import PromptBook, fence

VERSION = "v1"
CACHE = Path("/work/trust_cache/llm_features.jsonl")
#: Extra questions asked after the product's, per language.
QUESTIONS = {
    "en": {
        "contradict": "Does the statement contradict the premise?",
        "novel": "Does the statement add any detail that the premise does not state?",
    },
    "zh": {
        "contradict": "这条陈述与前提矛盾吗？",
        "novel": "这条陈述是否加入了前提中没有的细节？",
    },
}


def key_of(premise: list[str], sentence: str, lang: str, k: int) -> str:
    """Cache key of one verdict."""
    text = json.dumps([premise, sentence, lang, k, VERSION], ensure_ascii=False)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def load_cache(path: Path = CACHE) -> dict[str, dict[str, Any]]:
    """Every cached record by key (a half-written last line is ignored)."""
    records: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[record["key"]] = record
    return records


class Evidence:
    """The premise sentences closest to a statement, chosen as ``closest_evidence`` does."""

    def __init__(self, threads: int = 1):
        self.encoder = USEEncoder(threads=threads)
        self._vectors: dict[str, np.ndarray] = {}

    def vectors(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.encoder.encode(missing), strict=True))
        return np.asarray([self._vectors[t] for t in texts], dtype=np.float64)

    def closest(self, premise: list[str], sentence: str, k: int) -> list[str]:
        """The evidence chunks (the whole premise when it has no more than k sentences)."""
        sentences = [(n, s) for n, chunk in enumerate(premise) for s in split_sentences(chunk)]
        if not k or len(sentences) <= k:
            return list(premise)
        similarity = self.vectors([s for _, s in sentences]) @ self.vectors([sentence])[0]
        by_chunk: dict[int, str] = {}
        for index in sorted(np.argsort(-similarity, kind="stable")[:k]):
            number, text = sentences[index]
            by_chunk[number] = join_text(by_chunk.get(number, ""), text)
        return list(by_chunk.values())


class Asker:
    """The local judge's P(yes) for several questions about one statement, the statement
    read once. Uses LocalJudge's segment machinery (benchmark code, not the product path)."""

    def __init__(self, threads: int = 1):
        self.judge = LocalJudge(threads=threads)
        self.llm = self.judge._model()

    def _tokens(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _cut_to_statement(self, n_stated: int) -> None:
        """Forget everything after the statement: the model's memory then ends with it."""
        segments = self.judge._memory.segments
        if len(segments[-1]) != n_stated:  # the last segment is the whole item or a question
            if len(segments) > 3:
                self.judge._memory.truncate(3)
            else:
                keep = sum(len(s) for s in segments[:-1]) + n_stated
                self.llm._ctx.kv_cache_seq_rm(-1, keep, -1)
                self.llm.n_tokens = keep
                segments[-1] = segments[-1][:n_stated]

    def ask(self, evidence: list[str], sentence: str, lang: str, questions: dict[str, str]) -> dict[str, Any]:
        """P(yes) per question (``supported`` first: the product's), seconds and tokens."""
        book = PromptBook(lang)
        prompt = book.verdict("supported", {"premise": evidence})
        statement = fence("statement", sentence) + "\n"
        product = prompt.item(sentence, "statement")
        head, shared, item = self.judge._memory.segments_of(prompt, product)
        whole = self._tokens(product)
        tail = list(item[len(whole) :])
        asks = {"supported": product[len(statement) :], **{n: f"{q} {book._data['yes_no'].strip()}\n" for n, q in questions.items()}}
        stated = self._tokens(statement)
        if stated + self._tokens(asks["supported"]) != whole:
            raise RuntimeError("statement and question tokenize differently apart than together")
        out: dict[str, Any] = {"p": {}, "seconds": {}, "tokens": {}}
        started = time.perf_counter()
        # The product's question is read with the statement in one batch, as faithfulness
        # reads it (a different batch split changes P(yes) in the third decimal).
        evaluated = self.judge._memory.reach([head, shared]) + self.judge._memory.evaluate(tuple(item))
        for name, text in asks.items():
            if name != "supported":
                evaluated += self.judge._memory.evaluate(tuple(self._tokens(text) + tail))
            probabilities = self.judge._option_probabilities(self.judge._next_token_logits(), prompt.answers)
            out["p"][name] = min(max(float(probabilities[0]), 0.0), 1.0)
            out["seconds"][name] = round(time.perf_counter() - started, 3)
            out["tokens"][name] = evaluated
            self._cut_to_statement(len(stated))
            started, evaluated = time.perf_counter(), 0
        out["prompt_tokens"] = len(head) + len(shared) + len(whole) + len(tail)
        return out


def jobs_of(units: list[dict[str, Any]], ks: list[int]) -> list[dict[str, Any]]:
    """One job per distinct (premise, sentence, lang, k), in the units' order."""
    seen, jobs = set(), []
    for u in units:
        for sentence in u["claims"]:
            for k in ks:
                key = key_of([u["premise"]], sentence, u["lang"], k)
                if key not in seen:
                    seen.add(key)
                    jobs.append(
                        {
                            "key": key,
                            "source": u["source"],
                            "doc": u["doc"],
                            "premise": [u["premise"]],
                            "sentence": sentence,
                            "lang": u["lang"],
                            "k": k,
                        }
                    )
    return jobs


def run(jobs: list[dict[str, Any]], threads: int, cache: Path) -> None:
    done = load_cache(cache)
    todo = [j for j in jobs if j["key"] not in done]
    print(f"{len(jobs)} verdicts, {len(jobs) - len(todo)} cached, {len(todo)} to compute", flush=True)
    if not todo:
        return
    evidence, asker = Evidence(threads), Asker(threads)
    cache.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with cache.open("a", encoding="utf-8") as out:
        for n, job in enumerate(todo, start=1):
            chosen = evidence.closest(job["premise"], job["sentence"], job["k"])
            answer = asker.ask(chosen, job["sentence"], job["lang"], QUESTIONS[job["lang"]])
            record = {k: v for k, v in job.items() if k != "premise"} | {"evidence": chosen, "version": VERSION} | answer
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            if n % 10 == 0 or n == len(todo):
                rate = (time.perf_counter() - started) / n
                print(f"{n}/{len(todo)} {rate:.2f} s/verdict, eta {rate * (len(todo) - n) / 60:.0f} min", flush=True)


def check_product(units: list[dict[str, Any]], n: int, threads: int) -> None:
    """Our ``supported`` P(yes) against the faithfulness path's, on ``n`` sentences."""
    from ragmeter.judges import Judges
    from ragmeter.metrics.evidence import supported

    asker, evidence = Asker(threads), Evidence(threads)
    judges = Judges(llm=asker.judge)
    for u in units[:n]:
        sentence = u["claims"][0]
        answer = asker.ask(evidence.closest([u["premise"]], sentence, 3), sentence, u["lang"], QUESTIONS[u["lang"]])
        ours = answer["p"]["supported"]
        (verdict,), _ = asyncio.run(supported(judges, [u["premise"]], [sentence], u["lang"]))
        print(f"{u['unit']}: ours {ours:.6f} product {verdict.p_yes:.6f} diff {abs(ours - verdict.p_yes):.2e}", answer, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--sources", nargs="*", default=list(SOURCES))
    parser.add_argument("--n", type=int, default=150, help="units drawn per labelled source")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, nargs="+", default=[3], help="evidence sentences (product: 3)")
    parser.add_argument("--synthetic", type=Path, nargs="*", default=[], help="JSONL units from synthetic_claims.py")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--sanity", action="store_true", help="also the hand-written sanity cases (claim_sanity.py)")
    parser.add_argument("--check-product", type=int, default=0, metavar="N")
    args = parser.parse_args()
    groups = [labelled_units(s, args.n, args.seed, args.data_dir) for s in args.sources]
    groups += [[json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] for path in args.synthetic]
    if args.sanity:
        groups.append(sanity_units())
    units = interleave(groups)
    if args.check_product:
        check_product(units, args.check_product, args.threads)
        return
    run(jobs_of(units, args.k), args.threads, args.cache)


if __name__ == "__main__":
    main()
