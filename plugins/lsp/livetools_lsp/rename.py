"""`lsp_rename`: a separate write-tier tool, so a read-only explorer never gets to rewrite the
repo. The server's WorkspaceEdit (`changes` or `documentChanges`, file operations included) is
turned into one staged edit and applied all-or-nothing through the host's write wrapping, so the
rename's own result carries any diagnostics it introduced."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from livetools import (
    CallContext,
    EditConflict,
    PathError,
    Result,
    StagedEdit,
    ToolError,
    relpath,
    resolve_path,
)
from livetools.approvals import asks_in_call, confirm
from livetools.files import read_bytes_sync
from livetools.files.staging import Staged

from .code_actions import KIND, apply_action, apply_kind
from .completeness import (
    ASK_BOUND,
    MAX_OPENED,
    classify,
    declaration,
    note,
    outside,
    refusal,
)
from .jsonrpc import RpcTimeout
from .ledger import significant
from .moves import move_file
from .positions import LineIndex
from .server import LanguageServer, uri_path
from .supervisor import Supervisor

DIFF_LINES = 60
OPEN_LOAD_BEGINS = 0.5  # seconds a load started by opening files has to show itself


class RenameArgs(BaseModel):
    file: str | None = None
    line: int | None = Field(None, ge=1)
    symbol: str | None = Field(None, description="The name on that line; name#2 = 2nd match.")
    new_name: str | None = Field(None, min_length=1)
    preview: bool = Field(False, description="Stage only: a diff and an edit_id for resolve.")
    apply: str | None = Field(None, description="An lsp code_actions id, or a kind (quickfix).")
    move_to: str | None = None


DESCRIPTION = (
    "Rename a symbol project-wide (file, line, symbol as in lsp; new_name), apply a code "
    "action, or move file to move_to (imports follow); all files change or none."
)


class Workspace:
    """The files a WorkspaceEdit touches, as in-memory texts, applied in the edit's order.

    Every text edit must cover exactly `old` in the current text of its file (or, when the
    edit also moves files, a piece of a moved file's old path, as in an import): an edit that
    covers anything else was computed on a text that is not the one on disk, and applying it
    would corrupt the file, so the whole rename is refused."""

    def __init__(
        self, sup: Supervisor, server: LanguageServer, old: str | None = None, new: str = ""
    ) -> None:
        self.root = sup.root
        self.server = server
        self.old = old
        self.new = new
        self.texts: dict[Path, str | None] = {}
        self.read: dict[Path, str] = {}  # what each file held when it was read
        self.edits: dict[Path, int] = {}
        self.moves: list[str] = []
        self.moved_from: list[Path] = []
        self.moved_to: dict[Path, Path] = {}  # for the diff: a move, not a delete and a create
        self.replaced: dict[Path, list[tuple[str, str]]] = {}  # (covered, new text) per edit

    def stage(self, what: str, again: str) -> StagedEdit:
        """The files whose bytes change, staged; refused when one changed on disk since it was
        read (the edit was computed on the old text)."""
        contents: dict[str | Path, str | bytes | None] = {p: t for p, t in self.texts.items()}
        staged = StagedEdit.stage(self.root, contents)
        for change in staged.changes:
            seen = self.read.get(change.path)
            if seen is not None and (change.original or b"").decode("utf-8", "replace") != seen:
                raise ToolError(
                    f"{relpath(self.root, change.path)} changed while the {what} was computed; "
                    f"nothing was changed. {again}"
                )
        return StagedEdit(staged.root, [c for c in staged.changes if c.original != c.new])

    def _path(self, uri: str) -> Path:
        path = uri_path(uri)
        if path is None:
            raise ToolError(f"the rename touches {uri}, which is not a file; nothing was changed")
        try:
            return resolve_path(self.root, path)
        except PathError:
            raise ToolError(
                f"the rename would edit {path}, outside the project root; nothing was changed"
            ) from None

    def _text(self, path: Path) -> str:
        if path not in self.texts:
            try:
                text = read_bytes_sync(path, self.root).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ToolError(f"cannot read {relpath(self.root, path)}: {exc}") from None
            self.texts[path] = self.read[path] = text
        text = self.texts[path]
        if text is None:
            raise ToolError(f"the rename edits {relpath(self.root, path)} after deleting it")
        return text

    def text_edits(self, uri: str, edits: list[dict[str, Any]]) -> None:
        path = self._path(uri)
        text = self._text(path)
        index = LineIndex(text)
        spans = []
        for edit in edits:
            rng = edit.get("range") or {}
            start = index.offset(rng.get("start") or {}, self.server.encoding)
            end = index.offset(rng.get("end") or {}, self.server.encoding)
            spans.append((start, end, str(edit.get("newText", ""))))
        spans.sort(key=lambda s: (s[0], s[1]))
        for start, end, new_text in spans:
            self._check(path, text, start, end, new_text)
            self.replaced.setdefault(path, []).append((text[start:end], new_text))
        for (_, end_a, _), (start_b, _, _) in itertools.pairwise(spans):
            if start_b < end_a:
                raise ToolError(
                    f"{self.server.spec.id} sent overlapping edits for "
                    f"{relpath(self.root, path)}; nothing was changed"
                )
        for start, end, new in reversed(spans):
            text = text[:start] + new + text[end:]
        self.texts[path] = text
        self.edits[path] = self.edits.get(path, 0) + len(spans)

    def _check(self, path: Path, text: str, start: int, end: int, new_text: str) -> None:
        if self.old is None:
            return
        covered = text[start:end]
        if covered == self.old or (covered and any(_in_path(covered, p) for p in self.moved_from)):
            return
        if self.new and _only_renamed(covered, new_text, self.old, self.new):
            return  # a whole-block replacement (pylsp/rope) that changes only the name
        line = text.count("\n", 0, start) + 1
        raise ToolError(
            f"refused the whole rename: {self.server.spec.id}'s edit for "
            f"{relpath(self.root, path)}:{line} covers {covered[:80]!r}, not {self.old!r}, in the "
            "file's current text (the server's copy was out of date); nothing was changed. "
            "Run lsp reload and rename again."
        )

    def operation(self, op: dict[str, Any]) -> None:
        kind = op.get("kind")
        options = op.get("options") or {}
        if kind == "create":
            path = self._path(str(op.get("uri")))
            exists = self.texts.get(path) is not None or (path not in self.texts and path.exists())
            if exists and not options.get("overwrite"):
                if options.get("ignoreIfExists"):
                    return
                raise ToolError(f"the rename would create {relpath(self.root, path)}, which exists")
            self.texts[path] = ""
        elif kind == "rename":
            old = self._path(str(op.get("oldUri")))
            new = self._path(str(op.get("newUri")))
            target_exists = self.texts.get(new) is not None or (
                new not in self.texts and new.exists()
            )
            if target_exists and not options.get("overwrite"):
                if options.get("ignoreIfExists"):
                    return
                raise ToolError(
                    f"the rename would move {relpath(self.root, old)} onto "
                    f"{relpath(self.root, new)}, which exists; nothing was changed"
                )
            self.texts[new] = self._text(old)
            self.texts[old] = None
            self.moved_to[old] = new
            self.edits[new] = self.edits.pop(old, 0)
            self.moves.append(f"{relpath(self.root, old)} -> {relpath(self.root, new)}")
        elif kind == "delete":
            path = self._path(str(op.get("uri")))
            self.texts[path] = None
            self.moves.append(f"deleted {relpath(self.root, path)}")
        else:
            raise ToolError(f"unknown workspace edit operation {kind!r}; nothing was changed")

    def apply_edit(self, edit: dict[str, Any]) -> None:
        for change in edit.get("documentChanges") or []:
            if change.get("kind") == "rename" and (old := uri_path(str(change.get("oldUri")))):
                self.moved_from.append(old)
        if edit.get("documentChanges") is not None:
            for change in edit["documentChanges"]:
                if "kind" in change:
                    self.operation(change)
                else:
                    doc = change.get("textDocument") or {}
                    self.text_edits(str(doc.get("uri")), list(change.get("edits") or []))
        else:
            for uri, edits in (edit.get("changes") or {}).items():
                self.text_edits(uri, list(edits or []))


def _in_path(covered: str, old: Path) -> bool:
    """Whether an edit's covered text is part of a moved file's old path (an import of it)."""
    spelled = old.with_suffix("").as_posix()
    return covered.strip("\"'") in spelled or covered == old.name


_TOKENS = re.compile(r"[\w$]+|[^\w$]+")


def _only_renamed(covered: str, new_text: str, old: str, new: str) -> bool:
    """Whether `new_text` is `covered` with some whole occurrences of `old` turned into `new`
    and nothing else changed."""
    before, after = _TOKENS.findall(covered), _TOKENS.findall(new_text)
    if len(before) != len(after) or old not in before:
        return False
    return all(a == b or (a == old and b == new) for a, b in zip(before, after, strict=True))


async def _complete(
    sup: Supervisor,
    server: LanguageServer,
    params: dict[str, Any],
    old: str,
    work: Workspace,
    ask: Callable[[], Awaitable[Workspace]],
    spot: tuple[Path, int],
) -> str | None:
    """Make `work` complete or refuse (completeness.py); a note on mentions left alone. `work`
    is replaced in place by the second answer when files had to be opened first."""
    files, partial = await asyncio.to_thread(outside, sup.root, server, old, set(work.texts))
    if not files:
        return None
    for extra in files[:MAX_OPENED]:
        with contextlib.suppress(ToolError):
            await server.sync(extra)
    await _loaded_after_open(server, sup.ready_timeout)
    again = await ask()
    work.__dict__.update(again.__dict__)
    left = [p for p in files if p not in work.texts]
    if not left:
        return None
    try:
        result = await server.request(
            "textDocument/definition", params, bound=ASK_BOUND, what="definition", soft=True
        )
    except (RpcTimeout, ToolError):
        result = None
    mentions = await classify(sup.root, server, old, left, declaration(result) | {spot})
    mentions.partial = partial
    refused = refusal(server, old, mentions)
    if refused is not None:
        raise refused
    return note(mentions, old)


async def _loaded_after_open(server: LanguageServer, bound: float) -> None:
    """Files just opened may start the server loading their projects (typescript-language-
    server begins a `$/progress` ~20 ms after the open and answers from its partial syntax
    server meanwhile: 1 file renamed where 4 were due). Wait a moment for such a load to
    begin, then for it to end, within `bound`."""
    loop = asyncio.get_running_loop()
    begin = loop.time() + OPEN_LOAD_BEGINS
    while not server.readiness.active and (left := begin - loop.time()) > 0:
        await server.wait_change(left)
    if server.readiness.active:
        await server.ready(bound)


def stage_for_resolve(
    ctx: CallContext,
    staged: StagedEdit,
    edited: dict[str, int],
    proposal: str,
    diff: str,
    around: Callable[[], AbstractContextManager[object]],
) -> Result:
    """`preview`: the change staged in the run's ledger for `resolve`, which checks every file
    against what was read here before it writes (the same all-or-nothing write). `around` is
    entered around that write (a rename's ledger reads old diagnostics renamed)."""
    if ctx.run.registry.get("resolve") is None:
        raise ToolError(
            "preview needs the resolve tool (the astgrep family), which this run does not "
            "have; nothing was changed. Call lsp_rename without preview"
        )
    total = sum(edited.values())
    files = list(edited) or staged.files()
    edit_id = ctx.run.staged.add(Staged(staged, total, files, "lsp_rename", around))
    head = (
        f'{proposal}; nothing written yet. Call resolve with edit_id "{edit_id}" and action '
        '"accept" to write, or "discard"'
    )
    data = {"edit_id": edit_id, "files": files, "edits": edited}
    return Result("\n".join([head, diff]), data)


# fullmatch: `$` alone would let "Box\n" through.
_NAME = re.compile(r"[^\W\d][\w$]*|\$[\w$]*")


@asks_in_call  # approve=ask: the card waits until the rename is staged, so its counts are real
async def lsp_rename(ctx: CallContext, args: RenameArgs) -> Result:
    from .actions import _file_path, _position, _until_ready

    sup: Supervisor = ctx.resource
    if args.apply is not None:
        if args.new_name is not None or args.preview or args.move_to is not None:
            raise ToolError("apply takes only the action id; rename with new_name separately")
        if KIND.fullmatch(args.apply.strip()):  # a kind: the file's action of that kind
            if args.file is None:
                raise ToolError(f"apply {args.apply!r} (a kind) needs file: the file to act on")
            path = _file_path(sup, args.file, "lsp_rename")
            return await apply_kind(ctx, sup, path, args.apply.strip(), args.line, args.symbol)
        return await apply_action(ctx, sup, args.apply)
    if args.move_to is not None:
        extra = [k for k in ("line", "symbol", "new_name") if getattr(args, k) is not None]
        if extra or args.file is None:
            raise ToolError(
                "move_to moves a whole file: pass file and move_to only"
                + (f" (not {', '.join(extra)})" if extra else " (file is missing)")
            )
        path = _file_path(sup, args.file, "lsp_rename")
        return await move_file(ctx, sup, path, args.move_to, args.preview)
    if args.file is None or args.line is None or args.symbol is None or args.new_name is None:
        given = [k for k in ("file", "line", "symbol", "new_name") if getattr(args, k) is None]
        raise ToolError(
            f"a rename needs file, line, symbol and new_name (missing: {', '.join(given)}); or "
            "pass apply with a code action id from lsp code_actions"
        )
    if not _NAME.fullmatch(args.new_name):
        raise ToolError(
            f"new_name {args.new_name[:200]!r} is not an identifier; pass the bare new name"
        )
    path = _file_path(sup, args.file, "lsp_rename")
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    if not server.supports("renameProvider", "textDocument/rename"):
        raise ToolError(f"{server.spec.id} does not support rename")
    await _blockers(sup, server, path)
    bound = sup.ready_timeout
    # The file first: typescript-language-server loads its project only once a file of it is
    # open, so a wait for that load before the open ran out its whole 12 s warmup.
    params, spot = await _position(server, path, args.line, args.symbol, rel)
    pending = await server.ready(bound)
    if pending is not None:  # a rename now could miss uses in files not loaded yet: refuse it
        raise ToolError(
            f"{server.spec.id} was {pending} after {bound:g}s (its project is still loading), "
            "so a rename now could miss uses; nothing was changed. Ask again shortly, or raise "
            "the run option ready_timeout"
        )
    if spot.partial:
        raise ToolError(
            f'"{args.symbol}" is only part of the identifier "{spot.ident}" on {rel}:{args.line}; '
            f'pass symbol="{spot.ident}" to rename it'
        )
    old = spot.ident
    provider = server.capabilities.get("renameProvider")
    if isinstance(provider, dict) and provider.get("prepareProvider"):
        prepared = await _until_ready(server, "textDocument/prepareRename", params, "rename")
        if prepared is None:
            raise ToolError(
                f'{server.spec.id} cannot rename "{args.symbol}" at {rel}:{args.line} '
                "(not a renameable symbol there); point at the name's declaration or a use"
            )
        old = _prepared_name(prepared, server, params["textDocument"]["uri"]) or old
    if not old:
        raise ToolError(
            f'"{args.symbol}" on {rel}:{args.line} is not a name; point at the identifier to rename'
        )
    new_name = args.new_name
    renamed = {**params, "newName": new_name}

    async def ask() -> Workspace:
        edit = await _until_ready(server, "textDocument/rename", renamed, "rename")
        if not isinstance(edit, dict) or not (edit.get("changes") or edit.get("documentChanges")):
            raise ToolError(
                f'{server.spec.id} returned no edits for renaming "{args.symbol}" at {rel}:'
                f"{args.line}; nothing was changed"
            )
        work = Workspace(sup, server, old, new_name)
        work.apply_edit(edit)
        return work

    work = await ask()
    left_note = await _complete(sup, server, params, old, work, ask, (path, spot.line))
    staged = work.stage("rename", "Rename again.")
    if not staged.changes:
        raise ToolError(f"the rename to {args.new_name} changes nothing; nothing was written")
    diff = staged.diff(DIFF_LINES, work.moved_to)
    edited = {relpath(sup.root, p): n for p, n in work.edits.items() if n}
    if args.preview:
        total = sum(edited.values())
        proposal = f'(proposed) rename "{old}" → "{new_name}": {total} edits in {len(edited)} '
        proposal += "files: " + ", ".join(f"{f} ({n})" for f, n in edited.items())
        ledger = sup.ledger
        return stage_for_resolve(
            ctx, staged, edited, proposal, diff, lambda: ledger.renaming(old, new_name)
        )
    card = f'rename "{old}" → "{args.new_name}": {sum(edited.values())} edits in {len(edited)} '
    await confirm(ctx, card + "files: " + ", ".join(f"{f} ({n})" for f, n in edited.items()))
    try:
        with sup.ledger.renaming(old, args.new_name):
            notes = await staged.apply(ctx.run)
    except EditConflict as exc:
        raise ToolError(str(exc)) from None
    for moved in list(work.texts):
        if work.texts[moved] is None:
            await server.close(moved)
    total = sum(work.edits.values())
    files = ", ".join(f"{relpath(sup.root, p)} ({n})" for p, n in work.edits.items() if n)
    head = f'renamed "{args.symbol}" to "{args.new_name}": {total} edits in {len(work.edits)} '
    head += f"files: {files}"
    lines = [head]
    if spot.note:
        lines.append(spot.note)
    if left_note:
        lines.append(left_note)
    lines += [f"moved: {m}" for m in work.moves]
    lines.append(diff)
    lines += notes
    return Result(
        "\n".join(lines),
        {
            "files": staged.files(),
            "edits": {relpath(sup.root, p): n for p, n in work.edits.items()},
            "moves": work.moves,
            "notes": notes,
        },
    )


def _prepared_name(prepared: Any, server: LanguageServer, uri: str) -> str:
    """The old name as the server sees it: prepareRename's range in our (current) text, else
    its placeholder."""
    if not isinstance(prepared, dict):
        return ""
    rng = prepared.get("range") if "range" in prepared else prepared
    doc = server.documents.get(uri)
    if doc is not None and isinstance(rng, dict) and "start" in rng and "end" in rng:
        index = LineIndex(doc.text)
        start = index.offset(rng["start"], server.encoding)
        end = index.offset(rng["end"], server.encoding)
        if 0 <= start < end:
            return doc.text[start:end]
    placeholder = prepared.get("placeholder")
    return placeholder if isinstance(placeholder, str) else ""


async def _blockers(sup: Supervisor, server: LanguageServer, path: Path) -> None:
    """Refuse when the server says it cannot see the whole project (clangd without its include
    paths renames 1 of 3 files): a partial rename must not be applied silently."""
    for name in server.spec.rename_requires:
        if not (server.root / name).exists():
            raise ToolError(
                f"{server.spec.id} can only rename in files it has indexed, which needs {name} "
                f"in {relpath(sup.root, server.root)}; without it the rename would miss files "
                "that are not open, so nothing was changed. Generate it (e.g. cmake "
                "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON, or bear -- make) or edit the uses directly."
            )
    if not server.spec.rename_blockers:
        return
    doc, _ = await server.sync(path)
    raw = await server.diagnostics(doc, server.spec.first_diagnostics)
    for item in significant(raw or []):
        if item.code in server.spec.rename_blockers:
            raise ToolError(
                f"{server.spec.id} cannot see the whole project from {relpath(sup.root, path)} "
                f"(line {item.line}: {item.message} [{item.code}]), so a rename now would miss "
                "files; nothing was changed. Fix the project setup (e.g. compile_commands.json "
                "with the include paths) and try again."
            )
