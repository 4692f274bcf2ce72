"""The cluster repos on a Gitea (``--git-provider gitea``), behind the
:class:`~fplus.git.store.RepoStore` seam.

Every repo lives in one organisation (``--gitea-org``), named as the cluster (the shared
ones ``helm-charts`` and ``flux-system``), and says whose it is in its description
(:func:`marker`): a repo of that name made by anything else is never written, archived or
deleted (:class:`RepoTaken` names its holder). Commits go through the remote writer over
HTTP as the operator's token. Flux pulls as a user of its own per cluster
(:func:`reader_name`): *restricted* (it sees only what it is given), a read collaborator on
its cluster's repo and the two shared repos, authenticating with a ``read:repository``
token minted at each bootstrap script (:meth:`GiteaRepos.mint_reader`).

Gitea's API is :mod:`fplus.git.hosts.gitea_api`; the calls here are each idempotent, so
a step that failed half-way (Gitea down, a refusal) is completed by its retry.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from fplus.git.repo import ChangeSet, WriteResult
from fplus.git.store import RepoTaken

from .gitea_api import GiteaClient, GiteaError
from .host import GitHost, gitea_repo_url
from .ours import GitServerRepos

log = logging.getLogger(__name__)
READER_SCOPES = ["read:repository"]
TOKEN_NAME = re.compile(r"flux-(\d{13})")
"""Flux's tokens are named by the millisecond they were made."""


class GiteaRefused(RuntimeError):
    """Gitea will not let the operator's token do what the Cluster Manager needs."""


def marker(repo: str, shared: Collection[str] = ()) -> str:
    """The description of a repo (or Flux user) made for ``repo`` (a cluster's uuid, or one
    of the ``shared`` repos')."""
    kind = "shared repo" if repo in shared else "edge cluster"
    return f"fplus {kind} {repo}"


def reader_name(cluster: str) -> str:
    """The Gitea user Flux pulls ``cluster``'s repo as (37 characters of Gitea's 40)."""
    return "flux-" + cluster.replace("-", "")


def check_access(client: GiteaClient, org: str) -> str:
    """The token's user, once Gitea has shown it may run the provider: a site administrator
    (Flux's users are made through ``/admin/users``), owner of ``org`` (made if missing).
    :class:`GiteaRefused` saying what is wrong; :class:`GiteaError` with status 0 if Gitea
    does not answer."""
    try:
        me = client.me()
    except GiteaError as exc:
        if exc.status == 401:
            raise GiteaRefused(f"Gitea at {client.url} refused the token: {exc.message}") \
                from None
        raise
    login = str(me["login"])
    if not me.get("is_admin"):
        raise GiteaRefused(f"the token's Gitea user {login} is not a site administrator "
                           "(Flux's per-cluster users are made through Gitea's admin API)")
    try:
        if client.org(org) is None:
            client.create_org(org, "Edge cluster repos (the fplus Cluster Manager's)")
            log.info("made the Gitea organisation %s", org)
            return login
        allowed = client.org_permissions(login, org)
    except GiteaError as exc:
        if exc.status == 403:
            raise GiteaRefused(f"the token may not manage the Gitea organisation {org}: "
                               f"{exc.message}") from None
        raise
    if not allowed.get("is_owner"):
        raise GiteaRefused(f"the token's Gitea user {login} is not an owner of the "
                           f"organisation {org} (another one's?): add it to the org's Owners "
                           "team, or choose another --gitea-org")
    return login


class GiteaRepos(GitServerRepos):
    """Cluster and shared repos in a Gitea organisation (see the module docstring)."""

    def __init__(self, host: GitHost, client: GiteaClient, token: str,
                 name_of: Callable[[str], str | None], ca_file: str | None = None) -> None:
        """``name_of``: a cluster's recorded name (None: not known), for the repos of
        clusters this process has not created itself."""
        super().__init__(host, "fplus", token, ca_file)
        self.client = client
        self.org = host.gitea_org
        self._name_of = name_of
        self._names: dict[str, str] = dict(self.host.shared)
        self._checked = False
        self._shared_made: set[str] = set()
        self._names_lock = threading.Lock()

    # -- the seam --------------------------------------------------------------------------

    def claim(self, cluster: str, name: str) -> None:
        self._ready()
        self._check_holder(cluster, name, self.client.repo(self.org, name))

    def create(self, cluster: str, name: str) -> None:
        self._ready()
        with self._names_lock:
            self._names[cluster] = name
        self._ensure_repo(cluster, name)
        if cluster in self.host.shared:
            return
        for shared, shared_name in self.host.shared.items():
            self._ensure_repo(shared, shared_name)
        user = reader_name(cluster)
        found = self.client.user(user)
        if found is None:
            self.client.create_user(user, f"{user}@fplus.invalid", _password(),
                                    self._marker(cluster))
        elif found.get("full_name") != self._marker(cluster):
            raise RepoTaken(f"the Gitea user {user} exists and was not made for cluster "
                            f"{cluster}; nothing was changed")
        for repo in (name, *self.host.shared.values()):
            self.client.add_collaborator(self.org, repo, user, "read")

    def revoke_reader(self, cluster: str) -> None:
        user = self.client.user(reader_name(cluster))
        if user is not None and user.get("full_name") == self._marker(cluster):
            self.client.delete_user(reader_name(cluster))

    def archive(self, cluster: str) -> None:
        """Archive (renamed ``<name>-archived-<uuid prefix>``, read-only) or delete the repo,
        per ``--gitea-teardown``; a missing repo, or one not ours, is left alone."""
        name = self._name(cluster)
        repo = self.client.repo(self.org, name)
        if repo is None:
            return
        if repo.get("description") != self._marker(cluster):
            log.warning("cluster %s: the Gitea repo %s/%s is not its own; left alone",
                        cluster, self.org, name)
            return
        if self.host.gitea_teardown == "delete":
            self.client.delete_repo(self.org, name)
        else:
            self.client.edit_repo(self.org, name, {"name": self.archive_name(cluster),
                                                   "archived": True})

    def mint_reader(self, cluster: str) -> tuple[str, str]:
        """Flux's user name and a new ``read:repository`` token for it. Gitea makes tokens
        only for a user who shows its password, so a fresh one is set (and forgotten).
        Older tokens go once their successor has been used, or ``--rotation-grace`` after
        it was made; Gitea's tokens do not expire by themselves."""
        user, password = reader_name(cluster), _password()
        self.client.set_password(user, password)
        now_ms = int(time.time() * 1000)
        token = self.client.create_token(user, password, f"flux-{now_ms}", READER_SCOPES)
        self._prune_tokens(user, password, now_ms)
        return user, token

    def write(self, cluster: str, changes: ChangeSet, message: str) -> WriteResult:
        """As :meth:`GitServerRepos.write`; a shared repo is made first if this process has
        not made sure of it yet (an import may come before the leader made them)."""
        if cluster in self.host.shared and cluster not in self._shared_made:
            self.create(cluster, self.host.shared[cluster])
            self._shared_made.add(cluster)
        return super().write(cluster, changes, message)

    # -- helpers -----------------------------------------------------------------------

    def _marker(self, repo: str) -> str:
        return marker(repo, self.host.shared)

    def _on_disk(self) -> bool:
        return False

    def _remote_url(self, cluster: str) -> str:
        assert self.host.gitea_url is not None
        return gitea_repo_url(self.host.gitea_url, self.org, self._name(cluster))

    def archive_name(self, cluster: str) -> str:
        """The name an archived repo of ``cluster`` gets."""
        return f"{self._name(cluster)}-archived-{cluster[:8]}"

    def _ready(self) -> None:
        """The organisation is there and ours (checked once per process)."""
        if not self._checked:
            check_access(self.client, self.org)
            self._checked = True

    def _name(self, cluster: str) -> str:
        with self._names_lock:
            known = self._names.get(cluster)
        if known is not None:
            return known
        name = self._name_of(cluster)
        if name is None:
            raise LookupError(f"cluster {cluster} has no recorded name: its Gitea repo is "
                              "unknown")
        with self._names_lock:
            self._names[cluster] = name
        return name

    def _check_holder(self, repo: str, name: str, found: dict[str, Any] | None) -> None:
        if found is None or found.get("description") == self._marker(repo):
            return
        description = str(found.get("description") or "")
        held = description.removeprefix("fplus edge cluster ")
        holder = (f"cluster {held}" if held != description
                  else f"{(found.get('owner') or {}).get('login', self.org)}, not made by "
                       "the Cluster Manager")
        raise RepoTaken(f"the Gitea repo {self.org}/{name} already exists and is held by "
                        f"{holder}; nothing was changed (rename or remove that repo, or name "
                        "the cluster otherwise)")

    def _ensure_repo(self, repo: str, name: str) -> None:
        found = self.client.repo(self.org, name)
        self._check_holder(repo, name, found)
        if found is not None:
            return
        try:
            self.client.create_org_repo(self.org, name, self._marker(repo))
        except GiteaError as exc:
            if exc.status != 409:  # made meanwhile: ours only if its description says so
                raise
            self._check_holder(repo, name, self.client.repo(self.org, name))
        log.info("made the Gitea repo %s/%s", self.org, name)

    def _prune_tokens(self, user: str, password: str, now_ms: int) -> None:
        made = sorted(((int(m.group(1)), t) for t in self.client.tokens(user, password)
                       if (m := TOKEN_NAME.fullmatch(str(t.get("name", ""))))),
                      key=lambda pair: pair[0])
        grace_ms = self.host.rotation_grace * 1000
        for (_, older), (successor_ms, successor) in itertools.pairwise(made):
            # to the second: a successor used within the second it was made counts as
            # unused (its predecessor then waits out the grace period)
            used = successor.get("last_used_at", "") > successor.get("created_at", "")
            if used or now_ms - successor_ms >= grace_ms:
                self.client.delete_token(user, password, int(older["id"]))


def _password() -> str:
    return secrets.token_urlsafe(24)

