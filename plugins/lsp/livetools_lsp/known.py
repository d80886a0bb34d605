"""Servers we know for suffixes no built-in serves: what the "no language server handles .X"
answer suggests writing as `[lsp.servers.NAME]`. Suggestions only: none is started unless
configured (suffixes a built-in serves are not listed: docs/lsp.md has the table)."""

from __future__ import annotations

# suffix -> (name, command, where it comes from)
KNOWN: dict[str, tuple[str, list[str], str]] = {
    ".java": ("jdtls", ["jdtls"], "Eclipse JDT LS"),
    ".vue": ("vue-language-server", ["vue-language-server", "--stdio"], "npm @vue/language-server"),
    ".sql": ("sql-language-server", ["sql-language-server", "up", "--method", "stdio"], "npm"),
    ".md": ("marksman", ["marksman", "server"], "marksman"),
    ".lua": ("lua-language-server", ["lua-language-server"], "LuaLS"),
    ".rb": ("ruby-lsp", ["ruby-lsp"], "the ruby-lsp gem"),
}


def how_to_add(suffix: str) -> str:
    """The section to write for `suffix`, with a known server's command when there is one."""
    name, command, origin = KNOWN.get(suffix, ("NAME", ["the-server", "--stdio"], ""))
    quoted = ", ".join(f'"{c}"' for c in command)
    example = f'[lsp.servers.{name}] command = [{quoted}], extensions = ["{suffix}"]'
    known = f" ({name}: {origin})" if origin else ""
    return f"add one in .livetools.toml{known}: {example} (docs/configuration.md)"
