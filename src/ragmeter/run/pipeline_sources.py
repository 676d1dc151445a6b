"""Where a user's RAG pipeline comes from on the command line (``ragmeter answer``).

- ``module:function``: a Python callable ``question -> (contexts, answer)`` or a dict (see
  :mod:`ragmeter.run.pipelines`), imported from the current directory or the installed
  packages. ``module:function()`` calls ``function`` once with no argument and uses what it
  returns (a factory that builds the index first).
- ``http(s)://...``: an HTTP endpoint. Each question is POSTed as JSON
  ``{"question": "...", "user_input": "..."}``; the reply is a JSON object with the answer
  (``answer`` or ``response``) and the retrieved texts (``contexts`` or
  ``retrieved_contexts``), and optionally ``context_ids``, ``latency_ms``, ``tokens``,
  ``cost_usd``.
"""

from __future__ import annotations

import importlib
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragmeter.data.json_numbers import TooLongNumber, brief_json, json_loads
from ragmeter.data.secrets import redirect_target, register_url

#: Longest HTTP reply read, in bytes.
MAX_REPLY_BYTES = 20_000_000


class PipelineSourceError(ValueError):
    """The pipeline named on the command line cannot be found or built."""


def load_pipeline(spec: str, timeout: float = 120.0) -> Callable[[str], Any]:
    """The pipeline ``spec`` names (``module:function``, ``module:factory()`` or a URL).

    Args:
        spec: What the user gave.
        timeout: Seconds an HTTP endpoint may take per question.

    Raises:
        PipelineSourceError: The module or function does not exist, importing the module or
            calling a factory failed (or called ``sys.exit``), the URL is not an http(s)
            address with a host, or the spec is neither form; the message names the spec.
    """
    if "://" in spec:  # never in a module name
        return http_pipeline(spec, timeout)
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise PipelineSourceError(f"pipeline '{spec}': give module:function (e.g. my_rag:answer) or an http(s):// URL")
    factory = attribute.endswith("()")
    attribute = attribute.removesuffix("()")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # an error, or sys.exit() (a script's argparse), in the user's module: one line
        raise PipelineSourceError(f"pipeline '{spec}': cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise PipelineSourceError(f"pipeline '{spec}': {module_name} has no function '{attribute}'")
    if not factory:
        return function
    try:
        built = function()
    except (Exception, SystemExit) as exc:
        raise PipelineSourceError(f"pipeline '{spec}': {attribute}() failed: {type(exc).__name__}: {exc}") from None
    if not callable(built):
        raise PipelineSourceError(f"pipeline '{spec}': {attribute}() returned {type(built).__name__}, not a callable pipeline")
    return built


def http_pipeline(url: str, timeout: float = 120.0) -> Callable[[str], Any]:
    """A pipeline that asks an HTTP endpoint (see the module docstring for the exchange).

    Args:
        url: The endpoint; its credentials, if any, are masked wherever it is printed.
        timeout: Seconds per question.

    Raises:
        PipelineSourceError: ``url`` is not an http(s) address with a host (and a valid port).
    """
    register_url(url)
    _check_url(url)

    def ask(question: str) -> Any:
        return post_json(url, {"question": question, "user_input": question}, timeout, "an object with answer and contexts")

    ask.__name__ = "http_pipeline"
    return ask


def _check_url(url: str) -> None:
    """Refuse, before any question is asked, a URL every question would fail on."""
    problem = None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number in range)
    except ValueError as exc:
        problem = str(exc)
    else:
        if parts.scheme.lower() not in ("http", "https"):
            problem = "give an http:// or https:// endpoint"
        elif not parts.hostname:
            problem = "no host given"
        elif any(character.isspace() or not character.isprintable() for character in url):
            problem = "a URL cannot hold spaces or control characters (percent-encode them)"
    if problem:
        raise PipelineSourceError(f"pipeline '{url}': {problem}")


def post_json(url: str, payload: dict[str, Any], timeout: float, expected: str) -> dict[str, Any]:
    """POST ``payload`` as JSON to ``url`` and return the JSON object it replies. A redirect
    is not followed: its address is not the one the user configured.

    Args:
        url: The endpoint (http or https).
        payload: The request body.
        timeout: Seconds to wait for the reply.
        expected: What the reply must be, for the error when it is a JSON list or value.

    Raises:
        RuntimeError: An HTTP error status, a redirect, a reply larger than
            :data:`MAX_REPLY_BYTES`, or a reply that is not a JSON object (or that gives a
            key twice in one object, or a number too long to read); the message says which.
    """
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as reply:
            data = reply.read(MAX_REPLY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = redirect_target(exc.headers.get("Location"))
            raise RuntimeError(f"the endpoint redirected (HTTP {exc.code}){where}; redirects are not followed: give that address") from None
        raise RuntimeError(f"the endpoint answered HTTP {exc.code}") from None
    if len(data) > MAX_REPLY_BYTES:
        raise RuntimeError(f"the endpoint's reply is larger than {MAX_REPLY_BYTES} bytes")
    try:
        value = json_loads(data, object_pairs_hook=_unique_keys)
    except TooLongNumber as exc:  # Python's message advised changing an interpreter limit
        raise RuntimeError(
            f"the endpoint's reply is not usable JSON: a number{exc.where} has more digits than can be read: {exc.shown}"
        ) from None
    except ValueError as exc:  # not JSON or UTF-8, a repeated key
        raise RuntimeError(f"the endpoint's reply is not usable JSON: {exc}") from None
    if not isinstance(value, dict):
        raise RuntimeError(f"the endpoint's reply is a JSON {type(value).__name__}, not {expected}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is refused (which one counts is a guess),
    the key quoted briefly with control characters escaped (:func:`brief_json`): it comes from the endpoint."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {brief_json(key)} is given twice in one object")
        seen[key] = value
    return seen


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Every redirect stays the HTTP error it is (:func:`post_json` reports it)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)
