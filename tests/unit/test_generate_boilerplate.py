"""ragmeter generate drops boilerplate before chunking: wiki maintenance notices, and sentences
repeated across many documents; a document of nothing else is dropped whole."""

from __future__ import annotations

import asyncio
import json

import numpy as np
from test_llm_double import FixedVectors

from ragmeter.generate.boilerplate import MIN_CONTENT_WORDS, drop_boilerplate, repeated_sentences
from ragmeter.generate.documents import Document
from ragmeter.generate.knowledge_base import build_knowledge_base
from ragmeter.judges.embeddings import BatchingEmbedder

NOTICE = (
    "This article needs additional citations for verification . Please help improve this article by adding citations to "
    "reliable sources . Unsourced material may be challenged and removed . ( May 2017 ) ( Learn how and when to remove this "
    "template message ) "
)
BODY = "The Lindqvist ferry crosses the northern bay twice a day and carries up to forty cars on each crossing ."


def _doc(doc_id: str, text: str, lang: str = "en") -> Document:
    return Document(doc_id, text, f"{doc_id}.txt", lang)


def test_wiki_maintenance_notices_are_dropped_and_the_article_kept():
    documents, dropped = drop_boilerplate([_doc("ferry", NOTICE + BODY)])
    assert [d.text for d in documents] == [BODY]
    assert dropped.template_notices == 4 and dropped.documents_changed == 1 and dropped.documents_dropped == []
    multiple = "( hide ) This article has multiple issues . Please help improve it or discuss these issues on the talk page . " + BODY
    assert drop_boilerplate([_doc("ferry", multiple)])[0][0].text == BODY
    references = (
        "This article includes a list of references , but its sources remain unclear because it has insufficient inline citations . "
        "Please help to improve this article by introducing more precise citations . ( June 2012 ) "
    )
    assert drop_boilerplate([_doc("ferry", references + BODY)])[0][0].text == BODY
    imdb = "This media section uses IMDb for verification . IMDb may not be a reliable source for film information . "
    assert drop_boilerplate([_doc("ferry", imdb + BODY)])[0][0].text == BODY
    fiction = (
        "This article describes a work or element of fiction in a primarily in - universe style . Please help rewrite it to explain "
        "the fiction more clearly . ( April 2010 ) This article 's plot summary may be too long or excessively detailed . "
    )
    assert drop_boilerplate([_doc("ferry", fiction + BODY)])[0][0].text == BODY
    inline = "The ferry entered service in 1961 [citation needed] and was rebuilt in 1990."
    assert drop_boilerplate([_doc("ferry", inline)])[0][0].text == "The ferry entered service in 1961 and was rebuilt in 1990."


def test_a_document_of_notices_only_is_dropped_whole_and_named():
    documents, dropped = drop_boilerplate([_doc("notice", NOTICE + "William"), _doc("ferry", BODY)])
    assert [d.id for d in documents] == ["ferry"]
    assert dropped.to_dict() == {
        "repeated_sentences": 0,
        "template_notices": 4,
        "documents_changed": 0,
        "documents_dropped": 1,
        "dropped_document_ids": ["notice"],
    }
    assert MIN_CONTENT_WORDS == 5


def test_chinese_wiki_notices_are_dropped():
    text = "本条目需要补充更多来源。请协助补充可靠来源，无法查证的内容可能会因为异议提出而移除。\n林德渡轮每天两次横渡北湾，每次最多运载四十辆汽车[来源请求]。"
    documents, dropped = drop_boilerplate([_doc("ferry-zh", text, "zh")])
    assert documents[0].text == "林德渡轮每天两次横渡北湾，每次最多运载四十辆汽车。"
    assert dropped.template_notices == 3


def test_a_long_sentence_repeated_in_three_documents_is_dropped_a_short_one_or_one_in_two_is_kept():
    footer = "Questions about this page go to the platform team on the help channel."
    texts = [f"Team {name} owns the {name} service and deploys it weekly.\n{footer}\nNo." for name in ("red", "blue", "green")]
    assert repeated_sentences([_doc(str(i), t) for i, t in enumerate(texts)]) == {footer.lower()}
    documents, dropped = drop_boilerplate([_doc(str(i), t) for i, t in enumerate(texts)])
    assert documents[0].text == "Team red owns the red service and deploys it weekly.\nNo."
    assert dropped.repeated_sentences == 3
    two, _ = drop_boilerplate([_doc(str(i), t) for i, t in enumerate(texts[:2])])
    assert [d.text for d in two] == texts[:2]  # found in two documents only: content, not boilerplate


def test_ordinary_text_is_left_exactly_as_it_was():
    text = "# Rota\n\nPlease add your name to the rota.\nThis page lists the sources of truth for the ferry timetable.\n\n本章节介绍各服务的配置来源。请协助值班工程师处理告警。"
    documents, dropped = drop_boilerplate([_doc("rota", text)])
    assert documents[0].text == text and dropped.to_dict()["documents_changed"] == 0


def test_the_run_summary_counts_the_boilerplate_dropped(tmp_path):
    rows = [{"id": "notice", "text": NOTICE + "William"}, {"id": "ferry", "text": NOTICE + BODY}]
    path = tmp_path / "kb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    kb = asyncio.run(build_knowledge_base([path], BatchingEmbedder(FixedVectors({})), 1200, 150))
    assert [c.text for c in kb.graph.chunks] == [BODY]
    assert kb.documents == 2 and kb.boilerplate["documents_dropped"] == 1 and kb.boilerplate["template_notices"] == 8


def test_a_large_knowledge_base_is_embedded_a_slice_at_a_time_behind_a_progress_bar(tmp_path, capsys):
    # A 5 MB document is minutes of embedding before the first question: the bar shows them.
    sections = [f"## Topic {n}\n\nThe ferry number {n} leaves pier {n} at dawn and returns by noon." for n in range(70)]
    (tmp_path / "ferries.md").write_text("\n\n".join(sections), encoding="utf-8")
    encoder = FixedVectors({}, dim=128)
    kb = asyncio.run(build_knowledge_base([tmp_path], BatchingEmbedder(encoder), 100, 0, progress=True))
    texts = [c.text for c in kb.graph.chunks]
    assert len(texts) == 70 and [len(call) for call in encoder.calls] == [32, 32, 6]
    assert np.array_equal(kb.vectors, encoder.encode(texts))  # each chunk's own vector, in order
    shown = capsys.readouterr()
    assert "embedding chunks" in shown.out + shown.err and "70/70" in shown.out + shown.err
