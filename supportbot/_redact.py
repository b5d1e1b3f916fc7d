"""Keeping the model API key out of every text supportbot writes.

Two defences. ``check_api_key`` refuses, when settings are read or a client is built, a key that
no HTTP header can carry: a line break from a ``.env`` file saved with Windows line endings, any
other control character, a space, a non-ASCII character. httpx would otherwise fail while
encoding the Authorization header, with an error that quotes the header, key and all.
``Redactor`` scrubs a key from text that may hold it anyway (an error body that echoes the
request, a transport error), in the forms it takes there: as written, escaped by ``repr`` or
JSON, and after "Bearer"; and it unlinks the exceptions chained below an error that quote it.
"""

from __future__ import annotations

import json
import re
import unicodedata

from .errors import ConfigError

__all__ = ["MASK", "Redactor", "check_api_key", "hide_password", "url_password"]

MASK = "***"
# An Authorization header quoted in an error: whatever follows "Bearer" is a credential. Eight
# characters at least, so a provider's sentence ("Bearer token missing") stays readable.
_BEARER = re.compile(r"(?i)(\bbearer\s+)[^\s'\"\\,;}\]]{8,}")
# The password of a URL ("scheme://user:password@host") or of a libpq string ("password=...").
_URL_PASSWORD = re.compile(r"(?P<head>://[^:/@\s]*:)(?P<secret>[^@/\s]*)(?=@)")
_KEYWORD_PASSWORD = re.compile(
    r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE
)
# A run of the key this long is still worth hiding on its own (a key cut by an escape sequence).
_MIN_PIECE = 8


def check_api_key(key: str | None, *, name: str = "SUPPORTBOT_LLM_API_KEY") -> None:
    """Raise ``ConfigError`` naming ``name`` (never the key) if ``key`` cannot be sent in a header.

    A key may hold printable ASCII only (``!`` to ``~``). The message says what kind of
    character was found and at which position of how many (a stray line break usually sits
    last), which is enough to fix it and reveals nothing of the key.
    """
    if not key:
        return
    bad = next((i for i, char in enumerate(key) if not "!" <= char <= "~"), None)
    if bad is None:
        return
    char = key[bad]
    hint = (
        " (a .env file saved with Windows line endings adds a carriage return to every value)"
        if char in "\r\n"
        else ""
    )
    raise ConfigError(
        f"{name} holds {_kind(char)} at character {bad + 1} of {len(key)}; an API key may hold "
        f"printable ASCII only. Set it again without that character{hint}",
        reason="api_key",
        setting=name,
        position=bad + 1,
    )


def _kind(char: str) -> str:
    if char in "\r\n":
        return "a line break (CR or LF)"
    if char == " ":
        return "a space"
    if unicodedata.category(char) == "Cc":
        return f"a control character (U+{ord(char):04X})"
    return "a non-ASCII character"


def hide_password(url: str) -> str:
    """``url`` with the password it holds, if any, replaced by ``***``: for reprs and messages."""
    url = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, url)
    return _KEYWORD_PASSWORD.sub(lambda m: m["head"] + MASK, url)


def url_password(url: str) -> str | None:
    """The password ``url`` holds, if any (to be scrubbed from texts that may quote it)."""
    found = _URL_PASSWORD.search(url) or _KEYWORD_PASSWORD.search(url)
    return found["secret"].strip("'") if found and found["secret"] else None


class Redactor:
    """Replaces secrets, in every form an error text may quote them in, by ``***``."""

    def __init__(self, *secrets: str | None) -> None:
        forms: set[str] = set()
        for secret in filter(None, secrets):
            forms |= {
                secret,
                secret.strip(),
                repr(secret)[1:-1],
                json.dumps(secret)[1:-1],
                repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
            }
            forms |= {piece for piece in re.split(r"[^!-~]+", secret) if len(piece) >= _MIN_PIECE}
        # Longest first, so a form is never left half-replaced by a shorter one inside it.
        self._forms = sorted((form for form in forms if form), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, MASK)
        return _BEARER.sub(lambda m: m[1] + MASK, text)

    def leaks(self, text: str) -> bool:
        """Whether ``text`` holds the secret in any of its forms."""
        return any(form in text for form in self._forms)

    def chain_leaks(self, exc: BaseException) -> bool:
        """Whether ``exc`` or an exception chained to it quotes the secret."""
        return any(self.leaks(_text_of(link)) for link in _chain(exc))

    def cut_leaking_causes(self, error: BaseException) -> None:
        """Unlink, below ``error``, every exception that quotes the secret, with what hangs below it.

        ``error``'s own message is redacted already. Providers and proxies sometimes echo the
        request back, and httpx quotes a header it cannot send: such a cause would put the key in
        any traceback a host application logs.
        """
        for link in _chain(error):
            if link.__cause__ is not None and self.leaks(_text_of(link.__cause__)):
                link.__cause__ = None
                link.__suppress_context__ = True
            if link.__context__ is not None and self.leaks(_text_of(link.__context__)):
                link.__context__ = None

    def __repr__(self) -> str:
        return "Redactor(***)"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception reachable through causes and contexts, each once."""
    found: dict[int, BaseException] = {}
    todo = [exc]
    while todo:
        link = todo.pop()
        if id(link) in found:
            continue
        found[id(link)] = link
        todo += [e for e in (link.__cause__, link.__context__) if e is not None]
    return list(found.values())


def _text_of(exc: BaseException) -> str:
    return f"{exc!s} {exc!r} {exc.args!r}"
