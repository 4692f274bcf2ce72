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
hours (:data:`TOKEN_LIFETIME_S`) and refused in their last minute (:data:`TOKEN_GRACE_S`).
They are stored by their SHA-256 in the database, so a token works on every replica and
survives a restart. A token never outlives the password it was obtained with: remembered
logins and tokens are both tagged with the stored hash they were proved against and are
accepted only while that hash is (the principal's current one, or its previous one until
its deadline): a password change or a principal's deletion ends them at once, on every
replica as soon as it learns of the change (:meth:`Sessions.revoke`).
Only a password obtains a token: ``POST /token`` with a Bearer token is refused, so a
stolen token cannot renew itself. ``DELETE /token`` ends the token it is sent with (a
sign-out), on every replica and with the notify sessions it opened.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import secrets
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from argon2 import Parameters, PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

from fplus.serving.background import offload

from ..._storage import Storage, TokenRow, Writer

TOKEN_LIFETIME_S = 3 * 3600
TOKEN_GRACE_S = 60
LOGIN_CACHE_S = 60.0

ARGON2_PROFILE_VARIABLE = "FPLUS_ARGON2_PROFILE"
ARGON2_PROFILES: dict[str, Parameters] = {
    "RFC_9106_LOW_MEMORY": profiles.RFC_9106_LOW_MEMORY,  # the default: 64 MiB, 3 passes
    "RFC_9106_HIGH_MEMORY": profiles.RFC_9106_HIGH_MEMORY,  # 2 GiB, 1 pass
    "CHEAPEST": profiles.CHEAPEST,  # for test suites only: argon2id, but no work factor
}
"""argon2-cffi's named parameter sets new hashes are made with (``$FPLUS_ARGON2_PROFILE``);
a stored hash names its own parameters, so changing the profile never locks anyone out."""


CHECKS_PER_CPU_SECOND: dict[str, float] = {
    "RFC_9106_LOW_MEMORY": 4.0,  # a fifth of a CPU-second each: 5 a second per CPU, less margin
    "RFC_9106_HIGH_MEMORY": 0.5,  # 2 GiB each: memory, not CPU, bounds these
    "CHEAPEST": 0.0,  # no work factor: no limit
}
"""argon2 checks a second the server takes on per CPU it may use, by profile."""


def password_check_rate() -> float:
    """How many argon2 password checks a second this process serves with the hasher of
    ``$FPLUS_ARGON2_PROFILE`` on the CPUs it may use (0: no limit); the default of the
    Config Store's ``--admit-password-rate``."""
    password_hasher()  # an unknown profile: ValueError naming it
    name = os.environ.get(ARGON2_PROFILE_VARIABLE, "RFC_9106_LOW_MEMORY")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return CHECKS_PER_CPU_SECOND[name] * max(1, cpus or 1)


@functools.cache
def password_hasher() -> PasswordHasher:
    """The hasher of ``$FPLUS_ARGON2_PROFILE`` (ValueError naming it if unknown)."""
    name = os.environ.get(ARGON2_PROFILE_VARIABLE, "RFC_9106_LOW_MEMORY")
    if name not in ARGON2_PROFILES:
        raise ValueError(f"{ARGON2_PROFILE_VARIABLE}={name!r} is none of "
                         f"{', '.join(ARGON2_PROFILES)}")
    return PasswordHasher.from_parameters(ARGON2_PROFILES[name])


def hash_password(password: str) -> str:
    """An argon2id hash of ``password`` (offloaded: it takes tens of milliseconds)."""
    return offload.run(password_hasher().hash, password)


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


def costly_check(password_hash: str | None) -> bool:
    """Whether checking a password against ``password_hash`` costs an argon2 verification
    (a generated secret's hash costs microseconds; no hash, nothing)."""
    return bool(password_hash) and not str(password_hash).startswith(GENERATED_PREFIX)


def _argon2_matches(password_hash: str, password: str) -> bool:
    """The offloaded argon2 check; never raises for a wrong password or a bad hash."""
    try:
        return password_hasher().verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def hash_tag(password_hash: str | None) -> str:
    """A short name for a stored hash, to tell which one a remembered login matched."""
    return _digest("hash", password_hash or "")[:16]


def token_digest(token: str) -> str:
    """What the database keeps of a token (never its text)."""
    return _digest(token)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class _Accepted:
    """The hash tags a principal's logins and tokens may carry now."""

    current: str | None
    previous: str | None
    previous_until: float

    def until(self, tag: str, now: float) -> float | None:
        """The epoch second until which ``tag`` is accepted (inf: while it stays current)."""
        if tag == self.current:
            return float("inf")
        if tag == self.previous and self.previous_until > now:
            return self.previous_until
        return None


TOKEN_PRUNE_EVERY_S = 60.0


class Sessions:
    """Remembered logins (in memory, per process) and issued tokens (in the database, cached
    here), each tagged with the password hash it was obtained with (:func:`hash_tag`) and
    valid only while that hash is accepted."""

    def __init__(self, storage: Storage,
                 write: Callable[[], AbstractContextManager[Writer]] | None = None) -> None:
        self._storage = storage
        self._write = write or storage.write
        """How a token is stored: the core's write, which keeps its lock order."""
        self._lock = threading.Lock()
        # digest of (name, password) -> (principal, hash tag, wall-clock expiry)
        self._logins: dict[str, tuple[str, str, float]] = {}
        self._tokens: dict[str, TokenRow] = {}  # by digest of the token
        self._accepted: dict[str, _Accepted] = {}  # by principal
        self._revocation_listeners: list[Callable[[str], None]] = []
        self._pruned_at = 0.0

    def subscribe_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(principal)`` after any change that may end or shorten the life of
        ``principal``'s tokens (a password change, a deletion); returns an unsubscribe
        function. Listeners must not block: they re-check with :meth:`token_valid_until`."""
        with self._lock:
            self._revocation_listeners = [*self._revocation_listeners, listener]

        def unsubscribe() -> None:
            with self._lock:
                self._revocation_listeners = [
                    x for x in self._revocation_listeners if x is not listener]

        return unsubscribe

    def _accepted_until(self, principal: str, tag: str, now: float) -> float | None:
        with self._lock:
            accepted = self._accepted.get(principal)
        if accepted is None:
            row = self._storage.reader().principal_credentials(principal)
            accepted = _Accepted(
                hash_tag(row.password_hash) if row and row.password_hash else None,
                hash_tag(row.previous_hash) if row and row.previous_hash else None,
                (row.previous_until or 0.0) if row else 0.0)
            with self._lock:
                self._accepted[principal] = accepted
        return accepted.until(tag, now)

    def remembered_login(self, name: str, password: str) -> tuple[str, str] | None:
        """``(principal, hash tag)`` of a recently verified login still accepted, or None."""
        with self._lock:
            hit = self._logins.get(_digest(name, password))
        now = time.time()
        if hit and hit[2] > now and self._accepted_until(hit[0], hit[1], now):
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

    def revoke(self, principal: str) -> None:
        """``principal``'s password or existence changed: forget what this process
        remembered of it (the database decides again), then tell the revocation listeners."""
        with self._lock:
            self._accepted.pop(principal, None)
            self._logins = {k: v for k, v in self._logins.items() if v[0] != principal}
            self._tokens = {k: v for k, v in self._tokens.items() if v.principal != principal}
        for listener in self._revocation_listeners:
            listener(principal)

    def revoke_all(self) -> None:
        """Forget everything remembered (after this replica missed changes)."""
        with self._lock:
            principals = {v[0] for v in self._logins.values()} | {
                v.principal for v in self._tokens.values()} | set(self._accepted)
            self._accepted, self._logins, self._tokens = {}, {}, {}
        for principal in principals:
            for listener in self._revocation_listeners:
                listener(principal)

    def issue_token(self, principal: str, tag: str,
                    until: float | None = None) -> tuple[str, int]:
        """A new token for a login proved against the hash tagged ``tag`` and its expiry in
        ms since the epoch; refused from ``until`` (epoch seconds) on, if that is sooner than
        its lifetime (a rotated-out password's deadline). Stored before it is returned."""
        token = base64.b64encode(secrets.token_bytes(66)).decode()
        now = time.time()
        refused_from = now + TOKEN_LIFETIME_S - TOKEN_GRACE_S
        if until is not None:
            refused_from = min(refused_from, until)
        row = TokenRow(_digest(token), principal, tag, refused_from)
        prune = now - self._pruned_at > TOKEN_PRUNE_EVERY_S
        with self._write() as w:
            w.put_token(row)
            if prune:
                w.delete_tokens_refused_before(now - TOKEN_GRACE_S)
        with self._lock:
            if prune:
                self._pruned_at = now
                self._tokens = {k: v for k, v in self._tokens.items() if v.refused_from > now}
            self._tokens[row.digest] = row
        return token, int((refused_from + TOKEN_GRACE_S) * 1000)

    def _token(self, token: str) -> TokenRow | None:
        digest = _digest(token)
        with self._lock:
            row = self._tokens.get(digest)
        if row is None:
            row = self._storage.reader().token(digest)  # from another replica, or a restart
            if row is not None:
                with self._lock:
                    self._tokens[digest] = row
        return row

    def _valid_until(self, row: TokenRow | None) -> float | None:
        now = time.time()
        if row is None or row.refused_from <= now:
            return None
        accepted = self._accepted_until(row.principal, row.tag, now)
        return None if accepted is None else min(row.refused_from, accepted)

    def token_valid_until(self, token: str) -> float | None:
        """The epoch second from which ``token`` is refused, or None if it already is."""
        return self._valid_until(self._token(token))

    def token_principal(self, token: str) -> str | None:
        """The principal a valid token was issued to, or None."""
        row = self._token(token)
        return row.principal if row is not None and self._valid_until(row) else None
