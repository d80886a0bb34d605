"""Rendering of iopub messages, without a kernel: the cases a real kernel produces rarely or
only with extra packages (display updates, clear_output, floods, HTML-only bundles)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from livetools_eval.idioms import RewriteError, rewrite
from livetools_eval.outputs import Outputs, html_to_text
from livetools_testkit import png


def msg(kind: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": kind, "content": content}


def bundle(kind: str = "display_data", display_id: str | None = None, **data: Any) -> dict:
    transient = {"display_id": display_id} if display_id else {}
    return msg(kind, data=data, metadata={}, transient=transient)


def test_display_updates_and_clear_output() -> None:
    out = Outputs()
    out.add(msg("stream", name="stdout", text="start\n"))
    out.add(bundle(display_id="bar", **{"text/plain": "10%"}))
    out.add(bundle("update_display_data", display_id="bar", **{"text/plain": "100%"}))
    assert out.render(1000, 100) == "start\n100%"
    out.add(msg("clear_output", wait=True))
    assert out.render(1000, 100) == "start\n100%"  # cleared only when the next output comes
    out.add(msg("stream", name="stdout", text="fresh\n"))
    assert out.render(1000, 100) == "fresh"


def test_identical_images_sent_once_and_capped() -> None:
    out = Outputs(max_images=2)
    red, wide = png(), png(3, 1)
    for image in (red, red, wide, png(1, 1)):
        out.add(bundle(**{"image/png": base64.b64encode(image).decode(), "text/plain": "<Fig>"}))
    assert out.images == [red, wide]
    assert out.render(1000, 100).splitlines() == [
        "[image 1: PNG 2x2]",
        "[image 2: PNG 3x1]",
        "[image not sent: 2 images per cell at most]",
    ]


def test_rich_bundles_choose_readable_text() -> None:
    out = Outputs()
    out.add(
        bundle(
            **{
                "text/html": "<b>bold</b> &amp; <i>it</i>",
                "text/plain": "<IPython.core.display.HTML object>",
            }
        )
    )
    out.add(bundle(**{"text/markdown": "# Title", "text/plain": "<Markdown object>"}))
    out.add(bundle(**{"application/json": {"a": 1}}))
    out.add(bundle(**{"image/svg+xml": "<svg/>"}))
    assert out.render(1000, 100).splitlines() == [
        "bold & it",
        "# Title",
        '{"a": 1}',
        "[output of type image/svg+xml: kept in data, not shown as text]",
    ]
    assert {"image/svg+xml": "<svg/>"} in out.rich
    table = "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    assert html_to_text(table) == "a\tb\n1\t2"


def test_flood_keeps_head_and_tail_in_bounded_memory() -> None:
    out = Outputs(store=1000, store_tail=200)
    for i in range(10_000):
        out.add(msg("stream", name="stdout", text=f"line {i}\n"))
    assert out._stored < 1100 and len(out._flood.text) <= 200  # type: ignore[union-attr]
    text = out.render(100_000, 1000)
    assert text.startswith("line 0\n") and text.endswith("line 9999")
    assert "truncated: " in text and "more characters" in text


def test_error_traceback_without_kernel_frames() -> None:
    out = Outputs()
    out.add(
        msg(
            "error",
            ename="EOFError",
            evalue="",
            traceback=[
                "\x1b[31mEOFError\x1b[0m Traceback",
                "Cell In[3], line 1\n----> 1 input()",
                "File /x/site-packages/ipykernel/kernelbase.py:1515, in raw_input",
                "EOFError: ",
            ],
        )
    )
    assert (
        out.render(1000, 100)
        == "EOFError Traceback\nCell In[3], line 1\n----> 1 input()\nEOFError:"
    )


def test_javascript_rewrites() -> None:
    assert rewrite("!ls -la", "javascript", "javascript") == 'await __livetools__.system("ls -la");'
    assert rewrite("!done && go()", "javascript", "javascript") == "!done && go()"
    assert rewrite("x = !y", "javascript", "javascript") == "x = !y"
    assert rewrite("  %cd src", "javascript", "javascript") == '  __livetools__.cd("src");'
    bash = rewrite("%%bash\necho $HOME", "javascript", "javascript")
    assert bash == 'await __livetools__.script("bash", "echo $HOME");'
    with pytest.raises(RewriteError, match="%%html is not available"):
        rewrite("%%html\n<b>", "javascript", "javascript")
    assert rewrite("!ls", "ipython", "python") == "!ls"
    plain = rewrite("!ls\n%cd src\nx = 1", "python", "python")
    assert "get_ipython().system('ls')" in plain and "run_line_magic('cd', 'src')" in plain


def one_marker(text: str) -> int:
    assert text.count("… [truncated: ") == 1, text[:300]
    return int(text.split("… [truncated: ", 1)[1].split(" ", 1)[0])


def test_one_huge_line_keeps_head_and_tail_with_one_marker() -> None:
    out = Outputs()
    line = "HEAD" + "y" * 2_000_000 + "TAIL\n"
    out.add(msg("stream", name="stdout", text=line))
    text = out.render(12_000, 4_000)
    assert text.startswith("HEADyyy") and text.endswith("yyyTAIL")
    assert one_marker(text) == len(line.rstrip("\n")) - 8_000 - 4_000
    assert len(text) < 12_100


def test_many_chunks_crossing_the_store_keep_head_tail_and_count() -> None:
    out = Outputs(store=1000, store_tail=200)
    chunks = [f"<{i:04d}>" + "z" * 93 for i in range(300)]  # 100 characters each
    for chunk in chunks:
        out.add(msg("stream", name="stdout", text=chunk))
    out.add(msg("error", ename="ValueError", evalue="late", traceback=["ValueError: late"]))
    text = out.render(600, 200)
    assert text.startswith("<0000>zz") and text.endswith("ValueError: late")
    whole = "".join(chunks) + "\nValueError: late"
    head, end = text.split("\n… [", 1)[0], text.rsplit("] …\n", 1)[1]
    assert whole.startswith(head) and whole.endswith(end)
    assert one_marker(text) == len(whole) - len(head) - len(end)


def test_many_lines_one_marker_counts_everything_cut() -> None:
    out = Outputs(store=5000, store_tail=1000)
    lines = [f"line {i}\n" for i in range(20_000)]
    for line in lines:
        out.add(msg("stream", name="stdout", text=line))
    text = out.render(3000, 1000)
    whole = "".join(lines).rstrip("\n")
    head, end = text.split("\n… [", 1)[0], text.rsplit("] …\n", 1)[1]
    assert head == whole[:2000] and whole.endswith(end) and len(end) > 990
    assert one_marker(text) == len(whole) - len(head) - len(end)
