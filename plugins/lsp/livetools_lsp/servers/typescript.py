"""TypeScript and JavaScript servers."""

from __future__ import annotations

from ..spec import ServerSpec

TS_EXT = {
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".mjs": "javascript",
    ".cjs": "javascript",
}
TS_MARKERS = ("tsconfig.json", "jsconfig.json", "package.json")
SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="typescript-language-server",
        command=("typescript-language-server", "--stdio"),
        extensions=TS_EXT,
        markers=TS_MARKERS,
        # Rename the declaration, not a local alias ("import { A as B }") at the use site.
        init_options={"preferences": {"providePrefixAndSuffixTextForRename": False}},
        checker=("tsc", "--noEmit", "--pretty", "false"),
        checker_requires=("tsconfig.json",),
        warmup=12.0,
        await_progress=True,
        unchanged_after=1.5,
        first_diagnostics=15.0,
        # Syntax diagnostics first, semantic ones 0.14 s later on an idle machine: a file a
        # write opened took the 0-item syntax publish as its baseline (70 old errors "new").
        settle=0.6,
    ),
    ServerSpec(
        id="tsgo",
        command=("tsc", "--lsp", "--stdio"),
        # `--version` passes on TypeScript 5/6 too, whose tsc has no --lsp (TS5023, exit 1).
        # TypeScript 7 exits 0 at the end of its (empty) stdin; its `--lsp --help` exits 2.
        probe=("tsc", "--lsp", "--stdio"),
        extensions=TS_EXT,
        markers=TS_MARKERS,
        checker=("tsc", "--noEmit", "--pretty", "false"),
        checker_requires=("tsconfig.json",),
    ),
)
