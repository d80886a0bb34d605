"""Line + symbol resolution and column encodings, without a server."""

from __future__ import annotations

import pytest

from livetools import ToolError
from livetools_lsp.positions import LineIndex, decode_column, encode_column, locate

TEXT = 'x = 1\nprint(total, subtotal, total)\ns = "😀ö"; total = 2\r\nend'


def test_whole_identifier_preferred_and_repeats_explained() -> None:
    spot = locate(TEXT, 2, "total", "a.py")
    assert spot.index == 6 and spot.line == 1
    assert spot.note is not None and '"total#2"' in spot.note and "2 times" in spot.note
    assert locate(TEXT, 2, "total#2", "a.py").index == 23
    assert locate(TEXT, 2, "sub", "a.py").index == 13  # only a partial match exists


def test_errors_quote_the_line() -> None:
    with pytest.raises(
        ToolError,
        match=r'symbol "nope" is not on line 1 of a.py; the line is: '
        r'"x = 1"',
    ):
        locate(TEXT, 1, "nope", "a.py")
    with pytest.raises(ToolError, match=r"line 9 is outside a\.py, which has 4 lines"):
        locate(TEXT, 9, "x", "a.py")
    with pytest.raises(ToolError, match="#3 does not exist"):
        locate(TEXT, 2, "total#3", "a.py")


def test_columns_in_each_encoding() -> None:
    line = 's = "😀ö"; total = 2'
    index = line.index("total")
    assert encode_column(line, index, "utf-16") == index + 1  # the emoji is 2 code units
    assert encode_column(line, index, "utf-8") == index + 4  # 4 bytes + 2 bytes - 2 chars
    assert encode_column(line, index, "utf-32") == index
    for encoding in ("utf-16", "utf-8", "utf-32"):
        assert decode_column(line, encode_column(line, index, encoding), encoding) == index


def test_line_index_handles_crlf_and_clamps() -> None:
    index = LineIndex(TEXT)
    assert TEXT[index.offset({"line": 3, "character": 0}, "utf-16") :] == "end"
    col = encode_column(index.lines[2], index.lines[2].index("total"), "utf-16")
    start = index.offset({"line": 2, "character": col}, "utf-16")
    assert TEXT[start : start + 5] == "total"
    assert index.offset({"line": 99, "character": 0}, "utf-16") == len(TEXT)


def test_dotted_symbol_addresses_its_last_component() -> None:
    text = "import os\nx = os.path.basename(p)\n"
    spot = locate(text, 2, "os.path.basename", "a.py")
    assert text.splitlines()[1][spot.index :].startswith("basename(")
    assert spot.ident == "basename" and not spot.partial and spot.note is None


def test_a_substring_inside_an_identifier_says_so() -> None:
    text = "def format_filename(filename, shorten=False):\n"
    spot = locate(text, 1, "name", "a.py")
    assert spot.partial and spot.ident == "format_filename"
    assert spot.note is not None and 'matched inside "format_filename"' in spot.note
    assert "identifiers on the line: def, format_filename, filename, shorten, False" in spot.note
    whole = locate(text, 1, "filename", "a.py")
    assert not whole.partial and whole.index == text.index("(") + 1
