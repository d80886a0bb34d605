"""Loaded INTO lldb (`command script import`), not by livetools: a summary for Rust's `Option`.

lldb 16 drops the variant part of a Rust enum's debug info: an `Option<u32>` reads as `{}` of
one byte, Some and None alike. Its layout is still known for the payloads an agent meets most:
a primitive behind a tag byte (0 None, 1 Some), a pointer where null is None, bool and char with
their niche values. Anything else says that lldb cannot tell rather than guessing."""

from __future__ import annotations

import re
from typing import Any

_OPTION = re.compile(r"^core::option::Option<(.+)>$")
_INTS = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "usize": 8, "u128": 16}
_INTS.update({"i" + name[1:]: size for name, size in _INTS.items()})
_FLOATS = {"f32": ("f", 4), "f64": ("d", 8)}
_POINTER = re.compile(
    r"^(&|\*|alloc::boxed::Box<|core::ptr::non_null::NonNull<|alloc::rc::Rc<|alloc::sync::Arc<)"
)


def _read(value: Any, offset: int, size: int) -> bytes | None:
    import lldb  # pyright: ignore[reportMissingImports]  # only inside lldb

    address = value.GetLoadAddress()
    if address == lldb.LLDB_INVALID_ADDRESS:
        return None
    error = lldb.SBError()
    data = value.GetProcess().ReadMemory(address + offset, size, error)
    return bytes(data) if error.Success() and data is not None else None


def summary(value: Any, _internal: Any = None) -> str:
    match = _OPTION.match(value.GetType().GetName())
    if match is None:
        return ""
    inner = match.group(1).strip()
    unknown = f"Option<{inner}> (lldb 16 cannot read which variant)"
    if inner in _INTS or inner in _FLOATS:
        size = _INTS[inner] if inner in _INTS else _FLOATS[inner][1]
        raw = _read(value, 0, size * 2)
        if raw is None:
            return unknown
        if raw[0] == 0:
            return "None"
        payload = raw[size:]
        if inner in _FLOATS:
            import struct

            return f"Some({struct.unpack('<' + _FLOATS[inner][0], payload)[0]!r})"
        number = int.from_bytes(payload, "little", signed=inner.startswith("i"))
        return f"Some({number})"
    if inner == "bool":
        raw = _read(value, 0, 1)
        if raw is None or raw[0] > 2:
            return unknown
        return "None" if raw[0] == 2 else f"Some({'true' if raw[0] else 'false'})"
    if inner == "char":
        raw = _read(value, 0, 4)
        if raw is None:
            return unknown
        code = int.from_bytes(raw, "little")
        return (
            "None" if code == 0x110000 else f"Some({chr(code)!r})" if code < 0x110000 else unknown
        )
    if _POINTER.match(inner):
        raw = _read(value, 0, 8)
        if raw is None:
            return unknown
        pointer = int.from_bytes(raw, "little")
        return "None" if pointer == 0 else f"Some(0x{pointer:x})"
    return unknown
