"""The name issue 5 gives this benchmark; the code is bench/debug.py.

uv run python bench/debug_latency.py [--repeats 5] [--steps 20] [--adapters debugpy,lldb,delve]
"""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(str(Path(__file__).with_name("debug.py")), run_name="__main__")
