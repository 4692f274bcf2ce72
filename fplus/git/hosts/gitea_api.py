"""Gitea's REST API (``/api/v1``), the calls the Cluster Manager makes and nothing more.

Knows nothing of clusters (:mod:`fplus.git.hosts.gitea` does). Every call sends the
operator's token (``Authorization: token …``) except the few Gitea allows only with a
user's own password (a user's access tokens). A refusal raises :class:`GiteaError` naming
the call and Gitea's own answer; no error or log line carries a token or a password.
"""

from __future__ import annotations

from typing import Any, cast

import requests

TIMEOUT = 30.0


class GiteaError(RuntimeError):
    """Gitea refused a call (``status``), or could not be reached (``status`` 0)."""

    def __init__(self, call: str, status: int, message: str) -> None:
        self.call, self.status, self.message = call, status, message
        said = f"HTTP {status}: {message}" if status else message
        super().__init__(f"Gitea {call}: {said}")


def _message(resp: requests.Response) -> str:
    """Gitea's own words for a refusal (its JSON ``message``, else the body's start)."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return " ".join(str(body["message"]).split())[:500]
    return " ".join(resp.text.split())[:200] or resp.reason or "no answer"


class GiteaClient:
    """The REST API of the Gitea at ``url``, as the holder of ``token``."""

    def __init__(self, url: str, token: str, session: requests.Session | None = None,
                 verify: str | bool = True, timeout: float = TIMEOUT) -> None:
        """``session``: injectable (tests, retries); ``verify``: a CA bundle for HTTPS."""
        self.url = url.rstrip("/")
        self._token = token
        self._session = session or requests.Session()
        self._verify = verify
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"GiteaClient({self.url!r})"  # never the token

    def call(self, method: str, path: str, *, ok: tuple[int, ...] = (200,),
             missing_ok: bool = False, auth: tuple[str, str] | None = None,
             **kwargs: Any) -> Any:
        """``method`` on ``/api/v1{path}``: its JSON (None for no body, or for a 404 when
        ``missing_ok``); :class:`GiteaError` for any other answer or no answer. ``auth``:
        a user's own name and password instead of the token."""
        call = f"{method} {path}"
        headers = {} if auth else {"Authorization": f"token {self._token}"}
        try:
            resp = self._session.request(method, f"{self.url}/api/v1{path}", headers=headers,
                                         auth=auth, timeout=self._timeout, verify=self._verify,
                                         **kwargs)
        except requests.RequestException as exc:
            raise GiteaError(call, 0, f"no answer from {self.url} ({type(exc).__name__})") \
                from None
        if missing_ok and resp.status_code == 404:
            return None
        if resp.status_code not in ok:
            raise GiteaError(call, resp.status_code, _message(resp))
        return resp.json() if resp.content else None

    def _object(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """:meth:`call` whose answer is a JSON object."""
        return cast("dict[str, Any]", self.call(method, path, **kwargs))

    def _found(self, path: str) -> dict[str, Any] | None:
        """GET ``path``: a JSON object, or None when Gitea has none there."""
        return cast("dict[str, Any] | None", self.call("GET", path, missing_ok=True))

    # -- who we are, and the organisation --------------------------------------------------

    def me(self) -> dict[str, Any]:
        """The token's user (``login``, ``is_admin``)."""
        return self._object("GET", "/user")

    def org(self, name: str) -> dict[str, Any] | None:
        """The organisation ``name`` (None: there is none)."""
        return self._found(f"/orgs/{name}")

    def create_org(self, name: str, description: str) -> dict[str, Any]:
        """A private organisation owned by the token's user."""
        return self._object("POST", "/orgs", ok=(201,), json={
            "username": name, "visibility": "private", "description": description,
            "repo_admin_change_team_access": False})

    def org_permissions(self, user: str, org: str) -> dict[str, Any]:
        """What ``user`` may do in ``org`` (``is_owner``, ``can_create_repository`` …)."""
        return self._object("GET", f"/users/{user}/orgs/{org}/permissions")

    # -- repositories ----------------------------------------------------------------------

    def repo(self, owner: str, name: str) -> dict[str, Any] | None:
        """The repo ``owner/name`` (None: there is none; Gitea's answer for a name it keeps
        as a redirect to a renamed repo is that other repo, and counts as none)."""
        found = self._found(f"/repos/{owner}/{name}")
        if found is None or str(found.get("name", "")).lower() != name.lower():
            return None
        return found

    def create_org_repo(self, org: str, name: str, description: str) -> dict[str, Any]:
        """An empty private repo in ``org`` whose default branch is ``main``."""
        return self._object("POST", f"/orgs/{org}/repos", ok=(201,), json={
            "name": name, "private": True, "default_branch": "main",
            "description": description, "auto_init": False})

    def edit_repo(self, owner: str, repo: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Change a repo's ``fields`` (``name``, ``archived``, ``description`` …)."""
        return self._object("PATCH", f"/repos/{owner}/{repo}", json=fields)

    def delete_repo(self, owner: str, name: str) -> None:
        """Delete a repo (a missing one is fine)."""
        self.call("DELETE", f"/repos/{owner}/{name}", ok=(204, 404))

    def add_collaborator(self, owner: str, repo: str, user: str, permission: str) -> None:
        """``user`` may ``permission`` (``read``, ``write``) the repo (set-like)."""
        self.call("PUT", f"/repos/{owner}/{repo}/collaborators/{user}", ok=(204,),
                  json={"permission": permission})

    # -- users and their tokens ------------------------------------------------------------

    def user(self, name: str) -> dict[str, Any] | None:
        """The user ``name`` (None: there is none)."""
        return self._found(f"/users/{name}")

    def create_user(self, name: str, email: str, password: str, full_name: str) -> None:
        """A restricted, private user (sees only what it is given) who never changes its
        password (site administrators only)."""
        self.call("POST", "/admin/users", ok=(201,), json={
            "username": name, "email": email, "password": password, "full_name": full_name,
            "must_change_password": False, "restricted": True, "visibility": "private",
            "send_notify": False})

    def set_password(self, name: str, password: str) -> None:
        """A new password for the local user ``name`` (site administrators only)."""
        self.call("PATCH", f"/admin/users/{name}", json={
            "login_name": name, "source_id": 0, "password": password,
            "must_change_password": False})

    def delete_user(self, name: str) -> None:
        """Delete the user with what it owns (a missing one is fine)."""
        self.call("DELETE", f"/admin/users/{name}", ok=(204, 404), params={"purge": "true"})

    def create_token(self, user: str, password: str, name: str, scopes: list[str]) -> str:
        """A new access token of ``user`` with ``scopes``: its secret (Gitea shows it once)."""
        made = self.call("POST", f"/users/{user}/tokens", ok=(201,), auth=(user, password),
                         json={"name": name, "scopes": scopes})
        return str(made["sha1"])

    def tokens(self, user: str, password: str) -> list[dict[str, Any]]:
        """``user``'s access tokens (``id``, ``name``, ``created_at``, ``last_used_at``)."""
        return cast("list[dict[str, Any]]", self.call(
            "GET", f"/users/{user}/tokens", auth=(user, password), params={"limit": 50}))

    def delete_token(self, user: str, password: str, token_id: int) -> None:
        """Delete one of ``user``'s access tokens (a missing one is fine)."""
        self.call("DELETE", f"/users/{user}/tokens/{token_id}", ok=(204, 404),
                  auth=(user, password))
