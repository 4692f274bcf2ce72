"""Auto-pull mirrors: a repo entry's ``pull`` keeps branches in step with external repos.

The entry shape is upstream's (acs-git ``lib/auto-pull.js``)::

    "pull": {"<branch>": {"url": "https://…", "ref": "main", "interval": "1h",
                          "merge": "<branch>", "auth": {"secretRef": "<file>"}}}

Every ``interval`` (``never``: once at start; default 1 h), ``ref`` of ``url`` is fetched and
``<branch>`` set to it, whatever it held: it is the mirror's branch. ``merge`` names a branch
that follows too, but only while it is missing or still where the mirror branch was before
(a branch someone moved on is never overwritten). No other branch is touched. ``auth`` names
a file in the secrets directory holding ``{"username", "password"}`` or ``user:pass``. Unlike
upstream, a spec without ``auth`` is fine, and where a URL may lead is limited
(:mod:`.mirror_urls`: https, no private addresses, not this server, credentials over https
only), checked before every fetch. Credentials are offered once per fetch: an upstream that
refuses them ends the fetch, it does not get them again.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fplus.git.repo.errors import GitError
from fplus.git.repo.mirror import mirror_branch
from fplus.serving.background import offload
from fplus.serving.background.periodic import Periodic

from .mirror_urls import STRICT, MirrorPolicy, MirrorUrlRefused

log = logging.getLogger(__name__)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_BRANCH = re.compile(r"^(?!.*\.\.)(?!/)(?!.*//)[A-Za-z0-9._/-]{1,200}(?<![./])$")
NEVER = -1.0


def parse_interval(value: Any) -> float:
    """Seconds between pulls: ``"1h"``, ``"30s"``, ``"500ms"``, a number of seconds, or
    ``"never"`` (:data:`NEVER`: once). ValueError otherwise."""
    if value is None:
        return 3600.0
    if value == "never":
        return NEVER
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    found = _DURATION.match(value) if isinstance(value, str) else None
    if not found or float(found[1]) <= 0:
        raise ValueError(f"interval {value!r} is not a duration (e.g. 30s, 5m, 1h, never)")
    return float(found[1]) * _UNITS[found[2]]


@dataclass(frozen=True)
class PullSpec:
    """One mirrored branch of one repo."""

    repo: str
    branch: str
    url: str
    ref: str = "main"
    interval: float = 3600.0
    merge: str | None = None
    secret: str | None = None

    @property
    def desc(self) -> str:
        return f"{self.repo}@{self.branch}"


Refusal = Callable[[str, str, str], None]
"""``refused(repo, branch, why)``: told of each spec left out."""


def _log_refusal(repo: str, branch: str, why: str) -> None:
    log.error("mirror %s@%s refused: %s", repo, branch, why)


def specs(repo: str, entry: dict[str, Any], policy: MirrorPolicy = STRICT,
          refused: Refusal = _log_refusal) -> list[PullSpec]:
    """The pull specs of a repo's entry; a malformed one, or one whose URL ``policy``
    refuses without resolving it, is left out (``refused`` is told, by default the log)."""
    pulls = entry.get("pull")
    found: list[PullSpec] = []
    for branch, conf in (pulls.items() if isinstance(pulls, dict) else ()):
        try:
            found.append(_spec(repo, branch, conf, policy))
        except ValueError as exc:
            refused(repo, branch, str(exc))
    return found


def _spec(repo: str, branch: str, conf: Any, policy: MirrorPolicy) -> PullSpec:
    if not isinstance(conf, dict) or not isinstance(conf.get("url"), str):
        raise ValueError("a pull spec is an object with a url")
    url = conf["url"]
    auth = conf.get("auth")
    policy.check_spec(url, credentials=isinstance(auth, dict) and "secretRef" in auth)
    ref, merge = conf.get("ref", "main"), conf.get("merge")
    for name in (branch, ref, *([merge] if merge is not None else [])):
        if not isinstance(name, str) or not _BRANCH.match(name):
            raise ValueError(f"{name!r} is not a branch name")
    if merge == branch:
        raise ValueError("merge must name another branch")
    secret = auth.get("secretRef") if isinstance(auth, dict) else None
    if secret is not None and (not isinstance(secret, str) or "/" in secret
                               or secret.startswith(".")):
        raise ValueError("auth.secretRef must be a file name in the secrets directory")
    return PullSpec(repo, branch, url, ref, parse_interval(conf.get("interval")), merge, secret)


def read_credentials(secrets_dir: Path, name: str) -> tuple[str, str] | None:
    """``(username, password)`` from ``secrets_dir/name`` (or one directory down, as
    mounted Secrets are): JSON ``{"username", "password"}`` or ``user:pass``."""
    for path in (secrets_dir / name, *sorted(secrets_dir.glob(f"*/{name}"))):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        try:
            doc = json.loads(text)
        except ValueError:
            user, sep, password = text.partition(":")
            return (user, password) if sep and user else None
        if isinstance(doc, dict) and isinstance(doc.get("username"), str) \
                and isinstance(doc.get("password"), str):
            return doc["username"], doc["password"]
        return None
    return None


def update(repo_path: Path, spec: PullSpec, credentials: tuple[str, str] | None) -> str:
    """Fetch ``spec.ref`` into ``spec.branch`` (and ``merge`` when it may follow); the
    fetched commit. :class:`GitError` when the fetch fails."""
    done = mirror_branch(repo_path, spec.url, spec.ref, spec.branch, spec.merge, credentials)
    if done.follower_left:
        log.info("mirror %s: leaving %s at %s (moved on since)", spec.desc, spec.merge,
                 done.follower_at)
    return done.commit


class Mirrors:
    """Runs every repo's pull specs on their intervals (one thread, one pull at a time; each
    fetch off the gevent hub through :mod:`fplus.serving.background.offload`)."""

    def __init__(self, entries: Callable[[], dict[str, dict[str, Any]]],
                 ensure_repo: Callable[[str], Path], secrets_dir: Path,
                 policy: MirrorPolicy = STRICT, *, tick: float = 1.0) -> None:
        self.entries, self.ensure_repo, self.secrets_dir = entries, ensure_repo, secrets_dir
        self.policy, self.tick = policy, tick
        self._due: dict[PullSpec, float] = {}
        self._refused: set[tuple[str, str, str]] = set()
        self._loop = Periodic("mirrors", tick, self.run_due)
        self.start, self.stop = self._loop.start, self._loop.stop

    def current(self) -> list[PullSpec]:
        """Every valid spec of every configured repo (each refusal logged once, not at
        every pass)."""
        refusals: set[tuple[str, str, str]] = set()
        found = [spec for repo, entry in sorted(self.entries().items())
                 for spec in specs(repo, entry, self.policy,
                                   lambda *why: refusals.add(why))]
        for why in sorted(refusals - self._refused):
            _log_refusal(*why)
        self._refused = refusals
        return found

    def run_due(self, now: float | None = None) -> list[PullSpec]:
        """Pull every spec that is due (new specs at once); the specs pulled."""
        now = time.monotonic() if now is None else now
        wanted = set(self.current())
        self._due = {s: t for s, t in self._due.items() if s in wanted}
        ran = []
        for spec in sorted(wanted, key=lambda s: s.desc):
            due = self._due.get(spec, 0.0)
            if due < 0 or due > now:
                continue
            self._pull(spec)
            self._due[spec] = NEVER if spec.interval == NEVER else now + spec.interval
            ran.append(spec)
        return ran

    def _pull(self, spec: PullSpec) -> None:
        try:
            self.policy.check_addresses(spec.url)
        except MirrorUrlRefused as exc:
            _log_refusal(spec.repo, spec.branch, str(exc))
            return
        credentials = None
        if spec.secret is not None:
            credentials = read_credentials(self.secrets_dir, spec.secret)
            if credentials is None:
                log.error("mirror %s: no usable credentials in %s", spec.desc, spec.secret)
                return
        try:
            commit = offload.run(update, self.ensure_repo(spec.repo), spec, credentials)
        except (GitError, OSError, ValueError) as exc:
            log.warning("mirror %s: pulling %s failed: %s", spec.desc, spec.url, exc)
            return
        log.info("mirror %s: at %s from %s", spec.desc, commit[:12], spec.url)
