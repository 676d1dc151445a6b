"""Reading the JSON the local judge writes under a schema's grammar."""

import json

import pytest

from ragmeter.judges.base import JudgeError
from ragmeter.judges.local import grammar_reply


def test_the_grammar_lets_a_string_hold_a_raw_newline():
    # Why grammar_reply reads leniently: llama-cpp-python's JSON grammar, which the local
    # judge generates under, lets a string hold any character but a quote or a backslash.
    from llama_cpp.llama_grammar import LlamaGrammar

    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    rules = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)._grammar
    assert 'char ::= [^"\\\\]' in rules


def test_a_raw_newline_or_tab_inside_a_string_is_taken_as_written():
    content = '{"question": "Which initiative\nwas rejected?", "answer": "The one\tcalled ``Accords\'\'"}'
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(content)  # what the judge did before: the question was lost
    assert grammar_reply(content) == {"question": "Which initiative\nwas rejected?", "answer": "The one\tcalled ``Accords''"}


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"question": "cut off', "invalid JSON: Unterminated string starting at column 14"),
        ('["a list"]', "got list"),
    ],
)
def test_a_reply_that_is_not_a_json_object_says_why(content, why):
    with pytest.raises(JudgeError) as raised:
        grammar_reply(content)
    assert str(raised.value) == f"the model's reply is not a JSON object ({why}): {content!r}"
