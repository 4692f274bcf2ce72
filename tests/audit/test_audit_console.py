"""The console's forms are audited as the API is: a cluster created and a secret sealed
through the console give one row each naming the signed-in user (the value nowhere), a
refused form (a wrong CSRF token) gives a refused row, and a form posted without a session
(sent to sign in; nothing changed) gives none. The cluster page shows the rows to a user
holding Edge.Perm.Audit on the cluster, and no history to one without."""

from __future__ import annotations

import re
import uuid

import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.conftest import grant, make_user
from tests.console.conftest import console_session

PASSWORD = "pw-" + "c" * 12
VALUE = "console-VALUE-" + uuid.uuid4().hex


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, page[:300]
    return found[1]


def test_console_changes_are_audited(shared_stack: Stack) -> None:
    stack = shared_stack
    name = f"con-{uuid.uuid4().hex[:8]}"
    uid, _ = make_user(stack.admin, f"console-{name}", password=PASSWORD)
    for permission in (uuids.EdgePerm.Clusters, uuids.EdgePerm.Secrets):
        grant(stack.admin, uid, permission, uuids.NULL)
    session, page = console_session(stack, f"console-{name}", PASSWORD)
    ui = f"{stack.manager.url}/ui"
    r = session.post(f"{ui}/new", data={"csrf": _csrf(page), "name": name,
                                        "namespace": "fplus-edge"}, allow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    cluster = r.headers["Location"].split("/cluster/", 1)[1].split("?", 1)[0]
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what=f"{name} ready")
    report_edge(stack, cluster, kubeseal_cert=make_cert(
        rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    form = {"csrf": _csrf(page), "namespace": "app", "name": "creds", "key": "token",
            "value": VALUE}
    r = session.post(f"{ui}/cluster/{cluster}/secret", data=form, allow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    r = session.post(f"{ui}/cluster/{cluster}/redeploy", data={"csrf": "0" * 64},
                     allow_redirects=False)
    assert r.status_code == 403
    r = requests.post(f"{ui}/cluster/{cluster}/redeploy", allow_redirects=False, timeout=30)
    assert r.status_code == 303 and "/ui/login" in r.headers["Location"]

    answer = Api(stack.manager.url, stack.admin.auth).get("/v1/audit",
                                                          params={"cluster": cluster})
    entries = [e for e in answer.json()["entries"] if e["status"] != 0]  # not the phases
    seen = [(e["action"], e["principal"]["uuid"], e["target"], e["outcome"], e["status"])
            for e in reversed(entries)]
    assert seen == [
        ("cluster.create", uid, {"kind": "cluster", "uuid": cluster, "name": name}, "ok", 303),
        ("secret.seal", uid, {"kind": "secret", "uuid": None, "name": "app/creds/token"},
         "ok", 303),
        ("cluster.redeploy", uid, {"kind": "cluster", "uuid": cluster, "name": name},
         "refused", 403),
    ]
    assert VALUE not in answer.text

    page = session.get(f"{ui}/cluster/{cluster}").text
    assert 'id="history"' not in page  # no Edge.Perm.Audit: no history
    grant(stack.admin, uid, uuids.EdgePerm.Audit, cluster)

    def with_history() -> str | None:
        text = session.get(f"{ui}/cluster/{cluster}").text
        return text if 'id="history"' in text else None
    page = wait_for(with_history, what="the grant seen (ACLs are cached 5 s)")
    history = page.split('id="history"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr class="change" data-kind="change">\s*<td>(.*?)</tr>', history, re.S)
    assert len(rows) == 3 and "cluster.redeploy" in rows[0] and "refused 403" in rows[0]
    assert "secret app/creds/token" in rows[1] and f"cluster {name}" in rows[2]
    assert VALUE not in page
