"""Least privilege: the Cluster Manager and the Git server run as their own principals with only
what they need, the administrator password stays out of their processes, and the
``cluster-manager`` principal's credentials (read from the data dir of a real ``up``) cannot
grant it what it does not hold.

The probe found ``cluster-manager`` could grant itself WriteApp on everything (then rewrite
the Bootstrap script every edge runs as a shell script), the Git server ran as ``admin``, and
the Cluster Manager kept the admin password in its environment after seeding. Then it still
held Git ManageStorage on the wildcard (it could archive any repo, the shared ones included)
and WriteApp on Info for every object (it renamed the admin principal: 204): now it holds
ManageStorage on Edge clusters' repos and Info of the objects it owns, and
:func:`test_manager_holds_exactly_what_it_uses` lists every grant it holds and why.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.gitcli import git
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ServiceProcess,
    free_port_block,
    git_server_process,
    plain_env,
    wait_until_up,
)
from harness.stack import CONFIG, create_cluster, status, wait_for

A, C, P, AUTH, GIT = uuids.App, uuids.Class, uuids.ConfigDBPerm, uuids.AuthPerm, uuids.GitPerm
SERVICES = ("fplus.git_server.cli", "fplus.cluster_manager.cli")
EXECUTED_OR_ACCESS = (A.BootstrapScript, A.FluxTemplate, A.HelmChartTemplate,
                      A.K8sResourceTemplate, A.ConfigSchema, A.ServiceConfig, uuids.NULL)
"""Apps whose entries edges execute or that decide access (and the wildcard). Not the Edge
deployment app: the deployment API writes it, but each deployment only names a chart
template (which the manager cannot write) and the app's schema bounds the entry."""


@dataclass
class Up:
    """A running ``cluster-manager up`` and the credentials in its data dir."""

    proc: subprocess.Popen
    port: int
    data: Path
    admin_password: str

    def api(self, offset: int, auth: tuple[str, str] | None = None) -> Api:
        """A session with the service on ``port + offset`` (0 manager, 1 store, 2 git)."""
        return Api(f"http://127.0.0.1:{self.port + offset}", auth)

    @property
    def admin(self) -> Api:
        return self.api(1, ("admin", self.admin_password))

    def own(self, name: str, where: str) -> Api:
        """The Config Store as ``name``, with the password ``seed`` left in ``where``."""
        password = (self.data / where / f"{name}-password").read_text().strip()
        return self.api(1, (name, password))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """``cluster-manager up`` with FPLUS_ADMIN_PASSWORD in its environment: the Config Store
    needs it, the services must not inherit it."""
    data = tmp_path_factory.mktemp("privilege") / "data"
    port = free_port_block(3)
    password = "admin-" + secrets.token_hex(12)
    env = plain_env()
    proc = subprocess.Popen([sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir",
                             str(data), "--port", str(port)],
                            env=env | {"FPLUS_ADMIN_PASSWORD": password},
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=proc)
        yield Up(proc, port, data, password)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _group_of(child: int) -> list[int]:
    """Every process in ``child``'s process group (gunicorn's master and workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == child:
                    found.append(int(entry.name))
            except ProcessLookupError:
                continue
    return found


def _service_pids(up_pid: int, module: str) -> list[int]:
    children = Path(f"/proc/{up_pid}/task/{up_pid}/children").read_text().split()
    [child] = [int(c) for c in children
               if module in Path(f"/proc/{c}/cmdline").read_bytes().decode()]
    return _group_of(child)


def _acl(stack: Up, name: str) -> list[dict[str, str]]:
    uuid = stack.admin.get(f"/v2/identity/kerberos/{name}").json()
    r = stack.admin.get(f"/v2/acl/{uuid}")
    assert r.status_code == 200, r.text
    return r.json()


def test_admin_password_is_not_in_the_services_environment(stack: Up) -> None:
    for module in SERVICES:
        pids = _service_pids(stack.proc.pid, module)
        assert pids, module
        for pid in pids:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert stack.admin_password.encode() not in environ, (module, pid)
            names = {v.split(b"=", 1)[0] for v in environ.split(b"\0")}
            assert not names & {b"FPLUS_PASSWORD", b"FPLUS_ADMIN_PASSWORD"}, (module, pid)
        cmdline = Path(f"/proc/{pids[0]}/cmdline").read_bytes()
        assert stack.admin_password.encode() not in cmdline


def test_password_files_are_private(stack: Up) -> None:
    for where, name in (("cluster-manager", "cluster-manager"), ("git", "git-server")):
        path = stack.data / where / f"{name}-password"
        assert path.stat().st_mode & 0o777 == 0o600, path


def test_manager_cannot_grant_itself_write_on_the_bootstrap_script(stack: Up) -> None:
    manager = stack.own("cluster-manager", "cluster-manager")
    me = manager.get("/v2/whoami?detail=true").json()
    assert me["name"] == "cluster-manager" and not me["root"]
    script = f"/v2/app/{A.BootstrapScript}/object/{A.BootstrapScript}"
    before = stack.admin.get(script).json()
    made = []
    try:
        for target, plural in ((A.BootstrapScript, False), (uuids.NULL, False),
                               (uuids.Class.App, True)):
            r = manager.post("/v2/grant", json={"principal": me["uuid"], "target": target,
                                                "permission": P.WriteApp, "plural": plural})
            if r.ok:
                made.append(r.json()["uuid"])
            assert r.status_code == 403, (target, r.status_code, r.text)
    finally:  # a grant that got through must not spoil the other tests of this stack
        for grant in made:
            stack.admin.delete(f"/v2/grant/{grant}")
    # nor through an account it creates, whose password it would know
    r = manager.post("/v2/principal", json={
        "name": f"sneaky-{secrets.token_hex(4)}", "password": "x" * 16,
        "class": uuids.Class.EdgeAccount,
        "grants": [{"permission": P.WriteApp, "target": A.BootstrapScript}]})
    assert r.status_code == 403, r.text
    assert manager.put(script, json={"wrapper": "rm -rf /"}).status_code == 403
    assert manager.patch(script, json={"wrapper": "rm -rf /"},
                         headers={"Content-Type": "application/merge-patch+json"}
                         ).status_code == 403
    assert stack.admin.get(script).json() == before
    held = {(e["permission"], e["target"]) for e in _acl(stack, "cluster-manager")}
    assert (P.WriteApp, A.BootstrapScript) not in held


def test_manager_holds_no_write_on_executed_or_access_apps(stack: Up) -> None:
    """Edge deployments only on the objects it created (the fleet deployments' expansion):
    never one a person made; Flux templates likewise (a template rollout's candidate, under
    the rollout it made): never the default template."""
    acl = _acl(stack, "cluster-manager")
    writes = {e["target"] for e in acl if e["permission"] == P.WriteApp
              and not (e["target"] in (A.EdgeDeployment, A.FluxTemplate)
                       and e.get("object") == uuids.Special.Mine)}
    assert not writes & set(EXECUTED_OR_ACCESS), writes & set(EXECUTED_OR_ACCESS)
    delegable = {e["target"] for e in acl if e["permission"] == AUTH.WriteACL}
    assert delegable == {GIT.Pull, P.ReadApp, P.WriteApp}
    assert all(e["target"] != uuids.NULL or e["permission"] == AUTH.ReadKerberos
               for e in acl), acl


def _manager_grants(stack: Up) -> dict[tuple[str, str, bool, str | None], str]:
    """Every grant the ``cluster-manager`` principal should hold, and why (written out here
    independently of :mod:`fplus.cluster_manager.reconcile.manager_account`)."""
    service = stack.admin.get(f"/v2/app/{A.ServiceConfig}/object/{uuids.Service.Clusters}")
    groups = service.json()["group"]
    repos, flux, sync = (groups[k]["uuid"] for k in ("cluster", "flux", "sync"))
    cluster_apps = (A.EdgeClusterConfiguration, A.EdgeClusterSetupStatus, A.EdgeClusterStatus,
                    A.EdgeClusterRequest, A.EdgeClusterNameClaim)
    held: dict[tuple[str, str, bool, str | None], str] = {}
    for app in cluster_apps:
        held[(P.ReadApp, app, False, None)] = "the cluster API and the reconciler read it"
        held[(P.WriteApp, app, False, None)] = "the cluster API, its status, an edge's entry"
    for app in (A.FluxTemplate, A.HelmChartTemplate, A.K8sResourceTemplate,
                A.BootstrapScript):
        held[(P.ReadApp, app, False, None)] = "rendered into repos and bootstrap scripts"
    held[(P.ReadApp, A.FleetDeployment, False, None)] = "fleet deployments: API and expansion"
    held[(P.WriteApp, A.FleetDeployment, False, None)] = "…the API writes them"
    held[(P.ReadApp, A.EdgeDeployment, False, None)] = "expands into them, sees name conflicts"
    held[(P.ReadApp, A.FleetRolloutStatus, False, None)] = "a new leader resumes rollouts"
    held[(P.WriteApp, A.FleetRolloutStatus, False, None)] = "…the leader records their progress"
    held[(P.ReadApp, A.ClusterRollout, False, None)] = "cluster rollouts: API and leader"
    held[(P.WriteApp, A.ClusterRollout, False, None)] = "…the API writes them"
    held[(P.CreateSpecificObj, C.ClusterRollout, False, None)] = "…as objects of their class"
    held[(P.DeleteObj, C.ClusterRollout, True, None)] = "…deletes one it could not write"
    held[(P.ReadApp, A.MaintenanceWindow, False, None)] = "maintenance windows: API and leader"
    held[(P.WriteApp, A.MaintenanceWindow, False, None)] = "…the API writes them"
    held[(P.CreateSpecificObj, C.MaintenanceWindow, False, None)] = "…as objects of their class"
    held[(P.DeleteObj, C.MaintenanceWindow, True, None)] = "…and deletes them"
    held[(P.WriteApp, A.FluxTemplate, False, uuids.Special.Mine)] = (
        "a template rollout's candidate, under the rollout it made (never the default)")
    held |= {
        (P.WriteApp, A.GitRepoConfig, False, None): "configures each cluster's repo",
        (P.WriteApp, A.SparkplugAddress, False, None): "each cluster's Sparkplug group id",
        (P.WriteApp, A.Info, False, uuids.Special.Mine):
            "labels the accounts it creates (only objects it owns: not admin)",
        (P.ReadApp, A.ServiceConfig, False, uuids.Service.Clusters): "its own configuration",
        (P.WriteApp, A.ServiceUrl, False, uuids.Service.Clusters): "advertises itself",
        (P.CreateObj, C.EdgeAccount, False, None): "creates each edge's two accounts",
        (AUTH.WriteKerberos, C.EdgeAccount, False, None): "…as principals",
        (AUTH.WriteKerberos, C.EdgeAccount, True, None): "bootstrap scripts re-password them",
        (P.WriteMemberships, C.EdgeAccount, True, None): "groups them (Flux, Sync)",
        (P.DeleteObj, C.EdgeAccount, True, None): "removes them at teardown",
        (AUTH.ReadKerberos, uuids.NULL, False, None): "finds accounts by name",
        (P.WriteMembers, flux, False, None): "the Flux accounts' group",
        (P.WriteMembers, sync, False, None): "the Edge Sync accounts' group",
        (P.CreateSpecificObj, C.EdgeCluster, False, None): "the cluster API creates clusters",
        (P.DeleteObj, C.EdgeCluster, True, None): "…and deletes them at teardown",
        (P.WriteMemberships, C.EdgeCluster, True, None): "puts them in the repo group",
        (P.ReadMembers, repos, False, None): "lists the cluster repos",
        (P.WriteMembers, repos, False, None): "…and adds to them",
        (P.CreateSpecificObj, C.EdgeClusterName, False, None): "claims cluster names",
        (P.ReadApp, A.EdgeDeployment, False, None):
            "the deployment API lists deployments; each Edge Sync account gets it for its "
            "own cluster's",
        (P.WriteApp, A.EdgeDeployment, False, None): "…and writes them",
        (P.CreateSpecificObj, C.EdgeDeployment, False, None): "…as objects of their class",
        (P.DeleteObj, C.EdgeDeployment, True, None): "…and deletes them",
        (P.ReadMembers, C.SystemHelmChart, False, None): "marks system charts in GET /v1/chart",
        (P.ReadApp, A.Info, False, None): "names chart templates in GET /v1/chart",
        (P.CreateSpecificObj, C.FleetDeployment, False, None): "the fleet deployment API",
        (P.DeleteObj, C.FleetDeployment, True, None): "…deletes them",
        (GIT.Pull, C.EdgeCluster, True, None): "reads each cluster's repo (uuid = cluster's)",
        (GIT.Push, C.EdgeCluster, True, None): "writes each cluster's repo",
        (GIT.ManageStorage, C.EdgeCluster, True, None):
            "archives a torn-down cluster's repo (never a shared one)",
        (AUTH.ReadACL, uuids.EdgePerm.Clusters, False, None): "checks its API's callers",
        (AUTH.ReadACL, uuids.EdgePerm.Secrets, False, None): "…for its permissions",
        (AUTH.ReadACL, uuids.EdgePerm.Audit, False, None): "…who may read the audit log",
        (AUTH.ReadACL, uuids.EdgePerm.Imports, False, None): "…who may import",
        (AUTH.ReadACL, uuids.EdgePerm.KubeView, False, None):
            "…and who may reach an edge's Kubernetes API, at which level",
        (AUTH.ReadACL, uuids.EdgePerm.KubeEdit, False, None): "…(edit)",
        (AUTH.ReadACL, uuids.EdgePerm.KubeAdmin, False, None): "…(admin)",
    }
    for repo in (uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo):
        held[(GIT.Pull, repo, False, None)] = "import-chart / import-flux read the shared repo"
        held[(GIT.Push, repo, False, None)] = "…and commit into it"
    for permission in (GIT.Pull, P.ReadApp, P.WriteApp):
        held[(AUTH.WriteACL, permission, False, None)] = "grants it to edge accounts"
        held[(AUTH.ReadACL, permission, False, None)] = "…and reads those grants back"
    return held


def test_manager_holds_exactly_what_it_uses(stack: Up) -> None:
    me = stack.admin.get("/v2/identity/kerberos/cluster-manager").json()
    found = stack.admin.post("/v2/grant/find", json={"principal": me}).json()
    held = set()
    for uuid in found:
        g = stack.admin.get(f"/v2/grant/{uuid}").json()
        held.add((g["permission"], g["target"], bool(g.get("plural")), g.get("object")))
    expected = _manager_grants(stack)
    assert held - expected.keys() == set(), "held and not used"
    assert expected.keys() - held == set(), "used and not held"


def test_manager_cannot_rename_what_it_did_not_create(stack: Up) -> None:
    """The probe renamed the admin principal as ``cluster-manager`` (204)."""
    manager = stack.own("cluster-manager", "cluster-manager")
    admin = stack.admin.get("/v2/identity/kerberos/admin").json()
    before = stack.admin.get(f"/v2/app/{A.Info}/object/{admin}").json()
    info = f"/v2/app/{A.Info}/object/{admin}"
    assert manager.put(info, json={"name": "owned"}).status_code == 403
    assert manager.patch(info, json={"name": "owned"},
                         headers={"Content-Type": "application/merge-patch+json"}
                         ).status_code == 403
    shared = f"/v2/app/{A.Info}/object/{uuids.Shared.HelmChartsRepo}"
    assert manager.put(shared, json={"name": "owned"}).status_code == 403
    assert stack.admin.get(f"/v2/app/{A.Info}/object/{admin}").json() == before


def test_manager_cannot_archive_a_shared_repo(stack: Up) -> None:
    """Nor any repo but an Edge cluster's, nor list the Git server's storage."""
    wait_for(lambda: (stack.data / "git" / "repos" / f"{uuids.Shared.HelmChartsRepo}.git"
                      ).is_dir(), timeout=60, what="the charts repo")
    manager = stack.api(2, stack.own("cluster-manager", "cluster-manager").auth)
    for repo in (uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo, uuids.NULL):
        assert manager.delete(f"/v1/storage/{repo}").status_code == 403, repo
    assert manager.get("/v1/storage").status_code == 403
    assert (stack.data / "git" / "repos" / f"{uuids.Shared.HelmChartsRepo}.git").is_dir()


def test_git_server_principal_reads_repo_configs_only(stack: Up) -> None:
    gits = stack.own("git-server", "git")
    acl = _acl(stack, "git-server")
    held = {(e["permission"], e["target"]) for e in acl}
    assert held == {(P.ReadApp, A.GitRepoConfig), (AUTH.ReadACL, GIT.Pull),
                    (AUTH.ReadACL, GIT.Push), (AUTH.ReadACL, GIT.ManageStorage),
                    (P.WriteApp, A.ServiceUrl)}
    # where it is reached, for the Directory: its own Service URL entry and no other
    [advertise] = [e for e in acl if e["permission"] == P.WriteApp]
    assert advertise.get("object") == uuids.Service.Git, advertise
    me = gits.get("/v2/whoami?detail=true").json()
    assert me["name"] == "git-server" and not me["root"]
    obj = stack.admin.post("/v2/object", json={"class": uuids.Class.EdgeCluster}).json()["uuid"]
    for app in (A.GitRepoConfig, A.BootstrapScript, A.EdgeClusterConfiguration):
        r = gits.put(f"/v2/app/{app}/object/{obj}", json={"path": "x/y"})
        assert r.status_code == 403, (app, r.text)
    assert gits.post("/v2/grant", json={"principal": me["uuid"], "permission": P.WriteApp,
                                        "target": A.GitRepoConfig}).status_code == 403
    assert gits.post("/v2/object", json={"class": uuids.Class.EdgeCluster}).status_code == 403
    assert gits.get(f"/v2/app/{A.GitRepoConfig}/object").status_code == 200


def _user(stack: Up, *grants: tuple[str, str]) -> tuple[str, str]:
    name, password = f"user-{secrets.token_hex(4)}", secrets.token_hex(12)
    r = stack.admin.post("/v2/principal", json={
        "name": name, "password": password,
        "grants": [{"permission": p, "target": t} for p, t in grants]})
    assert r.status_code == 201, r.text
    return name, password


def test_the_stack_still_commissions_a_cluster(stack: Up, tmp_path: Path) -> None:
    """Commissioned by the least-privileged manager, served by the least-privileged Git
    server, which checks a caller's Pull grant it can only read through ReadACL."""
    cluster = create_cluster(stack.admin, "privilege-1")
    done = wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), timeout=60,
                    what="the cluster commissioned")
    assert done
    flux = stack.admin.get("/v2/identity/kerberos/op1flux/privilege-1").json()
    granted = {(e["permission"], e["target"]) for e in stack.admin.get(f"/v2/acl/{flux}").json()}
    assert (GIT.Pull, cluster) in granted  # handed out by the Cluster Manager itself
    label = stack.admin.get(f"/v2/app/{A.Info}/object/{flux}").json()
    assert label["name"].endswith(": privilege-1"), label  # labelled by it (Info: Mine)
    reader = _user(stack, (GIT.Pull, cluster))
    url = f"http://{reader[0]}:{reader[1]}@127.0.0.1:{stack.port + 2}/uuid/{cluster}"
    git("clone", "-q", url, tmp_path / "clone")
    assert list((tmp_path / "clone").rglob("self-link.yaml"))
    stranger = _user(stack)
    r = stack.api(2, stranger).get(f"/v1/status/{cluster}")
    assert r.status_code == 403
    operator = _user(stack, (uuids.EdgePerm.Clusters, cluster))
    r = stack.api(0, operator).get(f"/v1/cluster/{cluster}/status")
    assert r.status_code == 200, r.text
    assert stack.api(0, stranger).get(f"/v1/cluster/{cluster}/status").status_code == 403


def test_a_remote_git_server_is_written_and_archived_as_the_manager(tmp_path: Path) -> None:
    """Without ``--git-repos`` the Cluster Manager pushes through the Git server and asks it
    to archive a deleted cluster's repo: with its own Pull, Push and ManageStorage grants."""
    store = ServiceProcess(tmp_path / "cs").start()
    gits = manager = None
    try:
        gits = git_server_process(tmp_path / "git", store.url).start()
        manager = ServiceProcess(tmp_path / "cm", module="fplus.cluster_manager.cli",
                                 admin_password=None, seed_from=store.url,
                                 extra_args=("--config-store", store.url, "--git", gits.url,
                                             "--backoff", "0.5")).start()
        admin = Api(store.url, ("admin", ADMIN_PASSWORD))
        cluster = create_cluster(admin, "remote-1")
        ready = wait_for(lambda: (status(admin, cluster) or {}).get("ready"), timeout=60,
                         what="the cluster commissioned through the Git server")
        assert ready
        branches = Api(gits.url, ("admin", ADMIN_PASSWORD)).get(f"/v1/status/{cluster}").json()
        assert branches.get("main") == status(admin, cluster)["commit"]
        assert admin.delete(f"/v2/app/{CONFIG}/object/{cluster}").status_code == 204
        wait_for(lambda: status(admin, cluster) is None, timeout=60, what="the teardown")
        assert list((tmp_path / "git" / "archive").iterdir())  # archived, not left in place
        assert not (tmp_path / "git" / "repos" / f"{cluster}.git").exists()
    finally:
        for service in (manager, gits, store):
            if service is not None:
                service.stop()
