"""How ``config-store serve`` starts: the master checks the database and loads nothing of the
store; the worker loads it once, seeding it and ensuring its root principal, so a replica
answers ``/ping`` after one load of its state, not two."""

from __future__ import annotations

from pathlib import Path

import pytest

from fplus.config_store import main
from fplus.config_store._domain.core.state import Core
from fplus.config_store._domain.store import PASSWORD_FILE


def _args(data_dir: Path) -> list[str]:
    return ["serve", "--data-dir", str(data_dir), "--admit-password-rate", "0"]


def test_the_master_loads_nothing_and_the_worker_seeds_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    args = main.build_parser().parse_args(_args(tmp_path / "data"))
    loads: list[Core] = []
    reload = Core.reload
    monkeypatch.setattr(Core, "reload", lambda core: (loads.append(core), reload(core)))
    monkeypatch.delenv("FPLUS_ADMIN_PASSWORD", raising=False)

    main._prepare(args, "http://127.0.0.1:1")
    assert loads == []  # the database checked, nothing of the store read
    assert "Config Store listening on http://127.0.0.1:1" in capsys.readouterr().out

    served = main._worker(args, [])
    assert len(loads) == 1  # one load, seeded and its root ensured there
    password = (tmp_path / "data" / PASSWORD_FILE).read_text().strip()
    client = served.app.test_client()
    login = client.post("/token", auth=("admin", password))
    assert login.status_code == 200, login.text


def test_an_unusable_database_is_one_line_before_anything_is_served(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config-store.db").write_bytes(b"not a database" * 100)
    args = main.build_parser().parse_args(_args(tmp_path / "data"))
    with pytest.raises(SystemExit) as stopped:
        main._prepare(args, "http://127.0.0.1:1")
    said = str(stopped.value.code)
    assert "config-store.db" in said and "\n" not in said
