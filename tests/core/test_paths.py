"""Root confinement of every path argument."""

from __future__ import annotations

import os

import pytest

from livetools import PathError, relpath, resolve_path


def test_relative_and_absolute_inside_root(tmp_path):
    (tmp_path / "src").mkdir()
    assert resolve_path(tmp_path, "src/a.py") == tmp_path.resolve() / "src" / "a.py"
    assert resolve_path(tmp_path, tmp_path / "src") == tmp_path.resolve() / "src"
    assert resolve_path(tmp_path, ".") == tmp_path.resolve()
    assert relpath(tmp_path, tmp_path / "src" / "a.py") == "src/a.py"
    assert relpath(tmp_path, tmp_path) == "."


@pytest.mark.parametrize("bad", ["../x", "src/../../x", "/etc/passwd", ""])
def test_escapes_are_refused(tmp_path, bad):
    (tmp_path / "src").mkdir()
    with pytest.raises(PathError) as info:
        resolve_path(tmp_path, bad)
    assert "project root" in str(info.value)


def test_symlink_escape_is_refused(tmp_path):
    outside = tmp_path / "outside"
    root = tmp_path / "root"
    outside.mkdir()
    root.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(PathError, match="outside the project root"):
        resolve_path(root, "link/secret.txt")


def test_must_exist_names_the_relative_path(tmp_path):
    with pytest.raises(PathError, match=r"no such file or directory: missing\.py"):
        resolve_path(tmp_path, "missing.py", must_exist=True)
