"""What :func:`ragmeter.data.secrets.redact` masks, and what it leaves alone."""

from __future__ import annotations

import base64

import pytest

from ragmeter.data import secrets
from ragmeter.data.secrets import redact, redirect_target, register_url


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GET https://alice:hunter22@api.example.com/v1 failed", "hunter22"),
        ("https://api.example.com/v1?api-key=abcdef123&x=1", "abcdef123"),
        ("Authorization: Bearer tok.en-123456", "tok.en-123456"),
        ("a bearer token: Bearer tok.en-123456", "tok.en-123456"),
        ("headers {'authorization': 'Basic YWxpY2U6aHVudGVyMjI='}", "YWxpY2U6aHVudGVyMjI="),
        ("echoed: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
        ("key sk-abcdefghijklmnop leaked", "abcdefghijklmnop"),
    ],
)
def test_credentials_are_masked(text, secret):
    masked = redact(text)
    assert secret not in masked and "***" in masked
    assert masked[:4] == text[:4]  # the text before the credential stays


@pytest.mark.parametrize(
    "text",
    ["The basic approach failed", "Basic approach: retrieve, then rerank", "BASIC plans include 5 seats", "A bearer of news"],
)
def test_ordinary_words_are_left_alone(text):
    assert redact(text) == text


def test_a_urls_user_information_is_masked_in_base64_too(monkeypatch):
    monkeypatch.setattr(secrets, "_registered", set())
    register_url("http://bob:pa55word@judge.internal:8000/v1")
    token = base64.b64encode(b"bob:pa55word").decode()
    echoed = f"server said: bad request (authorization {token}) for pa55word"
    assert redact(echoed) == "server said: bad request (authorization ***) for ***"


@pytest.mark.parametrize(
    ("location", "said"),
    [
        ("http://user:pw@elsewhere.example:8443/v1/chat?key=sk-1#frag", " to http://elsewhere.example:8443/v1/chat"),
        ("https://elsewhere.example/v1", " to https://elsewhere.example/v1"),
        ("/v2/chat/completions?token=abc", " to /v2/chat/completions on the same server"),
        ("http://host:notaport/x", ""),  # urlsplit's port raises: no address is better than a crash
        ("", ""),
        (None, ""),
    ],
)
def test_a_redirect_is_said_without_the_credentials_its_address_may_carry(location, said):
    assert redirect_target(location) == said
