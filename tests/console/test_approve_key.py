"""The console's "Approve this key" button on a cluster page, outside the browser (the
Chromium journey is in ``test_browser.py``): shown with the pending key to those who manage
the cluster, refused without the session's token or for another key, and it pins the key."""

from __future__ import annotations

import html
import re

from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.escrow.conftest import fingerprint
from tests.console.conftest import READER_PASSWORD, Reader, console_session

EDGE = uuids.App.EdgeClusterStatus


def _report(stack: Stack, cluster: str, key: rsa.RSAPrivateKey) -> None:
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}",
                          json={"kubeseal_cert": make_cert(key)},
                          headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _keys(stack: Stack, cluster: str) -> tuple[str | None, str | None]:
    """(pinned, pending) fingerprints as the JSON status shows them."""
    seen = Api(stack.manager.url, stack.admin.auth).get(f"/v1/cluster/{cluster}/status").json()
    return ((seen.get("sealingKey") or {}).get("fingerprint"),
            (seen.get("pendingKey") or {}).get("fingerprint"))


def test_the_approve_button_pins_the_pending_key(stack: Stack, reader: Reader) -> None:
    cluster = create_cluster(stack.admin, "approval-edge")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ready")
    first, renewed = (rsa.generate_private_key(public_exponent=65537, key_size=2048)
                      for _ in range(2))
    _report(stack, cluster, first)
    assert _keys(stack, cluster) == (fingerprint(first), None)
    _report(stack, cluster, renewed)
    session, _ = console_session(stack)
    page = session.get(f"{stack.manager.url}/ui/cluster/{cluster}").text
    assert 'id="approve-key"' in page and 'id="pending-key"' in page
    assert html.escape(fingerprint(renewed)) in page
    action = f"{stack.manager.url}/ui/cluster/{cluster}/sealing-key/approve"

    r = session.post(action, data={"fingerprint": fingerprint(renewed)}, allow_redirects=False)
    assert r.status_code == 403 and "CSRF" in r.text  # no session token: refused
    r = session.post(action, data={"csrf": _csrf(page), "fingerprint": fingerprint(first)},
                     allow_redirects=False)
    assert r.status_code == 409 and 'id="key-error"' in r.text  # another key: refused
    assert _keys(stack, cluster) == (fingerprint(first), fingerprint(renewed))

    reader_session, _ = console_session(stack, reader.name, READER_PASSWORD)
    seen = reader_session.get(f"{stack.manager.url}/ui/cluster/{cluster}").text
    assert 'id="pending-key"' in seen and 'id="approve-key"' not in seen
    r = reader_session.post(action, data={"csrf": _csrf(seen),
                                          "fingerprint": fingerprint(renewed)},
                            allow_redirects=False)
    assert r.status_code == 403 and "permission" in r.text
    assert _keys(stack, cluster) == (fingerprint(first), fingerprint(renewed))

    r = session.post(action, data={"csrf": _csrf(page), "fingerprint": fingerprint(renewed)},
                     allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].endswith("done=approved")
    assert _keys(stack, cluster) == (fingerprint(renewed), None)
    after = session.get(r.headers["Location"] if r.headers["Location"].startswith("http")
                        else stack.manager.url + r.headers["Location"]).text
    assert "Sealing key approved" in after and 'id="approve-key"' not in after
