"""Vim script servers."""

from __future__ import annotations

from ..spec import ServerSpec

# The options its README gives editors: without them the server indexes nothing ("#" in iskeyword
# keeps autoload names like netrw#Explore one word).
_VIM_INIT = {
    "isNeovim": False,
    "iskeyword": "@,48-57,_,192-255,-#",
    "vimruntime": "",
    "runtimepath": "",
    "diagnostic": {"enable": True},
    "indexes": {
        "runtimepath": True,
        "gap": 100,
        "count": 3,
        "projectRootPatterns": [".git", "autoload", "plugin"],
    },
    "suggest": {"fromVimruntime": True, "fromRuntimepath": False},
}

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="vim-language-server",
        command=("vim-language-server", "--stdio"),
        # It has no --version (without --stdio it throws), and at the end of its input it exits 1:
        # healthy is "runs to the end of an empty input and prints nothing" (a missing node or a
        # broken install prints why).
        probe=("sh", "-c", '[ -z "$(vim-language-server --stdio </dev/null 2>&1)" ]'),
        extensions={".vim": "vim"},
        init_options=_VIM_INIT,
    ),
)
