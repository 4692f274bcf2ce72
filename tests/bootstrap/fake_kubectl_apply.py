"""``kubectl apply -f SOURCE`` for the recording kubectl (fake_kubectl.sh; same state layout).

Usage: ``kubectl-apply CALL NAMESPACE SOURCE``. Records a local SOURCE's content for call
CALL, downloads a URL from the ``urls`` table, and stores every document the way kubectl
would create it: a namespaced object needs its namespace, a Flux or Sealed Secrets object
needs its CRD serving that version; what can be applied is, the rest is reported (exit 1).

Installed with ``#!python -IS`` for a fast start. Documents are cached by content in
``$FAKE_KUBE_CACHE`` (marshal), so PyYAML (from ``SITE``, set by the test in the installed
copy) is imported only for content not seen before in the session.
"""

from __future__ import annotations

import marshal
import os
import sys

SITE = ""
STATE = os.environ.get("FAKE_KUBE_DIR", "")
CUSTOM_GROUPS = ("fluxcd.io", "bitnami.com")
CLUSTER_KINDS = frozenset({"Namespace", "CustomResourceDefinition", "ClusterRole",
                           "ClusterRoleBinding"})


class Refused(Exception):
    """What kubectl prints for an object it cannot apply."""


def plural(kind: str) -> str:
    lower = kind.lower()
    return lower[:-1] + "ies" if lower.endswith("y") else lower + "s"


def object_path(kind: str, namespace: str, name: str) -> str:
    return os.path.join(STATE, "objects", kind, namespace or "_", name)


def read_source(source: str) -> str:
    if "://" in source:
        with open(os.path.join(STATE, "urls"), encoding="utf-8") as table:
            urls = dict(line.rstrip("\n").split("\t") for line in table if line.strip())
        if source not in urls:
            raise Refused(f'error: unable to read URL "{source}", server reported 404 Not Found')
        source = urls[source]
    try:
        with open(source, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise Refused(f'error: the path "{source}" does not exist') from None


def reduce(doc: dict) -> tuple[str, str, str, str, bytes]:
    """(apiVersion, kind, namespace, name, file content): served versions of a CRD, the
    marshalled stringData of a Secret, nothing for the rest."""
    content = b""
    if doc["kind"] == "CustomResourceDefinition":
        served = [v["name"] for v in doc["spec"]["versions"] if v["served"]]
        content = (" ".join(served) + "\n").encode()
    if doc["kind"] == "Secret":
        content = marshal.dumps(doc.get("stringData", {}))
    meta = doc["metadata"]
    return doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"], content


def documents(text: str) -> list:
    """The reduced documents of ``text`` (cached by content)."""
    import zlib

    cache = os.environ.get("FAKE_KUBE_CACHE", "")
    path = os.path.join(cache, f"{zlib.crc32(text.encode())}-{len(text)}") if cache else ""
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return marshal.load(f)
    if SITE:
        sys.path.append(SITE)
    import yaml

    docs = [reduce(d) for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]
    if path:
        with open(f"{path}.{os.getpid()}", "wb") as f:
            marshal.dump(docs, f)
        os.replace(f"{path}.{os.getpid()}", path)
    return docs


def served(crd: str) -> list[str]:
    try:
        with open(object_path("CustomResourceDefinition", "", crd), encoding="utf-8") as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def apply_one(api_version: str, kind: str, namespace: str, name: str, content: bytes,
              default_namespace: str) -> str:
    group, _, version = api_version.rpartition("/")
    if group.endswith(CUSTOM_GROUPS) and version not in served(f"{plural(kind)}.{group}"):
        raise Refused(f'error: resource mapping not found for name: "{name}": no matches for '
                      f'kind "{kind}" in version "{api_version}"\n'
                      "ensure CRDs are installed first")
    namespace = "" if kind in CLUSTER_KINDS else namespace or default_namespace
    if namespace and not os.path.exists(object_path("Namespace", "", namespace)):
        raise Refused(f'Error from server (NotFound): namespaces "{namespace}" not found')
    path = object_path(kind, namespace, name)
    existed = os.path.exists(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)
    return f"{kind.lower()}/{name} {'configured' if existed else 'created'}"


def main(call: str, namespace: str, source: str) -> int:
    try:
        text = read_source(source)
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 1
    if "://" not in source:
        with open(os.path.join(STATE, "calls", f"{call}.files"), "wb") as log:
            marshal.dump({source: text}, log)
    errors = []
    for doc in documents(text):
        try:
            print(apply_one(*doc, namespace))
        except Refused as exc:
            errors.append(str(exc))
    for error in errors:
        print(error, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
