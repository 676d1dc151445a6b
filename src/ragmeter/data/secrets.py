"""Keeping credentials out of everything ragmeter stores or prints.

An API key can reach an error message in many ways: a server echoes the request URL
(``https://user:KEY@host/v1`` or ``...?api-key=KEY``), a client library quotes a header. So
secrets are removed where text leaves the program, not where it is made:

- :func:`register` records the secret values of the run (the judge's API key, the password
  and secret query values of its URL, and the Basic authorization its user information
  becomes); every file writer (:mod:`ragmeter.data.files`) and the console replace them
  with ``***``, wherever they appear.
- :func:`redact` also masks what looks like a credential in any text: the user information
  of URLs, query parameters named like keys, tokens or signatures, bearer and basic
  authorization tokens and ``sk-`` keys. Error texts that are stored (unscored reasons,
  tracebacks) or printed go through it.
"""

from __future__ import annotations

import base64
import re
import threading
from urllib.parse import parse_qsl, unquote, urlsplit

MASK = "***"

#: Query parameter names whose values are credentials.
_SECRET_PARAMS = (
    r"(?:api[-_]?key|apikey|key|token|access[-_]?token|auth|authorization|secret|client[-_]?secret|password|passwd|pwd|sig|signature|code)"
)
_PATTERNS = (
    (re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@'\"<>]+@"), r"\1" + MASK + "@"),
    (re.compile(r"([?&;]" + _SECRET_PARAMS + r"=)[^&#\s'\"<>]+", re.IGNORECASE), r"\1" + MASK),
    (re.compile(r"(\bBearer\s+)[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE), r"\1" + MASK),
    # "Basic" as HTTP writes it, then a base64 token (not a lower-case word: "basic approach").
    (re.compile(r"(\bBasic\s+)(?![a-z]+\b)[A-Za-z0-9+/]{8,}={0,2}"), r"\1" + MASK),
    (re.compile(r"(['\"]?(?:api[-_]?key|authorization|x-api-key)['\"]?\s*[:=]\s*['\"]?)[^'\"\s,}]{6,}", re.IGNORECASE), r"\1" + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{12,}"), "sk-" + MASK),
)

_registered: set[str] = set()
_guard = threading.Lock()


def register(*values: str | None) -> None:
    """Remember secret values (shorter than 4 characters are ignored: too common to mask)."""
    with _guard:
        for value in values:
            if value and len(value) >= 4:
                _registered.add(value)
                if unquote(value) != value and len(unquote(value)) >= 4:
                    _registered.add(unquote(value))


def register_url(url: str | None) -> None:
    """Remember the secret parts of ``url``: its user name and password, and the values of
    query parameters named like credentials."""
    if not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    secrets = [parts.password, parts.username if parts.password else None]
    if parts.username is not None:
        # HTTP clients send the user information as a Basic Authorization header: a server
        # that echoes its headers in an error message echoes the credentials in base64.
        userinfo = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        secrets.append(base64.b64encode(userinfo.encode("utf-8")).decode("ascii"))
    secrets += [
        value for name, value in parse_qsl(parts.query, keep_blank_values=False) if re.fullmatch(_SECRET_PARAMS, name, re.IGNORECASE)
    ]
    register(*secrets)


def mask_registered(text: str) -> str:
    """``text`` with every registered secret value replaced by ``***`` (fast when none is in it)."""
    if not _registered:
        return text
    for secret in _registered:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact(text: str) -> str:
    """``text`` with registered secrets and anything that looks like a credential masked."""
    text = mask_registered(text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redirect_target(location: str | None) -> str:
    """Where a redirect's ``Location`` header points, for an error message: ``" to
    scheme://host[:port]/path"`` without its user information, query or fragment (they may
    hold credentials), ``" to /path on the same server"`` for a relative one, or ``""``."""
    try:
        target = urlsplit(location or "")
        port = f":{target.port}" if target.port else ""
    except ValueError:  # a port that is no number, a bracketed host that is no address
        return ""
    if target.hostname:
        return f" to {target.scheme}://{target.hostname}{port}{target.path}"
    return f" to {target.path} on the same server" if target.path else ""
