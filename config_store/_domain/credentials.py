"""Passwords (argon2 hashes), generated secrets (SHA-256) and short-lived Bearer tokens.

Passwords people choose are stored as argon2id hashes. Secrets the server generates
itself (256 random bits, for machine accounts such as an edge's Flux pull credential)
cannot be guessed, so a salted SHA-256 protects them as well as argon2 would and costs
microseconds instead of tens of milliseconds to set and verify.
Verifying an argon2 hash costs tens of milliseconds, so it runs offloaded (in a native
thread on the gevent server: other requests go on meanwhile), and a successful Basic login is
remembered for a minute under a SHA-256 of the credentials. A mismatch is an answer, not an
error: the offloaded check returns False (an exception would cross the thread boundary and be
logged there).

Token lifetime: tokens follow ACS, 66 random bytes in base64 (88 characters), valid three
hours (:data:`TOKEN_LIFETIME_S`) and refused in their last minute (:data:`TOKEN_GRACE_S`),
held in memory (a restart asks clients for a fresh token, which the client library does on
401). A token never outlives the password it was obtained with: remembered logins and tokens
are both tagged with the stored hash they were proved against, and :meth:`Sessions.revoke`
ends them together when that hash stops being accepted (a password change or a principal's
deletion at once; a gracefully rotated-out password at its deadline or at its retirement).
Only a password obtains a token: ``POST /token`` with a Bearer token is refused, so a
stolen token cannot renew itself.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from collections.abc import Callable

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from serving import offload

TOKEN_LIFETIME_S = 3 * 3600
TOKEN_GRACE_S = 60
LOGIN_CACHE_S = 60.0

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    """An argon2id hash of ``password`` (offloaded: it takes tens of milliseconds)."""
    return offload.run(_hasher.hash, password)


GENERATED_PREFIX = "$sha256-generated$"


def generate_secret() -> tuple[str, str]:
    """A new random secret (43 URL-safe characters) and its stored hash."""
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    return secret, f"{GENERATED_PREFIX}{salt}${_digest(salt, secret)}"


def verify_password(password_hash: str | None, password: str) -> bool:
    """True if ``password`` matches ``password_hash`` (argon2 or a generated secret's)."""
    if not password_hash:
        return False
    if password_hash.startswith(GENERATED_PREFIX):
        salt, _, digest = password_hash[len(GENERATED_PREFIX):].partition("$")
        return secrets.compare_digest(_digest(salt, password), digest)
    return offload.run(_argon2_matches, password_hash, password)


def _argon2_matches(password_hash: str, password: str) -> bool:
    """The offloaded argon2 check; never raises for a wrong password or a bad hash."""
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def hash_tag(password_hash: str | None) -> str:
    """A short name for a stored hash, to tell which one a remembered login matched."""
    return _digest("hash", password_hash or "")[:16]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class Sessions:
    """Remembered logins and issued tokens, each tagged with the password hash it was
    obtained with (:func:`hash_tag`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # digest of (name, password) -> (principal, hash tag, wall-clock expiry)
        self._logins: dict[str, tuple[str, str, float]] = {}
        # digest of the token -> (principal, hash tag, wall-clock second it is refused from)
        self._tokens: dict[str, tuple[str, str, float]] = {}
        self._revocation_listeners: list[Callable[[str], None]] = []

    def subscribe_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(principal)`` after any change that ends or shortens the life of
        ``principal``'s tokens (a password change, a deletion); returns an unsubscribe
        function. Listeners must not block: they re-check with :meth:`token_valid_until`."""
        with self._lock:
            self._revocation_listeners = [*self._revocation_listeners, listener]

        def unsubscribe() -> None:
            with self._lock:
                self._revocation_listeners = [
                    x for x in self._revocation_listeners if x is not listener]

        return unsubscribe

    def _revoked(self, principal: str) -> None:
        for listener in self._revocation_listeners:
            listener(principal)

    def remembered_login(self, name: str, password: str) -> tuple[str, str] | None:
        """``(principal, hash tag)`` of a recently verified login, or None."""
        key = _digest(name, password)
        with self._lock:
            hit = self._logins.get(key)
        if hit and hit[2] > time.time():
            return hit[0], hit[1]
        return None

    def remember_login(self, name: str, password: str, principal: str, tag: str,
                       until: float | None = None) -> None:
        """Remember a login verified against the hash tagged ``tag`` for a minute (or until
        ``until``, epoch seconds, if sooner)."""
        expiry = time.time() + LOGIN_CACHE_S
        if until is not None:
            expiry = min(expiry, until)
        with self._lock:
            self._logins[_digest(name, password)] = (principal, tag, expiry)

    def revoke(self, principal: str, keep: str | None = None,
               until: float | None = None) -> None:
        """End ``principal``'s remembered logins and tokens, except those obtained with the
        hash tagged ``keep``, which end at ``until`` (epoch seconds) at the latest if given;
        then tell the revocation listeners."""

        def kept(table: dict[str, tuple[str, str, float]]) -> dict[str, tuple[str, str, float]]:
            out = {}
            for key, (who, tag, end) in table.items():
                if who != principal:
                    out[key] = (who, tag, end)
                elif keep is not None and tag == keep:
                    out[key] = (who, tag, end if until is None else min(end, until))
            return out

        with self._lock:
            self._logins = kept(self._logins)
            self._tokens = kept(self._tokens)
        self._revoked(principal)

    def issue_token(self, principal: str, tag: str,
                    until: float | None = None) -> tuple[str, int]:
        """A new token for a login proved against the hash tagged ``tag`` and its expiry in
        ms since the epoch; refused from ``until`` (epoch seconds) on, if that is sooner than
        its lifetime (a rotated-out password's deadline)."""
        token = base64.b64encode(secrets.token_bytes(66)).decode()
        now = time.time()
        refused_from = now + TOKEN_LIFETIME_S - TOKEN_GRACE_S
        if until is not None:
            refused_from = min(refused_from, until)
        with self._lock:
            self._tokens = {k: v for k, v in self._tokens.items() if v[2] > now}
            self._tokens[_digest(token)] = (principal, tag, refused_from)
        return token, int((refused_from + TOKEN_GRACE_S) * 1000)

    def token_valid_until(self, token: str) -> float | None:
        """The epoch second from which ``token`` is refused, or None if it already is."""
        with self._lock:
            hit = self._tokens.get(_digest(token))
        if hit is None:
            return None
        return hit[2] if hit[2] > time.time() else None

    def token_principal(self, token: str) -> str | None:
        """The principal a valid token was issued to, or None."""
        with self._lock:
            hit = self._tokens.get(_digest(token))
        if hit and hit[2] > time.time():
            return hit[0]
        return None
