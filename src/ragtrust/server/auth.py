"""Scoped API keys: who may read, who may write, who may vet.

``RAGTRUST_API_KEYS`` is a comma-separated list of entries ``[name=]key[:scope+scope]``:

=========  =========================================================================
scope      lets the key
=========  =========================================================================
``read``   ask, screen, verify, align; read documents and ``/metrics``
``write``  ingest documents (content only; the API deletes nothing)
``vet``    change a trust tier: ``vetted`` / ``unvetted`` / ``quarantined``,
           including a ``tier`` sent with an ingest
=========  =========================================================================

A key without scopes gets ``read+write``: vetting is never implied by ingesting (issue 19:
anyone who could ingest could re-vet a poisoned edit). The name is what the provenance
ledger records as the actor of a change; an unnamed key is recorded as
``key-<first 8 hex of sha256(key)>`` (never the key itself). A server without keys (loopback
only) serves everyone as ``anonymous`` with ``read+write``: vetting over HTTP then needs a
key with ``vet``.

A name is split off only when the first ``=`` is followed by more than ``=`` padding, so
base64 keys (``openssl rand -base64 32`` ends in ``=``) stay whole; a short ``ops=`` is a
name without its key (an error). A key containing ``:`` must spell out its scopes
(``a:b:read``): the scopes are what follows the last ``:``.

Example:
    >>> keys = parse_api_keys("ops=s3cret:read+write+vet, reader=r34d:read, legacy")
    >>> [(k.name, sorted(k.scopes)) for k in keys]
    [('ops', ['read', 'vet', 'write']), ('reader', ['read']), ('', ['read', 'write'])]
    >>> keys[2].actor  # an unnamed key is recorded by a hash, never by itself
    'key-c49fea74'
    >>> parse_api_keys("x:admin")
    Traceback (most recent call last):
    ...
    ragtrust.errors.ConfigError: RAGTRUST_API_KEYS entry 1: unknown scope 'admin'; expected read, write or vet
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ragtrust.errors import ConfigError

Scope = Literal["read", "write", "vet"]
#: every scope, in the order they are listed in messages
SCOPES: tuple[Scope, ...] = ("read", "write", "vet")
#: what a key written without scopes, and the anonymous user of a keyless server, may do
DEFAULT_SCOPES: frozenset[Scope] = frozenset({"read", "write"})
#: the actor recorded for requests to a server without keys
ANONYMOUS = "anonymous"
#: where :class:`~ragtrust.server.middleware.ApiKeyMiddleware` leaves the caller's principal
PRINCIPAL_KEY = "ragtrust.principal"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
#: ``<text>=`` is a base64 key with its padding (``openssl rand -base64 32``) when ``<text>`` is
#: at least this long, else a name whose key is missing
_MIN_PADDED = 16


@dataclass(frozen=True)
class Principal:
    """Who is calling and what they may do.

    Attributes:
        name: the actor recorded in the provenance ledger (a key's name, ``key-<hash>``,
            or ``anonymous``).
        scopes: a subset of :data:`SCOPES`.
        authenticated: whether a key was presented (``False`` for ``anonymous``).
    """

    name: str
    scopes: frozenset[Scope]
    authenticated: bool = True

    def can(self, scope: Scope) -> bool:
        """Tell whether this principal holds ``scope``."""
        return scope in self.scopes

    def refusal(self, scope: Scope, action: str) -> str:
        """The one-line 403 message for doing ``action`` without ``scope``."""
        if self.name == ANONYMOUS:
            return (
                f"{action} needs the {scope!r} scope, and this server has no API keys: start it with "
                f"RAGTRUST_API_KEYS='name=<secret>:read+write+vet' and send that key, or use the CLI "
                f"(`ragtrust vet` / `ragtrust quarantine`)"
            )
        held = "+".join(s for s in SCOPES if s in self.scopes) or "none"
        return f"this key lacks the {scope!r} scope needed for {action} (key {self.name!r} has: {held})"


#: the caller of a server without API keys
ANONYMOUS_PRINCIPAL = Principal(ANONYMOUS, DEFAULT_SCOPES, authenticated=False)
#: a request no middleware identified: may do nothing (fail closed)
_UNIDENTIFIED = Principal("unidentified", frozenset(), authenticated=False)


def principal_of(request: Any) -> Principal:
    """The principal :class:`~ragtrust.server.middleware.ApiKeyMiddleware` left on ``request``.

    A request it did not see holds no scope at all (fail closed).
    """
    principal = request.scope.get(PRINCIPAL_KEY)
    return principal if isinstance(principal, Principal) else _UNIDENTIFIED


@dataclass(frozen=True)
class ApiKey:
    """One configured API key.

    Attributes:
        name: the key's name (``""`` when unnamed); recorded in the ledger as the actor.
        secret: the key itself (left out of ``repr``).
        scopes: what the key may do (see the module docstring).
    """

    name: str
    secret: str = field(repr=False)
    scopes: frozenset[Scope] = DEFAULT_SCOPES

    @property
    def actor(self) -> str:
        """The name recorded in the ledger: the key's name, else ``key-<8 hex of sha256(secret)>``."""
        return self.name or "key-" + hashlib.sha256(self.secret.encode("utf-8")).hexdigest()[:8]

    def principal(self) -> Principal:
        """The principal a request presenting this key acts as."""
        return Principal(self.actor, self.scopes)


def _parse_scopes(text: str, where: str) -> frozenset[Scope]:
    scopes: set[Scope] = set()
    for word in text.split("+"):
        scope = word.strip().lower()
        if scope not in SCOPES:
            raise ConfigError(f"{where}: unknown scope {word.strip()!r}; expected read, write or vet")
        scopes.add(scope)  # narrowed to a Scope by the check above
    return frozenset(scopes)


def parse_api_key(entry: str, where: str = "API key") -> ApiKey:
    """Parse one ``[name=]key[:scope+scope]`` entry (see the module docstring).

    Raises:
        ConfigError: an empty key, a bad name or an unknown scope.
    """
    text = entry.strip()
    scopes = DEFAULT_SCOPES
    if ":" in text:
        text, _, scope_text = text.rpartition(":")
        scopes = _parse_scopes(scope_text, where)
    name = ""
    head, eq, tail = text.partition("=")
    if eq and tail.strip("="):
        if tail.startswith("="):
            raise ConfigError(f"{where}: a key that starts with '=' cannot follow a name; use another key")
        if not _NAME.fullmatch(head.strip()):
            raise ConfigError(
                f"{where}: key name {head.strip()!r} is not valid; use letters, digits and . _ @ - (at most 64)"
            )
        name, text = head.strip(), tail
    elif eq and not tail and len(head.strip()) < _MIN_PADDED:  # "ops=" is a name without its key
        raise ConfigError(
            f"{where}: the key after '{head.strip()}=' is empty (if the '=' belongs to the key, name it: name=key=)"
        )
    secret = text.strip()
    if not secret:
        raise ConfigError(f"{where}: the key is empty")
    if name == ANONYMOUS:
        raise ConfigError(f"{where}: {ANONYMOUS!r} is reserved for the caller of a server without keys")
    return ApiKey(name=name, secret=secret, scopes=scopes)


def parse_api_keys(spec: str | Iterable[str | ApiKey], *, source: str = "RAGTRUST_API_KEYS") -> list[ApiKey]:
    """Parse keys from a comma-separated string or a list of entries / :class:`ApiKey` objects.

    Blank entries are ignored (a trailing comma is harmless).

    Raises:
        ConfigError: a bad entry, or the same key (or name) given twice.
    """
    entries: Iterable[str | ApiKey] = spec.split(",") if isinstance(spec, str) else spec
    keys: list[ApiKey] = []
    for i, entry in enumerate(entries, 1):
        if isinstance(entry, ApiKey):
            key = entry
        elif entry.strip():
            key = parse_api_key(entry, f"{source} entry {i}")
        else:
            continue
        if not key.secret:
            raise ConfigError(f"{source} entry {i}: the key is empty")
        if any(k.secret == key.secret for k in keys):
            raise ConfigError(f"{source} entry {i}: the same key is given twice; each key must be unique")
        if key.name and any(k.name == key.name for k in keys):
            raise ConfigError(f"{source} entry {i}: the key name {key.name!r} is given twice; names must be unique")
        keys.append(key)
    return keys


_DOCUMENT_TIER = re.compile(r"^/v1/documents/.+/tier$")


def required_scope(method: str, path: str) -> Scope:
    """The scope a request needs, by method and path (the body may ask for more: an ingest ``tier``).

    Example:
        >>> required_scope("POST", "/v1/ask"), required_scope("POST", "/v1/documents")
        ('read', 'write')
        >>> required_scope("POST", "/v1/documents/kb/a.md/tier")
        'vet'
    """
    if path == "/v1/documents" and method == "POST":
        return "write"
    if path.startswith("/v1/documents/"):
        if method == "POST" and _DOCUMENT_TIER.match(path):
            return "vet"
        return "read" if method in ("GET", "HEAD") else "write"
    # the /v1 trust endpoints take a body but only compute: reading; anything else that changes state writes
    if method in ("GET", "HEAD") or path.startswith(("/v1/ask", "/v1/screen", "/v1/verify", "/v1/align")):
        return "read"
    return "write"


__all__ = [
    "ANONYMOUS",
    "ANONYMOUS_PRINCIPAL",
    "DEFAULT_SCOPES",
    "PRINCIPAL_KEY",
    "SCOPES",
    "ApiKey",
    "Principal",
    "Scope",
    "parse_api_key",
    "parse_api_keys",
    "principal_of",
    "required_scope",
]
