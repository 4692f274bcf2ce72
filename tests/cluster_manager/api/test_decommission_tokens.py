"""Deleting a cluster forgets its bootstrap tokens: its URL answers 401 and no row is left."""

from __future__ import annotations

import sqlite3

from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP
from harness.servers import Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.api.conftest import commission


def token_rows(stack: Stack, cluster: str) -> int:
    db = sqlite3.connect(stack.root / "cm" / "bootstrap-tokens.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM cm_bootstrap_tokens WHERE cluster=?",
                          (cluster,)).fetchone()[0]
    finally:
        db.close()


def test_a_deleted_clusters_bootstrap_url_answers_401_and_leaves_no_row(
        stack: Stack, root: Api) -> None:
    cluster = commission(stack, "short-lived")
    r = root.post(f"/v1/cluster/{cluster}/bootstrap-url")
    assert r.status_code == 200, r.text
    url = r.json()
    assert token_rows(stack, cluster) == 1

    assert stack.admin.delete(f"/v2/app/{CONFIG_APP}/object/{cluster}").status_code == 204
    wait_for(lambda: status(stack.admin, cluster) is None, what="setup status removed")

    refused = Api("").get(url, headers={"Accept": "application/json"})
    assert refused.status_code == 401, refused.text
    assert "unknown or superseded" in refused.json()["error"]
    assert token_rows(stack, cluster) == 0
