"""A cluster's status shows the commit this process just made: the cached repo head is
dropped on every write, and a head read while a write lands is not remembered."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

from fplus.cluster_manager.model.settings import Settings
from fplus.cluster_manager.services.fleet.repo_heads import RepoHeads
from fplus.config_store.client import TTLCache
from fplus.git import bare
from fplus.git.hosts.ours import GitServerRepos
from fplus.git.repo import ChangeSet, ensure_bare_repo


def test_a_write_shows_in_the_head_at_once(tmp_path: Path) -> None:
    cluster = str(uuid.uuid4())
    ensure_bare_repo(bare.repo_path(tmp_path / "repos", cluster))
    settings = Settings(config_store_url="http://127.0.0.1:9", data_dir=tmp_path / "cm",
                        git_url="http://127.0.0.1:9", git_repos=tmp_path / "repos")
    repos = GitServerRepos(settings.git_host, "cm", "unused")
    heads = RepoHeads(repos.head, ttl=3600)
    repos.on_write(heads.forget)
    first = repos.write(cluster, ChangeSet(writes={"edo/a.yaml": "a\n"}), "a").commit
    assert first is not None and heads.get(cluster) == first
    second = repos.write(cluster, ChangeSet(writes={"edo/b.yaml": "b\n"}), "b").commit
    assert second not in (None, first)
    assert heads.get(cluster) == second  # within the hour-long ttl


def test_a_value_computed_across_a_forget_is_not_remembered() -> None:
    cache = TTLCache(3600)
    computing, forgotten = threading.Event(), threading.Event()
    got: list[str] = []

    def stale() -> str:  # read before the write, answered after it
        computing.set()
        forgotten.wait(10)
        return "before"

    reader = threading.Thread(target=lambda: got.append(cache.get("k", stale)))
    reader.start()
    assert computing.wait(10)
    cache.forget("k")  # the write landed
    forgotten.set()
    reader.join(10)
    assert got == ["before"]  # the reader that asked first gets what it read
    assert cache.get("k", lambda: "after") == "after"
    assert cache.get("k", lambda: "never asked") == "after"


def test_forgetting_one_key_keeps_what_is_computed_for_another() -> None:
    cache = TTLCache(3600)

    def compute() -> str:
        cache.forget("other")  # another cluster's repo was written meanwhile
        return "v"

    assert cache.get("k", compute) == "v"
    assert cache.get("k", lambda: "never asked") == "v"
