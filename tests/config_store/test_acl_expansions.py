"""The ACL's per-principal expansions after the graph or the grants change: each change
makes exactly the expansions it can change be computed again, and a check always answers
as one computed afresh would. Run on a real store (SQLite), through the domain's write
transactions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from fplus.config_store._domain.core.graph import Obj
from fplus.config_store._domain.core.state import Core
from fplus.config_store._domain.core.tx import new_uuid
from fplus.config_store._domain.store import open_store
from fplus.config_store._storage import GrantRow

READ = uuids.ConfigDBPerm.ReadApp


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Core]:
    store = open_store(tmp_path / "data", "pw")
    yield store.core
    store.core.storage.close()


@pytest.fixture
def computed(core: Core, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each principal's expansion was computed."""
    counts: Counter[str] = Counter()
    held = core.acl._held

    def counting(principal: str) -> list[GrantRow]:
        counts[principal] += 1
        return held(principal)
    monkeypatch.setattr(core.acl, "_held", counting)
    return counts


def _object(core: Core, rank: int = 0) -> str:
    uuid = new_uuid()
    with core.transaction() as tx:
        tx.put_object(Obj(uuid, rank, None, uuids.Special.Unowned, False, ""))
    return uuid


def _grant(core: Core, principal: str, permission: str, target: str,
           plural: bool = False) -> None:
    with core.transaction() as tx:
        tx.put_grant(GrantRow(new_uuid(), principal, permission, target, plural))


def _member(core: Core, klass: str, member: str, present: bool = True) -> None:
    with core.transaction() as tx:
        tx.set_member(klass, member, present)


def _may(core: Core, principal: str, permission: str, target: str) -> bool:
    return core.acl.check(principal, permission, target)


def test_another_principals_grant_leaves_an_expansion_cached(
        core: Core, computed: Counter[str]) -> None:
    busy, other, app = _object(core), _object(core), _object(core)
    _grant(core, busy, READ, app)
    assert _may(core, busy, READ, app) and computed[busy] == 1
    _grant(core, other, READ, app)
    newcomer = _object(core)
    _member(core, _object(core, rank=1), newcomer)
    assert _may(core, busy, READ, app) and _may(core, other, READ, app)
    assert computed[busy] == 1  # none of the changes was busy's


def test_a_grant_to_a_class_reaches_its_members_at_once(
        core: Core, computed: Counter[str]) -> None:
    klass, member, app = _object(core, rank=1), _object(core), _object(core)
    sub = _object(core, rank=1)
    with core.transaction() as tx:
        tx.set_subclass(klass, sub, True)
    _member(core, sub, member)
    assert not _may(core, member, READ, app)
    _grant(core, klass, READ, app)
    assert _may(core, member, READ, app) and computed[member] == 2
    with core.transaction() as tx:
        tx.delete_grants([g.uuid for g in core.acl.find(principal=klass)])
    assert not _may(core, member, READ, app)


def test_joining_and_leaving_a_class_changes_only_the_members_expansion(
        core: Core, computed: Counter[str]) -> None:
    klass, member, bystander, app = (_object(core, rank=1), _object(core), _object(core),
                                     _object(core))
    _grant(core, klass, READ, app)
    _grant(core, bystander, READ, app)
    assert not _may(core, member, READ, app) and _may(core, bystander, READ, app)
    _member(core, klass, member)
    assert _may(core, member, READ, app)
    _member(core, klass, member, present=False)
    assert not _may(core, member, READ, app) and _may(core, bystander, READ, app)
    assert computed[member] == 3 and computed[bystander] == 1


def test_a_new_member_of_a_granted_permission_group_is_granted_to_its_holders(
        core: Core, computed: Counter[str]) -> None:
    group, holder, app = _object(core, rank=1), _object(core), _object(core)
    _grant(core, holder, group, app)
    permission = _object(core)
    assert not _may(core, holder, permission, app)
    _member(core, group, permission)  # the group now stands for it
    assert _may(core, holder, permission, app) and computed[holder] == 2


def test_a_batch_applies_each_operations_grants_and_memberships(core: Core) -> None:
    klass, member, app = _object(core, rank=1), _object(core), _object(core)
    assert not _may(core, member, READ, app)
    with core.batch():
        _member(core, klass, member)
        _grant(core, klass, READ, app)
        assert _may(core, member, READ, app)  # the later operation sees the earlier
    assert _may(core, member, READ, app)
