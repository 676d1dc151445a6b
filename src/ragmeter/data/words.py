"""Content words: the words of a text that carry its meaning, in English and Chinese.

Shared by the test-set generator's quality filter (does a reference add a word to its
question? does a question name what it asks about?), by its boilerplate rule (is anything left
of a document once its boilerplate is dropped?) and by faithfulness (does a sentence that
declines to answer say anything else?).
"""

from __future__ import annotations

from ragmeter.data.text import tokenize

_STOP_WORDS = frozenset(
    """a an the and or but if of at by for from in into on to with about as is are was were be been being it its this that
    these those there their they them he she his her we us our you your i my me do does did done have has had can could will
    would should may might must shall what which who whom whose when where why how not no yes so than then also only just
    any all some each other such very more most many much name called known one ones kind type above across after
    against along among around before behind below beside between beyond during inside near off onto out outside over past
    per since through throughout toward towards under until up upon via within without nor yet while because
    anyway anyhow however therefore thus really actually indeed""".split()  # noqa: SIM905
    + "的 了 是 在 和 与 及 或 也 都 就 而 但 并 把 被 对 于 为 以 从 到 这 那 其 之 个 有 要 会 可 能 将 等 中 什么 哪些 哪个 哪 谁 吗 呢 么 如何 怎么 怎样 多少 几 是否 名字 名称 叫".split()  # noqa: SIM905
)
#: Irregular English verb forms and their base form, which :func:`content_words` stems as it
#: stems the regular ones: "sent" is the word of "sends", so "An automatic alert is sent to the
#: Security team." adds nothing to "What happens when one sends an automatic alert to the
#: Security team?" (a bridge question kept with its own question as its answer,
#: ``benchmarks/results/generate_multi_hop.md``). Forms that are mostly other words are left
#: out: left, saw, lay, rose, bore, fell, shot, bit, ground, wound.
_IRREGULAR_FORMS = """
arise:arose,arisen awake:awoke,awoken beat:beaten become:became begin:began,begun bend:bent bite:bitten bleed:bled
blow:blew,blown break:broke,broken bring:brought build:built burn:burnt buy:bought catch:caught choose:chose,chosen
come:came creep:crept deal:dealt dig:dug draw:drew,drawn dream:dreamt drink:drank,drunk drive:drove,driven
dwell:dwelt eat:ate,eaten fall:fallen feed:fed feel:felt fight:fought find:found flee:fled fly:flew,flown
forbid:forbade,forbidden forget:forgot,forgotten forgive:forgave,forgiven freeze:froze,frozen get:got,gotten
give:gave,given go:went,gone grow:grew,grown hang:hung hear:heard hide:hid,hidden hold:held keep:kept kneel:knelt
know:knew,known lay:laid lead:led leap:leapt learn:learnt lend:lent lie:lain lose:lost make:made mean:meant meet:met
mistake:mistook,mistaken override:overrode,overridden overtake:overtook,overtaken pay:paid ride:rode,ridden
ring:rang,rung rise:risen run:ran say:said see:seen seek:sought sell:sold send:sent shake:shook,shaken show:shown
shrink:shrank,shrunk sing:sang,sung sink:sank,sunk sit:sat sleep:slept slide:slid speak:spoke,spoken spend:spent
spin:spun spring:sprang,sprung stand:stood steal:stole,stolen stick:stuck sting:stung stride:strode strike:struck
swear:swore,sworn sweep:swept swim:swam,swum swing:swung take:took,taken teach:taught tear:tore,torn tell:told
think:thought throw:threw,thrown understand:understood undertake:undertook,undertaken uphold:upheld wake:woke,woken
wear:wore,worn weep:wept win:won withdraw:withdrew,withdrawn withhold:withheld write:wrote,written
rewrite:rewrote,rewritten rebuild:rebuilt
"""
_IRREGULAR = {form: base for entry in _IRREGULAR_FORMS.split() for base, forms in [entry.split(":")] for form in forms.split(",")}
#: Every irregular past or participle form of :data:`_IRREGULAR_FORMS` ("sent", "taken").
IRREGULAR_PAST = frozenset(_IRREGULAR)
_POSSESSIVES = ("'s", "’s")
_SUFFIXES = (*_POSSESSIVES, "ing", "ed", "es", "s", "e")


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry content: tokens (Chinese segmented, see
    :func:`~ragmeter.data.text.tokenize`) less stop words and question words, English ones
    reduced to a crude stem (an irregular verb form to its base, :data:`_IRREGULAR`; then a
    final 's, -ing, -ed, -es, -s or -e dropped when 3 letters remain: "announce", "announced"
    and "announces" are all "announc", "sent" and "sends" both "send"); a possessive is dropped from
    a name in any Latin letters too ("Domínguez's" is "domínguez")."""
    words = set()
    for token in tokenize(text):
        if token in _STOP_WORDS:
            continue
        token = _IRREGULAR.get(token, token)
        for suffix in _SUFFIXES:
            # English suffixes on English words; a possessive on any name ("domínguez's")
            if (token.isascii() or suffix in _POSSESSIVES) and token.endswith(suffix) and len(token) - len(suffix) >= 3:
                token = token[: -len(suffix)]
                break
        words.add(token)
    return words
