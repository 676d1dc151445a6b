"""The description that stands for a bridge phrase in a multi-hop question, written in code
from the judge's two short answers (the kind of thing the phrase names, a fact its chunk states
of it): "the woman who hosts the charity gala", "the request carried out only by the Forge merge
bot", "收藏全市档案的图书馆" (see :mod:`ragmeter.generate.compose`). The English grammar is
small and deliberate: who or that, a passive fact without its "is", a verb that agrees with one
thing; each rule comes from a description kept in a run of
``benchmarks/results/generate_multi_hop.md``.
"""

from __future__ import annotations

import re

from ragmeter.data.text import tokenize
from ragmeter.data.words import IRREGULAR_PAST

#: Kinds of thing that are people: "the woman who hosts", not "the woman that hosts". Words
#: that name things too (a host, a package manager, a media player, a coach) keep
#: "that", which is never wrong.
_PERSON = re.compile(
    r"(?:person|people|m[ae]n|wom[ae]n|boy|girl|child(?:ren)?|character|individual|protagonist|hero(?:ine)?|villain"
    r"|actor|actress|singer|rapper|musician|artist|author|athlete"
    r"|engineer|officer|commander|president|politician|king|queen|prince(?:ss)?|doctor|teacher|student"
    r"|mother|father|son|daughter|brother|sister|wife|husband|(?:girl|boy)?friend)s?",
    re.IGNORECASE,
)
#: A fact that opens with a passive participle and its agent, "carried out only by the Forge
#: merge bot": the judge leaves out its "is", so the description drops its "that" ("the request
#: carried out only by...", where "the request that carried out only by..." was kept in a run
#: of ``benchmarks/results/generate_multi_hop.md``).
_PASSIVE = re.compile(
    r"(?:(?:only|always|never|[a-z]+ly)\s+)?"
    r"(?:[a-z]+(?:ed|en|wn)|made|done|run|set|put|cut|read|held|kept|sent|built|paid|sold|told|found|led|taught|brought"
    r"|bought|caught|thought|sought|meant|spent|lent|dealt|won|hung|struck|stuck|understood|upheld|withheld)"
    r"(?:\s+(?:out|up|off|down|over|back|in|on|only|solely|[a-z]+ly)){0,2}\s+by\b",  # particles, adverbs; no object
    re.IGNORECASE,
)
#: The kind of thing described is many ("brothers", "people"): its fact's verb stays as written.
_PLURAL = re.compile(r"(?!series|species|news)[a-z]*[^su]s|people|men|women|children", re.IGNORECASE)
#: A fact's opening verb, after an adverb or two ("only", "also", "quickly"; not "apply", "rely").
_OPENING_VERB = re.compile(
    r"(?:(?:only|also|never|always|often|still|later|first|then|now|once|(?!(?:ap|re|sup|com|multi|im)ply\b|rely\b|fly\b)[a-z]{2,}ly)\s+){0,2}"
    r"(?P<verb>[A-Za-z]+)\b"
)
#: A fact's first words that are no bare verb: auxiliaries, modals, determiners, pronouns,
#: prepositions and conjunctions; forms that are their own past (put, set, cut...), which a
#: fact about the past uses too.
_NOT_BARE_VERBS = frozenset(
    """
is are was were be been am has had did can could will would shall should may might must ought
the a an this that these those his her its their our your my one some any each every no not
to in on at for with from of by as about into onto over under after before during since until
and or but also who which what when where whom whose he she it they we you i
put set cut let hit hurt cost quit shut spread bet cast burst read beat lit shed split fit rid thrust wed upset
""".split()  # noqa: SIM905
)
#: Irregular past forms (sent, took, wrote...): a fact in the past agrees with anything. The
#: list of :mod:`ragmeter.data.words` leaves out forms that are mostly other words; here they
#: are past forms first.
_IRREGULAR_PAST = IRREGULAR_PAST | {"left", "saw", "lay", "rose", "bore", "fell", "shot", "bit", "ground", "wound", "born", "bound"}


def described_as(kind: str, fact: str, phrase: str, lang: str) -> str:
    """The description of ``phrase`` put together from the kind of thing it names and the
    ``fact`` the judge found about it: "the library that holds the city archive", "the
    woman who hosts the gala" (a person is "who"), "the request carried out by the merge bot"
    (a passive fact, whose "is" the judge left out, takes no "that"), "收藏全市档案的图书馆". The kind of a common
    compound ("platform team", 发布经理, 预发环境) is its last word (team, 经理, 环境); a name's
    (Forge Vault, SEV2) or a single word's is the judge's ``kind``. The prompt lists no kinds:
    given some to choose from, the judge took the first ("team") for most things.

    Args:
        kind: What kind of thing the phrase names, as the judge wrote it.
        fact: What the described chunk says it does or has, a verb phrase.
        phrase: The bridge phrase described.
        lang: ``"en"`` or ``"zh"``.
    """
    kind, fact = kind.rstrip(".。"), fact.rstrip(".。")
    words = _words(phrase, lang)
    if len(words) > 1 and not any(ch.isupper() for ch in phrase):
        kind = words[-1]
    if lang == "zh":
        return f"{fact}的{kind}"
    kind = re.sub(r"^(?:the|a|an)\s+", "", kind, flags=re.IGNORECASE)
    fact = re.sub(r"^(?:that|which|who)\s+", "", fact, flags=re.IGNORECASE)
    if _PASSIVE.match(fact):
        return f"the {kind} {fact}"
    words = kind.split()
    relative = "who" if words and _PERSON.fullmatch(words[-1]) else "that"
    if words and not _PLURAL.fullmatch(words[-1]):
        fact = _third_person(fact)
    return f"the {kind} {relative} {fact}"


def _third_person(fact: str) -> str:
    """``fact`` with its opening verb made to agree with one thing: "convince Randall" ->
    "convinces Randall", "only watch the dashboards" -> "only watches the dashboards". A verb
    already inflected (holds, carried, sent), an auxiliary (is, can), a form that is its own
    past (put, set) or a fact that does not open with a verb (a determiner or preposition
    first) is left as it is."""
    match = _OPENING_VERB.match(fact)
    if not match:
        return fact
    verb = match["verb"]
    lower = verb.lower()
    if verb != lower or lower in _NOT_BARE_VERBS or lower in _IRREGULAR_PAST or re.search(r"(?:[^s]s|ed|ing)$", lower):
        return fact
    if lower == "have":
        inflected = "has"
    elif re.search(r"(?:s|x|z|ch|sh|[^aeiou]o)$", lower):
        inflected = lower + "es"
    elif re.search(r"[^aeiou]y$", lower):
        inflected = lower[:-1] + "ies"
    else:
        inflected = lower + "s"
    return fact[: match.start("verb")] + inflected + fact[match.end("verb") :]


def _words(phrase: str, lang: str) -> list[str]:
    """The words of ``phrase``: all-Chinese as :func:`~ragmeter.data.text.tokenize` segments
    it, else by spaces (a hyphenated word, "break-glass", is one, in a Chinese text too)."""
    return tokenize(phrase) if lang == "zh" and not re.search(r"[A-Za-z]", phrase) else phrase.split()
