"""CMake: cmake-language-server (its own pygls 1 environment: it does not run on pygls 2)."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="cmake-language-server",
        command=("cmake-language-server",),
        extensions={".cmake": "cmake", "CMakeLists.txt": "cmake"},
    ),
)
