"""Synthetic claim-support units (FactCC / ARES style), made by code from text that is not
an evaluation set: ClapNQ passages (Wikipedia) and the project's own knowledge base.

From a sentence of a document, a *supported* claim is the sentence itself, the sentence
with a clause or parenthesis deleted, its fronted phrase moved to the end, or two
neighbouring sentences fused; an *unsupported* claim swaps a number, a month or weekday,
a name (for another name of the same document, FactCC's intra-document swap), a pronoun
or a word for its antonym, adds or removes a negation, appends a detail the document
never gives, or is a sentence of another document. Chinese (the zh knowledge base) gets
the same ideas with Chinese negations, numerals and antonyms.

Each unit's premise is its whole document. Output: JSONL units in the format of
``claim_data.unit``, written OUTSIDE the repository (ClapNQ text must not be copied in).

Usage:
    python benchmarks/synthetic_claims.py --out-dir /work/trust_cache [--clapnq 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

from claim_data import DEFAULT_DATA_DIR, unit

from ragmeter.data.text import split_sentences
from ragmeter.metrics.checks import judge_instruction

KB = Path(__file__).resolve().parents[1] / "examples" / "knowledge_base"
Transform = Callable[[str, dict, random.Random], "str | None"]

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ANTONYMS = {
    "more": "less", "less": "more", "increase": "decrease", "decrease": "increase", "increased": "decreased",
    "decreased": "increased", "before": "after", "after": "before", "largest": "smallest", "smallest": "largest",
    "first": "last", "last": "first", "higher": "lower", "lower": "higher", "always": "rarely", "early": "late",
    "late": "early", "north": "south", "south": "north", "east": "west", "west": "east", "won": "lost", "lost": "won",
    "older": "younger", "younger": "older", "larger": "smaller", "smaller": "larger", "most": "fewest",
    "minimum": "maximum", "maximum": "minimum", "allowed": "forbidden", "required": "optional", "optional": "required",
}  # fmt: skip
PRONOUNS = {"he": "she", "she": "he", "his": "her", "him": "her", "her": "his", "He": "She", "She": "He", "His": "Her", "Her": "His"}
AUXILIARIES = re.compile(r"\b(is|are|was|were|can|could|will|would|has|have|had|should|must|may|does|did)\b")
EXTRA = [
    "in {year}",
    "for the first time",
    "according to a {year} report",
    "after a two-year delay",
    "with the support of the United Nations",
    "at a cost of {n} million dollars",
]


def detokenize(text: str) -> str:
    """ClapNQ's tokenised text ("office , the `` season ''") read as ordinary text."""
    text = text.replace("``", '"').replace("''", '"').replace(" -- ", " - ")
    text = re.sub(r" ([,.;:?!%)\]])", r"\1", text)
    text = re.sub(r"([(\[$]) ", r"\1", text)
    return re.sub(r" (['’]s|n't)\b", r"\1", text).strip()


# ---- English transforms: each returns the new claim, or None when it does not apply -------


def sentence_copy(s: str, doc: dict, rng: random.Random) -> str | None:
    return s


def clause_deletion(s: str, doc: dict, rng: random.Random) -> str | None:
    shorter = re.sub(r"\s*\([^)]*\)", "", s)
    if shorter != s:
        return shorter
    match = re.search(r", (which|while|and|but|who|where|although|as|including)\b", s)
    if match and len(s[: match.start()].split()) >= 6:
        return s[: match.start()] + "."
    return None


def fronted_phrase(s: str, doc: dict, rng: random.Random) -> str | None:
    match = re.match(r"^(In|On|At|During|After|Before|By|Since|From) ([^,]{3,40}), (.+?)\.$", s)
    if not match:
        return None
    rest = match.group(3)
    return f"{rest[0].upper()}{rest[1:]} {match.group(1).lower()} {match.group(2)}."


def fusion(s: str, doc: dict, rng: random.Random) -> str | None:
    sentences = doc["sentences"]
    i = sentences.index(s)
    if i + 1 >= len(sentences) or len(sentences[i + 1].split()) > 25 or not s.endswith("."):
        return None
    nxt = sentences[i + 1]
    return f"{s[:-1]}, and {nxt[0].lower()}{nxt[1:]}" if not nxt[:2].isupper() else f"{s[:-1]}, and {nxt}"


def number_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    numbers = list(re.finditer(r"(?<![\d.,])\d+(?:\.\d+)?(?![\d.,]\d)", s))
    if not numbers:
        return None
    match = rng.choice(numbers)
    value = float(match.group(0))
    if 1000 <= value <= 2100 and "." not in match.group(0):
        new = str(int(value) + rng.choice([-1, 1]) * rng.randint(1, 12))
    elif value < 10 and "." not in match.group(0):
        new = str(int(value) + rng.randint(1, 4))
    else:
        factor = rng.choice([0.5, 2, 3, 1.5])
        new = str(round(value * factor, 2)).removesuffix(".0")
    return s[: match.start()] + new + s[match.end() :] if new != match.group(0) else None


def date_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    for names in (MONTHS, WEEKDAYS):
        present = [n for n in names if re.search(rf"\b{n}\b", s)]
        if present:
            old = rng.choice(present)
            return re.sub(rf"\b{old}\b", rng.choice([n for n in names if n != old]), s, count=1)
    return None


def entity_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    mine = [m for m in re.finditer(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", s) if m.group(0) not in MONTHS + WEEKDAYS]
    others = sorted({n for n in doc["names"] if n not in s})
    if not mine or not others:
        return None
    match = rng.choice(mine)
    return s[: match.start()] + rng.choice(others) + s[match.end() :]


def negation(s: str, doc: dict, rng: random.Random) -> str | None:
    if re.search(r"\bnot\b", s):
        return re.sub(r"\bnot ", "", s, count=1)
    match = AUXILIARIES.search(s)
    return s[: match.end()] + " not" + s[match.end() :] if match else None


def pronoun_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    words = list(re.finditer(r"\b(he|she|his|him|her|He|She|His|Her)\b", s))
    if not words:
        return None
    match = rng.choice(words)
    return s[: match.start()] + PRONOUNS[match.group(0)] + s[match.end() :]


def antonym_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    found = [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in ANTONYMS]
    if not found:
        return None
    match = rng.choice(found)
    return s[: match.start()] + ANTONYMS[match.group(0)] + s[match.end() :]


def added_detail(s: str, doc: dict, rng: random.Random) -> str | None:
    if not s.endswith("."):
        return None
    extra = rng.choice(EXTRA).format(year=rng.randint(1950, 2020), n=rng.randint(2, 90))
    return f"{s[:-1]} {extra}."


def other_document(s: str, doc: dict, rng: random.Random) -> str | None:
    return rng.choice(doc["elsewhere"]) if doc["elsewhere"] else None


SUPPORTED_EN: dict[str, Transform] = {"copy": sentence_copy, "deletion": clause_deletion, "fronted": fronted_phrase, "fusion": fusion}
UNSUPPORTED_EN: dict[str, Transform] = {
    "number": number_swap, "date": date_swap, "entity": entity_swap, "negation": negation,
    "pronoun": pronoun_swap, "antonym": antonym_swap, "added_detail": added_detail, "other_document": other_document,
}  # fmt: skip

# ---- Chinese transforms ------------------------------------------------------------------

ZH_NEGATE = [
    ("不需要", "需要"),
    ("不能", "能"),
    ("不受", "受"),
    ("没有", "有"),
    ("不必", "必须"),
    ("无需", "需要"),
    ("可以", "不可以"),
    ("需要", "不需要"),
    ("必须", "不必"),
    ("会", "不会"),
]
ZH_ANTONYMS = {
    "之前": "之后",
    "之后": "之前",
    "以上": "以下",
    "以下": "以上",
    "最多": "最少",
    "至少": "最多",
    "提前": "推迟",
    "开始": "结束",
    "增加": "减少",
    "允许": "禁止",
    "超过": "少于",
    "高于": "低于",
    "自动": "手动",
    "手动": "自动",
}
ZH_NUMERALS = "两三四五六七八九十"
ZH_EXTRA = ["，并且需要 CTO 书面批准", "，自 2019 年起执行", "，每月最多三次", "，由安全团队统一负责", "，节假日除外"]


def zh_deletion(s: str, doc: dict, rng: random.Random) -> str | None:
    shorter = re.sub(r"（[^）]*）", "", s)
    if shorter != s:
        return shorter
    clauses = s.rstrip("。；").split("，")
    if len(clauses) < 2 or len(clauses[0]) < 6:
        return None
    return "，".join(clauses[: rng.randint(1, len(clauses) - 1)]) + "。"


def zh_fusion(s: str, doc: dict, rng: random.Random) -> str | None:
    sentences = doc["sentences"]
    i = sentences.index(s)
    if i + 1 >= len(sentences) or not s.endswith("。"):
        return None
    return s[:-1] + "；" + sentences[i + 1]


def zh_number_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    swapped = number_swap(s, doc, rng)
    if swapped:
        return swapped
    found = list(re.finditer(f"[{ZH_NUMERALS}](?=[个次天周年月人名位本项级倍小])", s))
    if not found:
        return None
    match = rng.choice(found)
    return s[: match.start()] + rng.choice([c for c in ZH_NUMERALS if c != match.group(0)]) + s[match.end() :]


def zh_negation(s: str, doc: dict, rng: random.Random) -> str | None:
    for old, new in ZH_NEGATE:
        if old in s and not (old == "会" and "不会" in s):
            return s.replace(old, new, 1)
    return None


def zh_antonym(s: str, doc: dict, rng: random.Random) -> str | None:
    found = [w for w in ZH_ANTONYMS if w in s]
    if not found:
        return None
    word = rng.choice(found)
    return s.replace(word, ZH_ANTONYMS[word], 1)


def zh_entity_swap(s: str, doc: dict, rng: random.Random) -> str | None:
    mine = list(re.finditer(r"[A-Za-z][A-Za-z0-9#-]+", s))
    others = sorted({n for n in doc["names"] if n not in s})
    if not mine or not others:
        return None
    match = rng.choice(mine)
    return s[: match.start()] + rng.choice(others) + s[match.end() :]


def zh_added_detail(s: str, doc: dict, rng: random.Random) -> str | None:
    return s.rstrip("。") + rng.choice(ZH_EXTRA) + "。" if s.endswith("。") else None


SUPPORTED_ZH: dict[str, Transform] = {"copy": sentence_copy, "deletion": zh_deletion, "fusion": zh_fusion}
UNSUPPORTED_ZH: dict[str, Transform] = {
    "number": zh_number_swap, "entity": zh_entity_swap, "negation": zh_negation, "antonym": zh_antonym,
    "added_detail": zh_added_detail, "other_document": other_document,
}  # fmt: skip


# ---- documents and units ---------------------------------------------------------------


def clean_sentence(s: str) -> str:
    return re.sub(r"^\s*(?:[-*]|\d+\.)\s+", "", s).strip()


def eligible(s: str, lang: str) -> bool:
    if s.startswith("#") or "|" in s or judge_instruction(s):
        return False
    if lang == "zh":
        return len(re.findall(r"[\u4e00-\u9fff]", s)) >= 10
    return 8 <= len(s.split()) <= 45 and s[0].isupper()


def documents(texts: list[tuple[str, str]], lang: str, rng: random.Random) -> list[dict]:
    """``(id, text)`` pairs as documents: sentences, names, sentences of other documents."""
    docs = []
    for doc_id, text in texts:
        sentences = [clean_sentence(s) for s in split_sentences(text)]
        sentences = [s for s in sentences if s and not s.startswith("#") and "|" not in s]
        if lang == "zh":
            names = set(re.findall(r"[A-Za-z][A-Za-z0-9#-]+", text))
        else:
            names = {m.group(0) for s in sentences for m in re.finditer(r"(?<=[a-z,] )[A-Z][a-z]+(?: [A-Z][a-z]+)*", s)} - set(
                MONTHS + WEEKDAYS
            )
        docs.append({"id": doc_id, "text": text, "sentences": sentences, "names": sorted(names)})
    for doc in docs:
        pool = [s for other in docs if other is not doc for s in other["sentences"] if eligible(s, lang)]
        doc["elsewhere"] = rng.sample(pool, min(20, len(pool)))
    return docs


#: How often each transform is tried first (a copy is the easiest case: tried least).
WEIGHTS = {
    "copy": 1,
    "deletion": 3,
    "fronted": 3,
    "fusion": 2,
    "number": 3,
    "date": 3,
    "entity": 3,
    "negation": 2,
    "pronoun": 2,
    "antonym": 3,
    "added_detail": 2,
    "other_document": 1,
}


def make_claim(doc: dict, transforms: dict[str, Transform], lang: str, rng: random.Random) -> tuple[str, str] | None:
    """A claim from one of ``transforms`` applied to an eligible sentence, or None. The
    transforms are tried in a random order weighted by :data:`WEIGHTS`, each on every
    eligible sentence (in random order) until one applies."""
    candidates = [s for s in doc["sentences"] if eligible(s, lang)]
    order = sorted(transforms, key=lambda name: rng.random() ** (1 / WEIGHTS[name]), reverse=True)
    for name in order:
        for sentence in rng.sample(candidates, len(candidates)):
            claim = transforms[name](sentence, doc, rng)
            if claim and (name == "copy" or claim != sentence) and eligible(claim, lang):
                return name, claim
    return None


def synthetic_units(docs: list[dict], source: str, lang: str, per_doc: int, rng: random.Random) -> list[dict]:
    """``per_doc`` claims per document, alternately supported and unsupported."""
    supported, unsupported = (SUPPORTED_ZH, UNSUPPORTED_ZH) if lang == "zh" else (SUPPORTED_EN, UNSUPPORTED_EN)
    out, seen = [], set()
    for d, doc in enumerate(docs):
        for j in range(per_doc):
            label = (d + j) % 2
            made = make_claim(doc, supported if label else unsupported, lang, rng)
            if made and made[1] not in seen:
                seen.add(made[1])
                name, claim = made
                u = unit(f"{source}-{d}-{j}", source, doc["id"], doc["text"], claim, label, lang=lang)
                out.append(u | {"claim_labels": [label] * len(u["claims"]), "transform": name})
    return out


def clapnq_texts(data_dir: Path, n: int, rng: random.Random) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in (data_dir / "clapnq_dev.jsonl").read_text(encoding="utf-8").splitlines()]
    passages = sorted({r["passage"]: r["id"] for r in rows}.items(), key=lambda kv: kv[1])
    rng.shuffle(passages)
    return [(pid, " ".join(detokenize(s) for s in split_sentences(passage))) for passage, pid in passages[:n]]


def kb_texts(lang: str) -> list[tuple[str, str]]:
    return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted((KB / lang).glob("*.md"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out-dir", type=Path, default=Path("/work/trust_cache"))
    parser.add_argument("--clapnq", type=int, default=100, help="ClapNQ passages (3 claims each)")
    parser.add_argument("--kb-per-doc", type=int, default=14)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sets = {
        "synthetic-clapnq": synthetic_units(
            documents(clapnq_texts(args.data_dir, args.clapnq, rng), "en", rng), "synthetic-clapnq", "en", 3, rng
        ),
        "synthetic-kb-en": synthetic_units(documents(kb_texts("en"), "en", rng), "synthetic-kb-en", "en", args.kb_per_doc, rng),
        "synthetic-kb-zh": synthetic_units(documents(kb_texts("zh"), "zh", rng), "synthetic-kb-zh", "zh", args.kb_per_doc, rng),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, units in sets.items():
        path = args.out_dir / f"{name}.jsonl"
        path.write_text("".join(json.dumps(u, ensure_ascii=False) + "\n" for u in units), encoding="utf-8")
        counts = {}
        for u in units:
            counts[u["transform"]] = counts.get(u["transform"], 0) + 1
        print(f"{path}: {len(units)} units, {sum(u['label'] for u in units)} supported; {counts}")


if __name__ == "__main__":
    main()
