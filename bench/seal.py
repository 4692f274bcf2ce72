"""Sealing benchmark: secrets sealed and committed per second over HTTP; prints one JSON object.

Measures, in the same run:
- ours: the whole stack (Config Store, Git server, Cluster Manager); one commissioned cluster
  whose Edge cluster status carries a 4096-bit controller certificate (the controller's
  default). ``--clients`` threads (default 16), each with its own keep-alive session, PUT
  ``--secrets`` values to ``/v1/cluster/<c>/secret/<ns>/<name>/<key>``, spread over
  ``--secret-names`` secrets (default: 4 keys per secret; each PUT rewrites its secret's
  whole file, so ``--secret-names 64`` makes a stress case of ~47 keys per secret) →
  ``secrets_per_s``, ``p50_ms``, ``p99_ms``; every key is checked in the repo afterwards.
  ``commits`` and ``seals_per_commit`` say how well the group commit batched (each commit
  costs a pack, its index and the ref, each fsynced); ``cluster_manager_user_system_ms_per_op``
  splits the Cluster Manager's CPU per seal into user and system time.
- floor: :func:`fplus.cluster_manager.sealing.encrypt_value` alone, in this process, one thread →
  ``floor_per_s`` (what sealing costs without HTTP, auth or Git).
- ACS pattern: per secret a ``kubeseal``-like subprocess (``openssl pkeyutl`` wrapping a
  fresh session key with RSA-OAEP-SHA256 and the scope label, the process start and RSA work
  kubeseal does per call), then ``git clone --depth 1`` → write the SealedSecret →
  ``git commit`` → ``git push`` over smart HTTP to the same Git server (pull --rebase and
  push again when rejected), ``--clients`` at once, for ``--acs-secrets`` secrets →
  ``acs_per_s`` and ``ratio_vs_acs``.

``--cm-processes N`` serves the Cluster Manager with N worker processes (``serve
--processes``; its CPU is summed over all of them); ``--acs-secrets 0`` leaves the ACS
pattern out.

Usage: ``python bench/seal.py [--secrets 3000] [--clients 16] [--acs-secrets 48]
[--secret-names N] [--cm-processes N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_ms_per_op, ok, pct, stack_cpu
from fplus.cluster_manager import sealing
from fplus.cluster_manager.formats.manifest_yaml import load_documents
from fplus.config_store import uuids
from harness.certs import make_cert
from harness.gitcli import GIT_ENV, bare
from harness.servers import ThreadSessions
from harness.stack import Stack, create_cluster, start_stack, status, wait_for

NAMESPACE = "bench"
KEYS_PER_SECRET = 4
"""Default keys per secret (``--secrets / --secret-names``): a credential has a few keys."""
ACS_NAMES = 64  # scope labels the ACS-pattern seals cycle through
CM_PROCESSES = 1
"""``serve --processes`` of the Cluster Manager unless ``--cm-processes`` says otherwise."""
TARGETS = {"secrets_per_s": 1000, "p99_ms": 50, "cluster_manager_cpu_ms_per_op": 1.0,
           "ratio_vs_acs": 30}


def _cluster(stack: Stack, key: rsa.RSAPrivateKey) -> str:
    cluster = create_cluster(stack.admin, "seal-bench")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), 60, "cluster ready")
    ok(stack.admin.patch(f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{cluster}",
                         json={"kubeseal_cert": make_cert(key)},
                         headers={"Content-Type": "application/merge-patch+json"}), 204)
    return cluster


def _ours(stack: Stack, cluster: str, n: int, clients: int,
          names: int) -> tuple[float, list[float]]:
    sessions = ThreadSessions(stack.manager.url)

    def put(i: int) -> float:
        url = f"/v1/cluster/{cluster}/secret/{NAMESPACE}/s-{i % names:04d}/k-{i:05d}"
        start = time.perf_counter()
        ok(sessions.api.put(url, data=f"value {i}".encode(),
                            headers={"Content-Type": "application/octet-stream"}), 204)
        return (time.perf_counter() - start) * 1000

    try:
        start = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            latencies = list(pool.map(put, range(n)))
        elapsed = time.perf_counter() - start
    finally:
        sessions.close()
    return n / elapsed, latencies


def _commits(stack: Stack, cluster: str) -> int:
    """Commits on the cluster repo's ``main``: the seals' share of them is seals per commit."""
    return int(bare(stack.repos / f"{cluster}.git", "rev-list", "--count", "main").strip())


def _user_system(pgid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process group (the Cluster Manager's)."""
    user = system = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            user += int(fields[11]) + int(fields[13])
            system += int(fields[12]) + int(fields[14])
    return user / os.sysconf("SC_CLK_TCK"), system / os.sysconf("SC_CLK_TCK")


def _check(stack: Stack, cluster: str, n: int, names: int) -> None:
    repo = stack.repos / f"{cluster}.git"
    keys = set()
    for i in range(names):
        text = bare(repo, "show", f"main:edo/secrets/{NAMESPACE}/s-{i:04d}.yaml", check=False)
        if text:
            keys |= set(load_documents(text)[0]["spec"]["encryptedData"])
    if len(keys) != n:
        raise RuntimeError(f"only {len(keys)} of {n} sealed keys are in the repo")


def _floor(key: rsa.RSAPrivateKey, seconds: float = 2.0) -> float:
    public = key.public_key()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        sealing.encrypt_value(public, b"value", "strict", NAMESPACE, "floor")
        count += 1
    return count / (time.perf_counter() - start)


def _git(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *map(str, args)], cwd=cwd, env=os.environ | GIT_ENV,
                          capture_output=True, text=True, check=False)


def _acs_seal(pem: Path, work: Path, i: int) -> str:
    """What kubeseal does per call, in a subprocess: wrap a fresh session key with RSA-OAEP."""
    label = f"{NAMESPACE}/acs-{i % ACS_NAMES:02d}".encode()
    run = subprocess.run(
        ["openssl", "pkeyutl", "-encrypt", "-pubin", "-inkey", str(pem),
         "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256",
         "-pkeyopt", "rsa_mgf1_md:sha256", "-pkeyopt", f"rsa_oaep_label:{label.hex()}"],
        input=os.urandom(32), capture_output=True, check=True)
    return run.stdout.hex()


def _acs_one(url: str, pem: Path, work: Path, i: int) -> None:
    ciphertext = _acs_seal(pem, work, i)
    clone = work / f"acs-{i}"
    if _git("clone", "-q", "--depth", "1", "--branch", "main", url, clone).returncode:
        raise RuntimeError(f"clone of {url} failed")
    path = clone / "edo" / "secrets" / NAMESPACE / f"acs-{i % ACS_NAMES:02d}-{i}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\n"
                    f"spec:\n  encryptedData:\n    k: {ciphertext}\n")
    _git("add", "-A", cwd=clone)
    _git("commit", "-q", "-m", f"Updated sealed secret {i}", cwd=clone)
    for _ in range(100):
        push = _git("push", "-q", "origin", "main", cwd=clone)
        if push.returncode == 0:
            return
        _git("pull", "-q", "--rebase", "origin", "main", cwd=clone)
    raise RuntimeError(f"secret {i}: push kept failing")


def _acs(stack: Stack, cluster: str, key: rsa.RSAPrivateKey, n: int, clients: int,
         work: Path) -> float:
    pem = work / "cert-public.pem"
    pem.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    user, password = stack.admin.auth
    url = f"http://{user}:{password}@127.0.0.1:{stack.git.port}/uuid/{cluster}"
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda i: _acs_one(url, pem, work, i), range(n)))
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--secrets", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--acs-secrets", type=int, default=48)
    parser.add_argument("--secret-names", type=int, default=None,
                        help="secrets the keys are spread over (default: --secrets / 4); "
                             "each PUT rewrites its secret's file, so fewer names means "
                             "bigger files")
    parser.add_argument("--cm-processes", type=int, default=CM_PROCESSES,
                        help=f"Cluster Manager worker processes (default {CM_PROCESSES})")
    args = parser.parse_args()
    if args.secret_names is None:
        args.secret_names = max(1, args.secrets // KEYS_PER_SECRET)
    if args.secret_names < 1:
        parser.error("--secret-names must be ≥ 1")
    key = rsa.generate_private_key(public_exponent=65537, key_size=4096)
    floor = _floor(key)
    with tempfile.TemporaryDirectory(prefix="bench-seal-") as tmp:
        stack = start_stack(Path(tmp) / "stack",
                            manager_extra=("--processes", str(args.cm_processes)))
        try:
            cluster = _cluster(stack, key)
            commits_before = _commits(stack, cluster)
            cm_pgid = stack.manager.proc.pid if stack.manager.proc else 0
            split_before = _user_system(cm_pgid)
            cpu_before = stack_cpu(stack)
            rate, latencies = _ours(stack, cluster, args.secrets, args.clients,
                                    args.secret_names)
            cpu_after = stack_cpu(stack)
            split_after = _user_system(cm_pgid)
            commits = _commits(stack, cluster) - commits_before
            _check(stack, cluster, args.secrets, args.secret_names)
            acs = (_acs(stack, cluster, key, args.acs_secrets, args.clients, Path(tmp))
                   if args.acs_secrets else 0.0)
        finally:
            stack.stop()
    result = {
        "secrets": args.secrets, "clients": args.clients, "key_bits": 4096,
        "secret_names": args.secret_names,
        "keys_per_secret": round(args.secrets / args.secret_names, 1),
        "secrets_per_s": round(rate, 1),
        "p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99),
        "floor_per_s": round(floor, 1),
        "acs_per_s": round(acs, 2), "acs_measured_secrets": args.acs_secrets,
        "ratio_vs_acs": round(rate / acs, 1) if acs else None,
        "cm_processes": args.cm_processes,
        "cpu_seconds": {k: round(cpu_after[k] - cpu_before[k], 1) for k in cpu_after},
        "cpu_ms_per_op": cpu_ms_per_op(cpu_before, cpu_after, args.secrets),
        "commits": commits, "seals_per_commit": round(args.secrets / max(commits, 1), 1),
        "cluster_manager_user_system_ms_per_op": [
            round((after - before) * 1000 / args.secrets, 2)
            for before, after in zip(split_before, split_after, strict=True)],
        "cpus": os.cpu_count(),
        "targets": TARGETS,
        "targets_met": {
            "secrets_per_s": rate >= TARGETS["secrets_per_s"],
            "p99_ms": (pct(latencies, 99) or 0) < TARGETS["p99_ms"],
            "cluster_manager_cpu_ms_per_op": (
                cpu_ms_per_op(cpu_before, cpu_after, args.secrets)["cluster_manager"] or 0)
            <= TARGETS["cluster_manager_cpu_ms_per_op"],
            "ratio_vs_acs": bool(acs) and rate / acs >= TARGETS["ratio_vs_acs"]},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
