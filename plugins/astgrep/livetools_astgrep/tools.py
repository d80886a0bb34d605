"""The three tools: ast_grep (read), ast_edit (stages a rewrite), resolve (accepts or discards)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from pydantic import BaseModel, Field

from livetools import (
    CallContext,
    EditConflict,
    Result,
    StagedEdit,
    ToolError,
    cap_text,
    relpath,
    resolve_path,
)
from livetools.approvals import asks_only_if, card_by
from livetools.files import check_regular
from livetools.files.staging import Staged

from .anchor import explain_empty, explain_unmatched
from .engine import UNPARSED, FileJob
from .gcpause import gc_paused
from .grammar import Grammar
from .metavars import TEMPLATE
from .pattern import Pattern, PatternError
from .resource import AstGrepResource, Searched
from .rewrite import normalize_template
from .table import UnknownLanguage
from .walk import Walked, grammar_for, walk

TEXT_LIMIT = 24_000
MATCH_LINES = 8
VALUE_CHARS = 80
DIFF_LINES = 120


class AstGrepArgs(BaseModel):
    pattern: str = Field(description="Code with $NAME (one node), $$$NAME (zero or more)")
    path: str = Field(".", description="File or directory")
    language: str = Field("", description="Default: from file extensions")
    max_results: int = Field(50, ge=0, strict=True, description="0 = all")


class AstEditArgs(BaseModel):
    pattern: str = Field(description="As in ast_grep")
    rewrite: str = Field(description="Replacement; may use the pattern's $NAMEs")
    path: str = "."
    language: str = ""


class ResolveArgs(BaseModel):
    edit_id: str
    action: Literal["accept", "discard"]


# -- scope: which files, which grammars ------------------------------------------------------------


@dataclass
class Scope:
    target: str  # relative path shown in messages
    groups: dict[str, list[FileJob]]
    walked: Walked | None = None
    explicit: Grammar | None = None
    unparsed: dict[str, str] = field(default_factory=dict)
    set_aside: dict[str, int] = field(default_factory=dict)  # untuned grammars not searched
    patterns: dict[str, Pattern] = field(default_factory=dict)


def _resource(ctx: CallContext) -> AstGrepResource:
    resource = ctx.resource
    if not isinstance(resource, AstGrepResource):
        raise ToolError("the astgrep resource is not connected to this run")
    return resource


async def _scope(res: AstGrepResource, path: str, language: str | None) -> Scope:
    root = res.root
    target = resolve_path(root, path or ".", must_exist=True)
    rel = relpath(root, target)
    table = res.table
    explicit = None
    if language:
        try:
            explicit = table.lookup(language)
        except UnknownLanguage as exc:
            raise ToolError(str(exc)) from None
    if not target.is_dir():
        st = check_regular(target, root)  # a FIFO, socket or device: said, never opened
        if st.st_size > res.max_file_bytes:
            raise ToolError(
                f"{rel} is {st.st_size:,} bytes, over the {res.max_file_bytes:,}-byte limit "
                "for a structural search (generated or data file?); search its folder's "
                "other files, or grep it"
            )
        grammar = explicit or grammar_for(target.name, table.by_ext)
        if grammar is None:
            raise ToolError(
                f"cannot tell the language of {rel} from its extension; pass language "
                "(e.g. language='python')"
            )
        job = FileJob(str(target), rel, st.st_mtime_ns, st.st_size)
        return Scope(rel, {grammar.id: [job]}, explicit=explicit or grammar)
    if explicit is not None and not explicit.extensions:
        raise ToolError(
            f"language {explicit.id!r} has no known file extensions, so a directory cannot be "
            "searched for it; pass a file path"
        )
    walked = await asyncio.to_thread(walk, root, target, table.by_ext, explicit, res.max_file_bytes)
    return Scope(rel, dict(sorted(walked.files.items())), walked, explicit)


async def _compile(res: AstGrepResource, scope: Scope, source: str) -> None:
    """Compile the pattern for every grammar in scope; failures are kept per grammar. With an
    explicit language (or a single grammar), a failure is the answer."""
    for grammar_id in list(scope.groups):
        grammar = res.table.by_id[grammar_id]
        try:
            scope.patterns[grammar_id] = res.compiled(grammar, source) or await asyncio.to_thread(
                res.compile, grammar, source
            )
        except PatternError as exc:
            scope.unparsed[grammar_id] = str(exc)
            del scope.groups[grammar_id]
        except Exception as exc:  # a third-party grammar that fails to load
            scope.unparsed[grammar_id] = f"{type(exc).__name__}: {exc}"
            del scope.groups[grammar_id]
    if scope.explicit is None and len(scope.groups) > 1:
        tuned = [gid for gid in scope.groups if res.table.by_id[gid].tuned]
        if tuned:  # a pattern that parses as Python is meant for Python, not for bash
            for gid in [g for g in scope.groups if g not in tuned]:
                scope.set_aside[gid] = len(scope.groups.pop(gid))
    if scope.groups or not scope.unparsed:
        return
    if len(scope.unparsed) == 1:
        raise ToolError(next(iter(scope.unparsed.values())))
    lines = [f"the pattern parses in none of the languages under {scope.target}:"]
    lines += [f"- {gid}: {msg}" for gid, msg in scope.unparsed.items()]
    lines.append("pass language to pick one")
    raise ToolError("\n".join(lines))


def _skip_notes(scope: Scope, binary: list[str], unreadable: list[str]) -> list[str]:
    notes = []
    w = scope.walked
    parts = []
    if w is not None:
        if w.ignored:
            parts.append(f"{w.ignored} gitignored")
        if w.vendored:
            parts.append(f"{len(w.vendored)} vendored dirs ({_names(w.vendored)})")
        if w.huge:
            parts.append(f"{len(w.huge)} files over the size limit ({_names(w.huge)})")
        for listed, what in _link_skips(w):
            parts.append(f"{len(listed)} {what} ({_names(listed)})")
    if binary:
        parts.append(f"{len(binary)} binary ({_names(binary)})")
    if unreadable:
        parts.append(f"{len(unreadable)} unreadable ({_names(unreadable)})")
    if parts:
        notes.append("skipped: " + ", ".join(parts))
    for gid, msg in scope.unparsed.items():
        notes.append(f"not searched as {gid}: {msg}")
    if scope.set_aside:
        listed = ", ".join(f"{gid} ({_count(n, 'file')})" for gid, n in scope.set_aside.items())
        notes.append(f"also present, not searched: {listed}; pass language to search them")
    return notes


def _link_skips(w: Walked) -> list[tuple[list[str], str]]:
    kinds = [
        (w.links_outside, "links leaving the root"),
        (w.links_broken, "broken links"),
        (w.dir_links, "directory links, not followed"),
        (w.special, "FIFOs/sockets/devices"),
    ]
    return [(listed, what) for listed, what in kinds if listed]


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _names(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … {len(items) - limit} more" if len(items) > limit else "")


def _one_line(value: str) -> str:
    flat = " ⏎ ".join(part.strip() for part in value.splitlines()) if "\n" in value else value
    return flat if len(flat) <= VALUE_CHARS else flat[:VALUE_CHARS] + "…"


def _languages_line(scope: Scope, parts: list[Searched]) -> str:
    described = []
    for part in parts:
        count = f"{part.searched}/{part.files}" if part.searched < part.files else f"{part.files}"
        described.append(f"{part.grammar} ({count} files, pattern: {part.pattern.describe()})")
    return "searched " + "; ".join(described) if described else ""


# -- ast_grep ----------------------------------------------------------------------------------


async def ast_grep(ctx: CallContext, args: AstGrepArgs) -> Result:
    res = _resource(ctx)
    scope = await _scope(res, args.path, args.language)  # a PathError reaches the model as is
    await _compile(res, scope, args.pattern)
    limit = args.max_results
    # The collector stays off until the records are gone: hundreds of thousands of them would
    # otherwise be rescanned again and again while they arrive (seconds per query).
    with gc_paused() as pause:
        parts: list[Searched] = []
        found = 0
        for grammar_id, jobs in scope.groups.items():
            room = limit - found if limit else 0
            if limit and room <= 0:
                parts.append(Searched(grammar_id, scope.patterns[grammar_id], [], len(jobs), 0))
                continue
            grammar = res.table.by_id[grammar_id]
            part = await res.search(grammar, scope.patterns[grammar_id], jobs, room)
            parts.append(part)
            found += sum(len(o.matches) for o in part.outcomes)
        result = _search_result(scope, parts, limit)
        anchor = None if found else explain_empty(res.root, parts)
        if anchor is not None:  # never a silent empty when the pattern's text is there
            head, _, rest = result.text.partition("\n")
            result.text = "\n".join(x for x in (head, anchor.sentence(), rest) if x)
            result.data["anchor"] = {
                "token": anchor.token,
                "occurrences": anchor.occurrences,
                "files": anchor.files,
                "examples": anchor.examples,
            }
        del parts  # freed by reference counting, before the collector is back
        pause.kept = len(result.data["matches"]) if result.data else 0
    return result


def _search_result(scope: Scope, parts: list[Searched], limit: int) -> Result:
    binary: list[str] = []
    unreadable: list[str] = []
    not_utf8: list[str] = []
    gave_up: list[str] = []
    parsed = prefiltered = 0
    matches: list[dict[str, object]] = []  # rows as the workers built them
    for part in parts:
        for o in part.outcomes:
            if o.status == "binary":
                binary.append(o.rel)
            elif o.status == "unreadable":
                unreadable.append(o.rel)
            elif o.status == "no-literal":
                prefiltered += 1
            else:
                parsed += 1
            if o.not_utf8:
                not_utf8.append(o.rel)
            if o.note:
                gave_up.append(o.rel)
            matches += o.matches
    truncated = False
    if limit and len(matches) > limit:
        del matches[limit:]
        truncated = True
    unsearched = sum(p.files - p.searched for p in parts)
    stopped_in_file = any(o.more for p in parts for o in p.outcomes)
    truncated = truncated or unsearched > 0 or stopped_in_file
    files = {m["file"] for m in matches}
    lines = []
    multi = {p.grammar: p.pattern.multi_names for p in parts}
    shown_chars = 0
    unshown = 0
    for index, m in enumerate(matches):
        if shown_chars > TEXT_LIMIT:  # the text is capped anyway; data keeps every match
            unshown = len(matches) - index
            break
        rel, line, end_line = str(m["file"]), m["line"], m["end_line"]
        text, bindings = str(m["text"]), cast("dict[str, str]", m["bindings"])
        shown_chars += len(text) + len(rel) + 16
        span = f"{line}" if end_line == line else f"{line}-{end_line}"
        text_lines = text.split("\n")
        if len(text_lines) == 1:
            lines.append(f"{rel}:{span}: {text}")
        else:
            lines.append(f"{rel}:{span}:")
            shown = text_lines[:MATCH_LINES]
            lines.extend("    " + t for t in shown)
            if len(text_lines) > MATCH_LINES:
                lines.append(f"    … {len(text_lines) - MATCH_LINES} more lines")
        if m.get("unparsed_code"):
            lines.append("  (the match spans code that does not parse)")
        if bindings:
            lines.append("  " + _bindings_line(bindings, multi[str(m["language"])]))
    if unshown:
        lines.append(f"… truncated: {unshown} more matches (all of them are in data)")
    searched_files = sum(p.searched for p in parts)
    if matches:
        head = f"{_count(len(matches), 'match', 'matches')} in {_count(len(files), 'file')}"
    elif searched_files:
        head = f"no matches under {scope.target}"
    else:
        head = f"no files to search under {scope.target}" + (
            f" for {scope.explicit.id}" if scope.explicit else " in a searchable language"
        )
    notes = [_languages_line(scope, parts)] if parts else []
    if truncated:
        more = f"; {unsearched} files not searched" if unsearched else ""
        notes.append(
            f"truncated: stopped at {limit} matches{more} (raise max_results or narrow path)"
        )
    notes += _skip_notes(scope, binary, unreadable)
    if not_utf8:
        notes.append(f"not UTF-8, searched as bytes: {_names(not_utf8)}")
    if gave_up:
        notes.append(
            f"too much $$$ backtracking, some candidates not matched in: {_names(gave_up)}"
        )
    text = "\n".join([head, *lines, *(n for n in notes if n)])
    data = {
        "matches": matches,
        "truncated": truncated,
        "files_searched": searched_files,
        "files_parsed": parsed,
        "files_prefiltered": prefiltered,
        "files_not_searched": unsearched,
        "languages": {
            p.grammar: {"files": p.files, "pattern": p.pattern.describe()} for p in parts
        },
        "skipped": _skipped_data(scope, binary, unreadable),
        "not_utf8": not_utf8,
        "unparsed": scope.unparsed,
        "not_searched_languages": scope.set_aside,
    }
    return Result(text=cap_text(text, TEXT_LIMIT), data=data)


def _bindings_line(bindings: dict[str, str], multi: frozenset[str] | set[str]) -> str:
    """`$F=f  $$$A=a, b`; many empty `$$$` runs are counted, not listed, so the ones that
    bound something stay in view (`$F($$$A0, …, $$$A299)` binds all but one run empty)."""
    empty = [k for k, v in bindings.items() if not v and k in multi]
    hide = len(empty) > 4
    shown = [
        f"{'$$$' if k in multi else '$'}{k}={_one_line(v)}"
        for k, v in bindings.items()
        if not (hide and not v and k in multi)
    ]
    if hide:
        shown.append(f"({len(empty)} $$$ runs empty: $$${empty[0]} … $$${empty[-1]})")
    return "  ".join(shown)


def _skipped_data(scope: Scope, binary: list[str], unreadable: list[str]) -> dict[str, object]:
    w = scope.walked
    return {
        "gitignored": w.ignored if w else 0,
        "hidden": w.hidden if w else 0,
        "vendored": w.vendored if w else [],
        "too_large": w.huge if w else [],
        "links_outside_root": w.links_outside if w else [],
        "broken_links": w.links_broken if w else [],
        "directory_links": w.dir_links if w else [],
        "special_files": w.special if w else [],
        "binary": binary,
        "unreadable": unreadable,
    }


# -- ast_edit ----------------------------------------------------------------------------------


@asks_only_if(lambda args: False)  # it only stages: `resolve accept` is the write that is asked
async def ast_edit(ctx: CallContext, args: AstEditArgs) -> Result:
    res = _resource(ctx)
    scope = await _scope(res, args.path, args.language)  # a PathError reaches the model as is
    await _compile(res, scope, args.pattern)
    template = normalize_template(args.rewrite)
    for pattern in scope.patterns.values():
        _check_template(template, pattern)
    rewrites = []
    for grammar_id, jobs in scope.groups.items():
        grammar = res.table.by_id[grammar_id]
        rewrites += await res.rewrite(grammar, scope.patterns[grammar_id], jobs, template)
    broken = [r for r in rewrites if r.status == "syntax"]
    if broken:
        listed = "\n".join(f"- {r.rel} {r.note}" for r in broken[:10])
        raise ToolError(
            "refused: the rewrite would introduce syntax errors, so nothing was staged:\n"
            f"{listed}\nAdjust the rewrite (or the pattern) and call ast_edit again"
        )
    wrong = [r for r in rewrites if r.status == "range"]
    if wrong:  # an internal bug, caught before it could lose code
        listed = "\n".join(f"- {r.rel} {r.note}" for r in wrong[:10])
        raise ToolError(
            "refused: a match's range is not exactly the code the pattern matched, so nothing "
            f"was staged:\n{listed}\nPlease report this pattern; narrow `path` to edit the rest"
        )
    changed = [r for r in rewrites if r.new is not None and r.count]
    skipped = [(r.rel, line, why) for r in rewrites for line, why in r.skipped]
    not_utf8 = [r.rel for r in rewrites if r.status == "not-utf8"]
    notes = []
    broken = [(rel, line) for rel, line, why in skipped if why == UNPARSED]
    nested = [(rel, line) for rel, line, why in skipped if why != UNPARSED]
    if nested:
        shown = ", ".join(f"{rel}:{line}" for rel, line in nested[:8])
        notes.append(
            f"not rewritten: {len(nested)} matches nested in (or overlapping) another match "
            f"({shown}); accept, then call ast_edit again to rewrite them"
        )
    if broken:
        shown = ", ".join(f"{rel}:{line}" for rel, line in broken[:8])
        notes.append(
            f"not rewritten: {len(broken)} matches span code that does not parse ({shown}), "
            "e.g. an unknown macro; edit those by hand"
        )
    if not_utf8:
        notes.append(f"not rewritten: not UTF-8: {_names(not_utf8)}")
    binary = [r.rel for r in rewrites if r.status == "binary"]
    unreadable = [r.rel for r in rewrites if r.status == "unreadable"]
    notes += _skip_notes(scope, binary, unreadable)
    if not changed:
        text = f"no matches under {scope.target}; nothing staged"
        anchor = None if skipped else explain_unmatched(res.root, scope.groups, scope.patterns)
        if anchor is not None:  # as ast_grep: never a silent empty when the pattern's text is there
            notes.insert(0, anchor.sentence())
        return Result(
            text="\n".join([text, *notes]),
            data={"edit_id": None, "replacements": 0, "files": [], "notes": notes},
        )
    staged = StagedEdit.stage(res.root, {Path(_abs(res, r.rel)): r.new for r in changed})
    by_rel = {r.rel: r for r in changed}
    for change in staged.changes:
        expect = by_rel[relpath(res.root, change.path)].original_sha
        if hashlib.sha256(change.original or b"").hexdigest() != expect:
            raise ToolError(
                f"{relpath(res.root, change.path)} changed while the edit was being staged; "
                "nothing was staged. Call ast_edit again"
            )
    count = sum(r.count for r in changed)
    files = [r.rel for r in changed]
    edit_id = res.edits.add(Staged(staged, count, files, origin="ast_edit"))
    head = (
        f"(proposed) {count} replacement{'s' if count != 1 else ''} in {len(files)} "
        f"file{'s' if len(files) != 1 else ''}; nothing written yet. Call resolve with "
        f'edit_id "{edit_id}" and action "accept" to write, or "discard"'
    )
    diff = staged.diff(DIFF_LINES)
    text = "\n".join([head, *notes, diff])
    data = {
        "edit_id": edit_id,
        "replacements": count,
        "files": files,
        "per_file": {r.rel: r.count for r in changed},
        "skipped": [{"file": rel, "line": line, "why": why} for rel, line, why in skipped],
        "notes": notes,
    }
    return Result(text=cap_text(text, TEXT_LIMIT), data=data)


def _abs(res: AstGrepResource, rel: str) -> str:
    return str(res.root / rel)


def _check_template(template: str, pattern: Pattern) -> None:
    for m in TEMPLATE.finditer(template):
        token = m.group(0)
        name = token.lstrip("$")
        if not name or name.startswith("_"):
            raise ToolError(
                f"the rewrite uses {token}, which never binds; name it in the pattern "
                "(like $$$ARGS) and use that name in the rewrite"
            )
        if name not in pattern.names:
            bound = ", ".join(
                ("$$$" if n in pattern.multi_names else "$") + n for n in pattern.names
            )
            raise ToolError(
                f"the rewrite uses {token}, which the pattern does not bind (it binds: "
                f"{bound or 'nothing'})"
            )


# -- resolve -----------------------------------------------------------------------------------


def resolve_card(ctx: CallContext, args: ResolveArgs) -> str:
    """The approval card (approve=ask): which files and how many replacements accept writes."""
    edit_id = args.edit_id.strip()
    staged = _resource(ctx).edits.staged.get(edit_id)
    if staged is None or args.action == "discard":
        return f"resolve {args.action} {edit_id} (writes nothing)"
    n = staged.replacements
    head = f"accept {edit_id}: write {n} replacement{'s' if n != 1 else ''} in "
    head += f"{len(staged.files)} file{'s' if len(staged.files) != 1 else ''}: "
    return head + _names(staged.files, 10) + "\n" + staged.edit.diff(8)


@card_by(resolve_card)
@asks_only_if(lambda args: args.action == "accept")  # a discard writes nothing
async def resolve(ctx: CallContext, args: ResolveArgs) -> Result:
    res = _resource(ctx)
    ledger = res.edits
    edit_id = args.edit_id.strip()
    staged = ledger.staged.pop(edit_id, None)
    if staged is None:
        if edit_id in ledger.resolved:
            raise ToolError(f"{edit_id} was already {ledger.resolved[edit_id]}; nothing to do")
        pending = ", ".join(sorted(ledger.staged)) or "none (stage one with ast_edit)"
        if ledger.issued(edit_id):  # so old its record is gone too: still not "unknown"
            raise ToolError(
                f"{edit_id} expired (only the most recent staged edits are kept); call "
                f"ast_edit or lsp_rename again to stage it. Staged edits: {pending}"
            )
        raise ToolError(f"unknown edit_id {edit_id!r}; staged edits: {pending}")
    if args.action == "discard":
        ledger.resolved[edit_id] = "discarded"
        return Result(
            text=f"discarded {edit_id}; nothing written",
            data={"edit_id": edit_id, "action": "discard", "files": []},
        )
    try:
        with staged.around() if staged.around else contextlib.nullcontext():
            notes = await staged.edit.apply(ctx.run)
    except EditConflict as exc:
        ledger.resolved[edit_id] = "refused (the files changed after staging)"
        return Result.error(
            f"{edit_id} {exc}",
            data={"edit_id": edit_id, "action": "accept", "conflicts": staged.edit.conflicts()},
        )
    ledger.resolved[edit_id] = "accepted"
    text = (
        f"accepted {edit_id}: wrote {staged.replacements} replacement"
        f"{'s' if staged.replacements != 1 else ''} in {_names(staged.files, 10)}"
    )
    return Result(
        text="\n".join([text, *notes]),
        data={"edit_id": edit_id, "action": "accept", "files": staged.files, "notes": notes},
    )
