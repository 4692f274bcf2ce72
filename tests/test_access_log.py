"""The optional access log (``ACCESS_LOG=1``): one line per request, never a query or a header.

The same servers show that gunicorn's control socket is off: it would be one path per user
(``$HOME/.gunicorn/gunicorn.ctl``) that every service of that user takes from the others."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests

from harness.servers import ADMIN_PASSWORD, ServiceProcess, wait_until_up


@pytest.mark.parametrize("enabled", [True, False])
def test_access_log_lines_carry_no_query_and_no_credentials(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool) -> None:
    if enabled:
        monkeypatch.setenv("ACCESS_LOG", "1")
    else:
        monkeypatch.delenv("ACCESS_LOG", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    server = ServiceProcess(tmp_path / "data",
                            settings={"HOME": str(home), "XDG_RUNTIME_DIR": str(home)}).start()
    try:
        wait_until_up(server.url + "/ping")
        requests.get(server.url + "/v2/app?token=secret-in-the-query", timeout=10,
                     auth=("admin", ADMIN_PASSWORD))
        requests.get(server.url + "/ping", timeout=10)
        assert list(home.rglob("*")) == []  # no control socket while it serves
    finally:
        server.stop()
    text = (tmp_path / f"config_store-{server.port}.log").read_text()
    lines = re.findall(r'"GET (/\S*) HTTP/1\.1" (\d{3}) \d+ [\d.]+s', text)
    assert (("/ping", "200") in lines) is enabled
    assert ("/v2/app" in [path for path, _ in lines]) is enabled
    assert "secret-in-the-query" not in text and ADMIN_PASSWORD not in text
