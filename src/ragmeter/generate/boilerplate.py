"""Boilerplate dropped from a knowledge base before chunking, so that it never seeds a question.

Two rules, applied line by line to each document's text (a line without boilerplate is left
exactly as it was, so its chunks keep their text and ids):

- **Repeated sentences**: a sentence found word for word (case and spacing aside) in at least
  :data:`REPEATED_IN` documents of the knowledge base, with at least
  :data:`MIN_REPEATED_WORDS` content words, is a site's notice, footer or template, not content
  (ClapNQ's "Unsourced material may be challenged and removed." is in 8 of its 600 passages).
  Short sentences ("No.", "Dr.") are never dropped for being repeated.
- **Wiki maintenance templates** (:data:`TEMPLATES`): the notices Wikipedia puts above an
  article or section ("This article needs additional citations for verification", "This
  article has multiple issues", "Please help improve it...", "(Learn how and when to remove
  this template message)", "[citation needed]"), and their Chinese counterparts ("本条目需要补充
  更多来源", "[来源请求]"), which copies of Wikipedia text carry; a template found once is
  dropped, repeated or not.

A document that keeps fewer than :data:`MIN_CONTENT_WORDS` content words once its boilerplate
is dropped (ClapNQ passages made of notices and the first word of the article) is dropped
whole. :class:`Boilerplate` counts what was dropped, for the run's summary.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce

from ragmeter.data.text import join_text, split_sentences
from ragmeter.data.words import content_words
from ragmeter.generate.documents import Document

#: Documents a sentence must be found in to be boilerplate.
REPEATED_IN = 3
#: Content words a repeated sentence needs to count as boilerplate.
MIN_REPEATED_WORDS = 3
#: Content words a document needs left, once its boilerplate is dropped, to be kept.
MIN_CONTENT_WORDS = 5

_DATE = r"(?:\s*\(\s*[A-Z][a-z]+ \d{4}\s*\))?"  # the "(May 2017)" stamp after a template's sentence
_NOTICE_VERBS = (
    r"needs|does not cite|has multiple issues|possibly contains|relies|may (?:need|require)|is missing|lacks"
    r"|includes a list of references|uses IMDb|describes a work or element of fiction"
)
#: Wiki maintenance templates (regular expressions), English then Chinese.
TEMPLATES = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # "This article needs additional citations for verification.", "This section does not cite any sources.",
        # "This biographical article needs ...", "(hide) This article has multiple issues."
        rf"(?:\(\s*)?(?:\bhide\s*\)?\s*)?\bThis (?:[\w-]+ ){{0,2}}(?:article|section|list)\b (?:{_NOTICE_VERBS})\b[^.]*\.{_DATE}",
        rf"\bPlease (?:help (?:to )?(?:improve|rewrite|by adding|by replacing)|improve (?:it|this (?:article|section)))\b[^.]*\.{_DATE}",
        # "This article's plot summary may be too long", "This article's tone or style may not reflect ..."
        rf"\bThis (?:article|section) ?['’]s [\w -]{{1,40}}? may (?:be|not)\b[^.]*\.{_DATE}",
        rf"\bIMDb may not be a reliable source\b[^.]*\.{_DATE}",
        rf"\b(?:Unsourced|Contentious|Unverified) material\b[^.]*\.{_DATE}",
        rf"\bStatements consisting only of original research\b[^.]*\.{_DATE}",
        rf"\bRelevant discussion may be found on the talk page\s*\.{_DATE}",
        r"\(\s*Learn how and when to remove (?:this|these) template messages?\s*\)",
        r"\[\s*(?:citation|clarification|verification) needed\s*\]|\(\s*citation needed\s*\)",
        r"本(?:条目|條目|章节|章節)(?:需要|需|可能|没有|沒有|缺少|含有|包含)[^。]*?(?:来源|來源|参考|參考|原创研究|原創研究|清理|中立|扩充|擴充|更新)[^。]*。",
        r"(?:请|請)(?:协助|協助)(?:补充|補充|改善|完善|改进|改進)[^。]*。",
        r"(?:无法查证|無法查證)的内容[^。]*。",
        r"[\[［](?:来源请求|來源請求|需要引用|需要来源|需要來源|需要更多来源)[\]］]",
    )
)


@dataclass
class Boilerplate:
    """What :func:`drop_boilerplate` dropped.

    Attributes:
        repeated_sentences: Sentences dropped for being repeated across documents.
        template_notices: Wiki maintenance notices dropped.
        documents_changed: Documents that lost some boilerplate and were kept.
        documents_dropped: Ids of the documents left with too little content, dropped whole.
    """

    repeated_sentences: int = 0
    template_notices: int = 0
    documents_changed: int = 0
    documents_dropped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """The counts for the run's summary (the dropped documents by id)."""
        return {
            "repeated_sentences": self.repeated_sentences,
            "template_notices": self.template_notices,
            "documents_changed": self.documents_changed,
            "documents_dropped": len(self.documents_dropped),
            "dropped_document_ids": list(self.documents_dropped),
        }


def _key(sentence: str) -> str:
    return " ".join(sentence.lower().split())


def repeated_sentences(documents: Sequence[Document], at_least: int = REPEATED_IN) -> set[str]:
    """The sentences (normalised: lower-cased, spacing collapsed) found in at least
    ``at_least`` of ``documents`` that have :data:`MIN_REPEATED_WORDS` content words or more.

    Args:
        documents: The knowledge base's documents.
        at_least: Documents a sentence must be found in.
    """
    counts: Counter[str] = Counter()
    for document in documents:
        counts.update({_key(s) for line in document.text.splitlines() for s in split_sentences(line)})
    return {s for s, n in counts.items() if n >= at_least and len(content_words(s)) >= MIN_REPEATED_WORDS}


def clean_line(line: str, repeated: set[str], counts: Boilerplate) -> str:
    """``line`` without its templates and repeated sentences (unchanged when it has neither).

    Args:
        line: One line of a document.
        repeated: Normalised repeated sentences (:func:`repeated_sentences`).
        counts: Where the notices and sentences dropped are counted.
    """
    text = line
    for template in TEMPLATES:
        text, found = template.subn("", text)
        counts.template_notices += found
    sentences = split_sentences(text)
    kept = [s for s in sentences if _key(s) not in repeated]
    counts.repeated_sentences += len(sentences) - len(kept)
    if text == line and len(kept) == len(sentences):
        return line
    return " ".join(reduce(join_text, kept, "").split())


def drop_boilerplate(documents: Sequence[Document], at_least: int = REPEATED_IN) -> tuple[list[Document], Boilerplate]:
    """The documents without their boilerplate, and what was dropped.

    Args:
        documents: The knowledge base's documents.
        at_least: Documents a sentence must be found in to be dropped as repeated.
    """
    repeated = repeated_sentences(documents, at_least)
    counts = Boilerplate()
    kept: list[Document] = []
    for document in documents:
        lines = document.text.splitlines()
        cleaned = [clean_line(line, repeated, counts) for line in lines]
        if cleaned == lines:
            kept.append(document)
            continue
        text = "\n".join(line for line, old in zip(cleaned, lines, strict=True) if line.strip() or not old.strip())
        if len(content_words(text)) < MIN_CONTENT_WORDS:
            counts.documents_dropped.append(document.id)
            continue
        counts.documents_changed += 1
        kept.append(Document(document.id, text, document.source, document.lang, document.title, document.metadata))
    return kept, counts
