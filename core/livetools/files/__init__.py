"""Files of the run: root-confined paths and staged multi-file edits."""

from .edits import EditConflict, FileChange, StagedEdit
from .paths import PathError, relpath, resolve_path

__all__ = ["EditConflict", "FileChange", "PathError", "StagedEdit", "relpath", "resolve_path"]
