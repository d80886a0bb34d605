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
_C_NAME = {
    "u8": "unsigned char",
    "u16": "unsigned short",
    "u32": "unsigned int",
    "u64": "unsigned long",
    "usize": "unsigned long",
    "i8": "char",
    "i16": "short",
    "i32": "int",
    "i64": "long",
    "isize": "long",
}
_C_NAMES = re.compile(r"\b(" + "|".join(_C_NAME) + r")\b")
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
    if inner.startswith(("alloc::string::String", "alloc::vec::Vec<")):
        return _capacity_niche(value, inner) or unknown
    if _POINTER.match(inner):
        raw = _read(value, 0, 8)
        if raw is None:
            return unknown
        pointer = int.from_bytes(raw, "little")
        return "None" if pointer == 0 else f"Some(0x{pointer:x})"
    return unknown


def _field_offset(kind: Any, name: str, depth: int = 0) -> int | None:
    """Byte offset of the first field called `name`, searched down through nested fields."""
    for i in range(kind.GetNumberOfFields()):
        field = kind.GetFieldAtIndex(i)
        if field.GetName() == name:
            return field.GetOffsetInBytes()
        if depth < 6:
            below = _field_offset(field.GetType(), name, depth + 1)
            if below is not None:
                return field.GetOffsetInBytes() + below
    return None


def _capacity_niche(value: Any, inner: str) -> str | None:
    """A String's or Vec's capacity is at most isize::MAX: Option's None is the capacity 2**63.
    Some shows the payload's own summary (`Some("hi")`, `Some(size=2)`)."""
    target = value.GetTarget()
    kind = target.FindFirstType(inner)
    if not kind.IsValid():  # lldb names `Vec<u64>` `Vec<unsigned long>`
        kind = target.FindFirstType(_C_NAMES.sub(lambda m: _C_NAME[m.group(0)], inner))
    # every Vec, and String (a Vec<u8>), keeps its capacity at the same offset
    layout = kind if kind.IsValid() else target.FindFirstType("alloc::string::String")
    offset = _field_offset(layout, "cap") if layout.IsValid() else None
    raw = _read(value, offset, 8) if offset is not None else None
    if raw is None:
        return None
    if int.from_bytes(raw, "little") == 1 << 63:
        return "None"
    if not kind.IsValid():
        return "Some(..)"
    payload = value.CreateValueFromAddress("payload", value.GetLoadAddress(), kind)
    shown = payload.GetSummary() or payload.GetValue()
    return f"Some({shown.strip()})" if shown else "Some(..)"
