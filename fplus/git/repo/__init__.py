"""A Git library for bare repositories: change sets committed straight into a branch with
pygit2 (batched, compare-and-swap on the branch; or pushed to a remote), files read at a ref,
a branch mirrored from elsewhere (:mod:`.mirror`). It knows nothing of clusters:
:mod:`fplus.git.hosts` maps clusters to repos."""

from fplus.git.repo.changes import ChangeSet, InvalidPath, WriteResult, validate_path
from fplus.git.repo.reader import (
    CommitInfo,
    commit_info,
    head,
    history,
    list_files,
    read_file,
    read_files,
)
from fplus.git.repo.remote import PushRejected, RemoteRepoWriter, trust_ca_file
from fplus.git.repo.writer import (
    RefConflict,
    RepoWriter,
    ensure_bare_repo,
    writer_for,
)

__all__ = [
    "ChangeSet",
    "CommitInfo",
    "InvalidPath",
    "PushRejected",
    "RefConflict",
    "RemoteRepoWriter",
    "RepoWriter",
    "WriteResult",
    "commit_info",
    "ensure_bare_repo",
    "head",
    "history",
    "list_files",
    "read_file",
    "read_files",
    "trust_ca_file",
    "validate_path",
    "writer_for",
]
