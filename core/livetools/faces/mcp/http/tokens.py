"""Where `serve --http`'s token comes from: `$LIVETOOLS_HTTP_TOKEN`, a `--token-file` only its
owner can read, or (neither given) one made at start, as Jupyter does: random, written to a
0600 file in a 0700 state folder, and printed once with the header clients send. A loopback
port is reachable by every local user, so an open server is only ever an explicit
`--no-token`."""

from __future__ import annotations

import os
import secrets
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

TOKEN_ENV = "LIVETOOLS_HTTP_TOKEN"


class TokenError(Exception):
    """A token source that cannot be used; the message says what to do."""


def read_token_file(name: str) -> str:
    """The token in `name`, refused when group or others may read or change it (another user
    would then hold the server's key)."""
    try:
        mode = os.stat(name).st_mode
        if mode & 0o077:
            raise TokenError(
                f"--token-file {name}: open to group or others (mode {stat.S_IMODE(mode):o}); "
                f"run `chmod 600 {name}` and start again"
            )
        token = Path(name).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise TokenError(f"--token-file {name}: {exc.strerror}") from None
    if not token:
        raise TokenError(f"--token-file {name}: the file is empty")
    return token


def env_token() -> str | None:
    return os.environ.get(TOKEN_ENV, "").strip() or None


def state_dir() -> Path:
    """$XDG_RUNTIME_DIR/livetools/http, else ~/.cache/livetools/http (beside the resident's
    sockets): created 0700, and refused unless it is ours and closed to everyone else."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        path = Path(runtime) / "livetools" / "http"
    else:
        path = Path.home() / ".cache" / "livetools" / "http"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise TokenError(f"the token folder {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise TokenError(
            f"the token folder {path} is not a directory only we can open (mode "
            f"{stat.S_IMODE(st.st_mode):o}, uid {st.st_uid}); remove it or pass --token-file"
        )
    return path


@dataclass
class MadeToken:
    """A token made for one server: its file goes when the server stops."""

    token: str
    path: Path

    def remove(self) -> None:
        try:
            if self.path.read_text(encoding="utf-8").strip() == self.token:
                self.path.unlink()
        except OSError:
            pass


def make_token(host: str, port: int) -> MadeToken:
    """A fresh token for the server bound at host:port, in a 0600 file named after them
    (written beside and renamed, so no reader ever sees it half written or widely open)."""
    token = secrets.token_hex(32)
    folder = state_dir()
    path = folder / f"serve-{host.replace(':', '_')}-{port}.token"
    scratch = folder / f".{path.name}.{os.getpid()}"
    try:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(token + "\n")
        os.replace(scratch, path)
    except OSError as exc:
        scratch.unlink(missing_ok=True)
        raise TokenError(f"the token file {path}: {exc.strerror}") from None
    return MadeToken(token, path)


def announce(made: MadeToken) -> None:
    """Once, on stderr: where the token is and the exact header a client sends."""
    print(
        f"livetools serve: no token given ({TOKEN_ENV} or --token-file), so one was made; it "
        f"is in {made.path} (mode 600, removed when the server stops). Clients send:\n"
        f"    Authorization: Bearer {made.token}",
        file=sys.stderr,
        flush=True,
    )


def warn_open(bind: str) -> None:
    print(
        f"livetools serve: WARNING: --no-token: every local user can call this server's tools "
        f"on {bind} as you (eval, write, exec included)",
        file=sys.stderr,
        flush=True,
    )
