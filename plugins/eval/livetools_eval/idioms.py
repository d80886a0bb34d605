"""The reflex idioms (`%pip`, `%cd`, `!cmd`, `%%bash`, `%%timeit`) for kernels that are not IPython.

IPython kernels run them natively (with our `%pip` and `!cmd` installed by the helpers). A plain
Python kernel gets IPython's own input transformer (the idioms become `get_ipython().system(...)`
etc., served by a small shim the helpers define). JavaScript gets a line rewrite into calls of
`__livetools__` helpers, with `!cmd` only where the line cannot be JavaScript-looking code."""

from __future__ import annotations

import json
import re

from .hookspecs import Dialect


class RewriteError(Exception):
    """An idiom that has no meaning in this kernel; the message says what to do instead."""


_JS_SHELL = re.compile(r"^(\s*)!\s*([A-Za-z_./~][\w./+~-]*)(\s.*)?$")
_JS_NOT_SHELL = re.compile(r"[(){}]|=>|\s=\s")  # then it reads as a JavaScript expression
_MAGIC = re.compile(r"^(\s*)%(\w+)\s*(.*)$")


def rewrite(code: str, dialect: Dialect | str, language: str) -> str:
    if dialect in ("ipython", "none"):
        return code
    if dialect == "javascript":
        return _javascript(code, language)
    return _python(code)


def _python(code: str) -> str:
    if "%" not in code and "!" not in code:
        return code
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(code)


def _js_str(text: str) -> str:
    return json.dumps(text)


def _javascript(code: str, language: str) -> str:
    lines = code.split("\n")
    first = lines[0].strip()
    if first.startswith("%%"):
        name, _, rest = first[2:].partition(" ")
        body = "\n".join(lines[1:])
        if name in ("bash", "sh"):
            return f"await __livetools__.script({_js_str(name)}, {_js_str(body)});"
        if name == "timeit":
            number, repeat = _timeit_counts(rest)
            return f"await __livetools__.timeit(async () => {{\n{body}\n}}, {number}, {repeat});"
        if name == "time":
            return f"await __livetools__.time(async () => {{\n{body}\n}});"
        raise RewriteError(
            f"%%{name} is not available in the {language} kernel; it knows %%bash, %%sh, "
            "%%timeit, %%time"
        )
    out = []
    for line in lines:
        magic = _MAGIC.match(line)
        if magic:
            indent, name, rest = magic.groups()
            out.append(indent + _js_line_magic(name, rest.strip(), language))
            continue
        shell = _JS_SHELL.match(line)
        if shell and not _JS_NOT_SHELL.search(line):
            command = line.strip()[1:].strip()
            out.append(f"{shell.group(1)}await __livetools__.system({_js_str(command)});")
            continue
        out.append(line)
    return "\n".join(out)


def _js_line_magic(name: str, rest: str, language: str) -> str:
    if name == "cd":
        return f"__livetools__.cd({_js_str(rest)});"
    if name == "timeit":
        number, repeat, stmt = _timeit_line(rest)
        return f"await __livetools__.timeit(async () => {{ {stmt}\n}}, {number}, {repeat});"
    if name == "time":
        return f"await __livetools__.time(async () => {{ {rest}\n}});"
    if name in ("pip", "conda"):
        raise RewriteError(
            f"%{name} is Python-only; in {language} import packages by specifier instead, e.g. "
            "`const _ = (await import('npm:lodash@4')).default`"
        )
    if name in ("bash", "sh", "system"):
        return f"await __livetools__.system({_js_str(rest)});"
    raise RewriteError(
        f"%{name} is not available in the {language} kernel; it knows %cd, %timeit, %time, "
        "!cmd, %%bash, %%timeit"
    )


def _timeit_counts(options: str) -> tuple[int, int]:
    number, repeat, _ = _timeit_line(options)
    return number, repeat


def _timeit_line(text: str) -> tuple[int, int, str]:
    number, repeat = 0, 7
    words = text.split()
    while len(words) >= 2 and words[0] in ("-n", "-r") and words[1].isdigit():
        if words[0] == "-n":
            number = int(words[1])
        else:
            repeat = int(words[1])
        words = words[2:]
    return number, repeat, " ".join(words)
