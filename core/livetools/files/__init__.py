"""Files of the run: root-confined paths, reads that cannot block, staged multi-file edits."""

from .edits import EditConflict, FileChange, StagedEdit
from .paths import PathError, relpath, resolve_path
from .regular import check_regular, read_bytes, read_bytes_sync, read_text, read_text_sync

__all__ = [
    "EditConflict",
    "FileChange",
    "PathError",
    "StagedEdit",
    "check_regular",
    "read_bytes",
    "read_bytes_sync",
    "read_text",
    "read_text_sync",
    "relpath",
    "resolve_path",
]
