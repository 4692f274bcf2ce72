"""SecretService reads a cluster's sealing key once for a burst of seals, even when the
burst arrives while it is being read."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from fplus.cluster_manager.services.secrets.sealed_secrets import SecretService
from harness.stack import wait_for


def _service(reads: list[str], release: threading.Event) -> SecretService:
    service = SecretService(cs=None, repos=None, keys=None)  # type: ignore[arg-type]

    def read(cluster: str) -> tuple[Any, str]:
        reads.append(cluster)
        release.wait(10)
        return f"key of {cluster}", f"SHA256:{cluster}"

    service._read_sealing_key = read  # type: ignore[method-assign]
    return service


def test_seals_arriving_during_a_read_wait_for_it_instead_of_reading_again() -> None:
    reads: list[str] = []
    release = threading.Event()
    service = _service(reads, release)
    answers: list[tuple[Any, str]] = []
    seals = [threading.Thread(target=lambda: answers.append(service._sealing_key("c1")))
             for _ in range(8)]
    for seal in seals:
        seal.start()
    other = threading.Thread(target=lambda: answers.append(service._sealing_key("c2")))
    other.start()  # another cluster is read on its own, not behind c1's read
    wait_for(lambda: len(reads) == 2, 10, "both clusters' reads under way")
    release.set()
    for thread in [*seals, other]:
        thread.join(10)
    assert sorted(reads) == ["c1", "c2"]
    assert answers.count(("key of c1", "SHA256:c1")) == 8
    assert answers.count(("key of c2", "SHA256:c2")) == 1


def test_a_failed_read_is_not_remembered_and_the_next_seal_reads_again() -> None:
    calls: list[str] = []
    service = SecretService(cs=None, repos=None, keys=None)  # type: ignore[arg-type]

    def read(cluster: str) -> tuple[Any, str]:
        calls.append(cluster)
        if len(calls) == 1:
            raise RuntimeError("the Config Store is down")
        return "key", "SHA256:x"

    service._read_sealing_key = read  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        service._sealing_key("c1")
    assert service._sealing_key("c1") == ("key", "SHA256:x") and calls == ["c1", "c1"]
