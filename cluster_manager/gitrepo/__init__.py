"""Write and read the per-cluster Git repositories: change sets committed straight into bare
repos with pygit2 (batched, compare-and-swap on the branch), files read at a ref, and the ACS
multi-document YAML format."""

from cluster_manager.repo.changes import ChangeSet, InvalidPath, WriteResult, validate_path
from cluster_manager.repo.reader import list_files, read_file
from cluster_manager.repo.remote import PushRejected, RemoteRepoWriter
from cluster_manager.repo.writer import RefConflict, RepoWriter, ensure_bare_repo, writer_for
from cluster_manager.repo.yamldoc import load_documents, render_document, render_documents

__all__ = [
    "ChangeSet",
    "InvalidPath",
    "PushRejected",
    "RefConflict",
    "RemoteRepoWriter",
    "RepoWriter",
    "WriteResult",
    "ensure_bare_repo",
    "list_files",
    "load_documents",
    "read_file",
    "render_document",
    "render_documents",
    "validate_path",
    "writer_for",
]
