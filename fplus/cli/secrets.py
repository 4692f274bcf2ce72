"""``fplus secret …``: seal a value to a cluster's edge, list and remove sealed keys."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fplus.jsontypes import is_object, strings

from . import refs
from .api import SECRET_LIMIT, ApiError, Row
from .output import Column, emit, output_option
from .session import manager

COLUMNS: list[Column] = [
    ("NAMESPACE", lambda s: s.get("namespace")), ("NAME", lambda s: s.get("name")),
    ("SCOPE", lambda s: s.get("scope")), ("KEYS", lambda s: s.get("keys")),
    ("UNSEALED", lambda s: s.get("unsealed")),
    ("ESCROWED", lambda s: _keys_where(s, "escrowed")),
    ("REPOST", lambda s: _keys_where(s, "needsRepost")), ("ERROR", lambda s: s.get("error"))]


def _keys_where(secret: Row, flag: str) -> list[str] | None:
    """The keys of a listed secret whose ``sealed`` record has ``flag`` set."""
    sealed = secret.get("sealed")
    if not isinstance(sealed, list):
        return None
    return [str(k["key"]) for k in sealed if is_object(k) and k.get(flag)]


@click.group("secret")
def secret() -> None:
    """Sealed secrets: values go in sealed to the edge and never come back out."""


def _split(ref: str) -> tuple[str, str]:
    namespace, _, name = ref.partition("/")
    if not namespace or not name or "/" in name:
        raise click.BadParameter(f"{ref!r} is not NAMESPACE/NAME", param_hint="NS/NAME")
    return namespace, name


def _value(literal: str | None, from_file: Path | None) -> bytes:
    if literal is not None and from_file is not None:
        raise click.UsageError("give --from-literal or --from-file, not both")
    if literal is not None:
        value = literal.encode()
    elif from_file is not None:
        if from_file.stat().st_size > SECRET_LIMIT:
            raise ApiError(413, f"{from_file} is over {SECRET_LIMIT} bytes: not sent")
        value = from_file.read_bytes()
    elif sys.stdin.isatty():
        raise click.UsageError("give the value with --from-literal, --from-file or stdin")
    else:
        value = sys.stdin.buffer.read(SECRET_LIMIT + 1)
        if not value:
            raise ApiError(400, "standard input was empty: nothing sealed (pipe the value "
                                "in, or give --from-literal or --from-file)")
    return _checked(value)


def _checked(value: bytes) -> bytes:
    if len(value) > SECRET_LIMIT:
        raise ApiError(413, f"the value is over {SECRET_LIMIT} bytes: not sent")
    return value


def _pairs(key: str | None, literals: tuple[str, ...],
           from_file: Path | None) -> list[tuple[str, bytes]]:
    """The keys to seal and their values: KEY's from one source, or kubectl's
    ``--from-literal KEY=VALUE`` (repeatable) when KEY is not given."""
    if key is not None:
        if len(literals) > 1:
            raise click.UsageError("with KEY give one --from-literal VALUE (or leave KEY out "
                                   "and give --from-literal KEY=VALUE, repeatable)")
        return [(key, _value(literals[0] if literals else None, from_file))]
    if from_file is not None or not literals:
        raise click.UsageError("give KEY and its value, or --from-literal KEY=VALUE (as "
                               "kubectl takes it, repeatable)")
    pairs: dict[str, bytes] = {}
    for literal in literals:
        name, sep, value = literal.partition("=")
        if not sep or not name:
            raise click.UsageError(f"--from-literal {literal!r}: without KEY it takes "
                                   "KEY=VALUE")
        if name in pairs:
            raise click.UsageError(f"--from-literal gives key {name!r} twice")
        pairs[name] = _checked(value.encode())
    return list(pairs.items())


@secret.command("seal")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("ref", metavar="NS/NAME")
@click.argument("key", required=False)
@click.option("--from-literal", "literals", metavar="VALUE|KEY=VALUE", multiple=True,
              help="KEY's value; without KEY, KEY=VALUE as kubectl takes it (repeatable). "
                   "It shows in your shell history: prefer stdin")
@click.option("--from-file", "from_file", type=click.Path(exists=True, dir_okay=False,
                                                          path_type=Path))
@click.option("--scope", type=click.Choice(["strict", "namespace-wide", "cluster-wide"]),
              help="what the sealed value is bound to (default strict)")
@click.option("--dry-run", is_flag=True, help="check everything, commit nothing")
def seal(cluster_ref: str, ref: str, key: str | None, literals: tuple[str, ...],
         from_file: Path | None, scope: str | None, dry_run: bool) -> None:
    """Seal KEY of Secret NS/NAME on CLUSTER (its name or UUID), the value from an option or
    stdin; or seal each --from-literal KEY=VALUE (one commit each)."""
    namespace, name = _split(ref)
    pairs = _pairs(key, literals, from_file)
    api = manager()
    cluster = refs.cluster(api, cluster_ref)
    for each, value in pairs:
        api.seal(cluster, namespace, name, each, value, scope=scope, dry_run=dry_run)
        click.echo(f"{'checked' if dry_run else 'sealed'} {namespace}/{name} {each}", err=True)


@secret.command("list")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option("--unused", is_flag=True,
              help="only the secrets no workload on the edge references")
@output_option
def list_secrets(cluster_ref: str, unused: bool, fmt: str) -> None:
    """The sealed secrets in CLUSTER's repo (its name or UUID) and their keys (never
    values): which keys are escrowed, and which must be posted again (sealed to a key the
    edge no longer has)."""
    api = manager()
    emit(api.secrets(refs.cluster(api, cluster_ref), unused=unused), fmt, COLUMNS)


@secret.command("delete")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("ref", metavar="NS/NAME")
@click.argument("key")
@click.option("--dry-run", is_flag=True)
def delete(cluster_ref: str, ref: str, key: str, dry_run: bool) -> None:
    """Remove KEY from Secret NS/NAME on CLUSTER (its name or UUID; the Secret goes with its
    last key)."""
    namespace, name = _split(ref)
    api = manager()
    cluster = refs.cluster(api, cluster_ref)
    held = [s for s in api.secrets(cluster)
            if s.get("namespace") == namespace and s.get("name") == name]
    if not any(key in strings(s.get("keys")) for s in held):
        where = f"has no key {key}" if held else "is not sealed there"
        raise ApiError(404, f"{namespace}/{name} on {cluster_ref} {where}: nothing removed "
                            f"(`fplus secret list {cluster_ref}` shows what is)")
    api.unseal_key(cluster, namespace, name, key, dry_run=dry_run)
    click.echo(f"{'checked' if dry_run else 'removed'} {namespace}/{name} {key}", err=True)
