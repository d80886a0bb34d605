"""GraphQL: graphql-lsp (graphql-language-service-cli). It serves only a project with a GraphQL
config (which schema, which documents), hence the markers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="graphql-lsp",
        command=("graphql-lsp", "server", "-m", "stream"),
        extensions={".graphql": "graphql", ".graphqls": "graphql", ".gql": "graphql"},
        markers=(
            ".graphqlrc",
            ".graphqlrc.yml",
            ".graphqlrc.yaml",
            ".graphqlrc.json",
            "graphql.config.yml",
            "graphql.config.json",
            "graphql.config.js",
            "graphql.config.ts",
        ),
    ),
)
