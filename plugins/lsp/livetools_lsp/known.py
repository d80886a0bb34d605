"""Servers we know for suffixes no built-in serves: what the "no language server handles .X"
answer suggests writing as `[lsp.servers.NAME]` (each installable from PyPI, npm or Debian).
Suggestions only: none is started unless configured."""

from __future__ import annotations

# suffix -> (name, command, where it comes from)
KNOWN: dict[str, tuple[str, list[str], str]] = {
    ".java": ("jdtls", ["jdtls"], "Eclipse JDT LS"),
    ".php": ("intelephense", ["intelephense", "--stdio"], "npm intelephense"),
    ".yaml": ("yaml-language-server", ["yaml-language-server", "--stdio"], "npm"),
    ".yml": ("yaml-language-server", ["yaml-language-server", "--stdio"], "npm"),
    ".vue": ("vue-language-server", ["vue-language-server", "--stdio"], "npm @vue/language-server"),
    ".svelte": ("svelteserver", ["svelteserver", "--stdio"], "npm svelte-language-server"),
    ".json": (
        "vscode-json-language-server",
        ["vscode-json-language-server", "--stdio"],
        "npm vscode-langservers-extracted",
    ),
    ".css": (
        "vscode-css-language-server",
        ["vscode-css-language-server", "--stdio"],
        "npm vscode-langservers-extracted",
    ),
    ".html": (
        "vscode-html-language-server",
        ["vscode-html-language-server", "--stdio"],
        "npm vscode-langservers-extracted",
    ),
    ".toml": ("taplo", ["taplo", "lsp", "stdio"], "npm @taplo/cli"),
    ".f90": ("fortls", ["fortls"], "PyPI fortls"),
    ".cmake": ("cmake-language-server", ["cmake-language-server"], "PyPI cmake-language-server"),
    ".dockerfile": (
        "docker-langserver",
        ["docker-langserver", "--stdio"],
        "npm dockerfile-language-server-nodejs",
    ),
    ".graphql": ("graphql-lsp", ["graphql-lsp", "server", "-m", "stream"], "npm"),
    ".prisma": ("prisma-language-server", ["prisma-language-server", "--stdio"], "npm"),
    ".sql": ("sql-language-server", ["sql-language-server", "up", "--method", "stdio"], "npm"),
    ".md": ("marksman", ["marksman", "server"], "marksman"),
}


def how_to_add(suffix: str) -> str:
    """The section to write for `suffix`, with a known server's command when there is one."""
    name, command, origin = KNOWN.get(suffix, ("NAME", ["the-server", "--stdio"], ""))
    quoted = ", ".join(f'"{c}"' for c in command)
    example = f'[lsp.servers.{name}] command = [{quoted}], extensions = ["{suffix}"]'
    known = f" ({name}: {origin})" if origin else ""
    return f"add one in .livetools.toml{known}: {example} (docs/configuration.md)"
