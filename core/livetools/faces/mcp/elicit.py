"""MCP elicitation as the question port of `livetools serve`.

ask_user reaches the human through the connected MCP client's elicitation form, in the era the
client speaks:

- 2025-11-25 (handshake): an `elicitation/create` request goes to the client in the middle of the
  `tools/call`, on that request's session. ask_user's expiry cancels the pending request, and the
  SDK tells the client with `notifications/cancelled`.
- 2026-07-28: the server may not send requests. The tool call keeps running in a background task;
  when the port needs an answer, the `tools/call` handler returns an `InputRequiredResult` (the
  form in `inputRequests`, an opaque token in `requestState`) and the client retries the same
  call with `inputResponses`. The retry resolves the waiting port and awaits the call's result
  (or its next question). Parked calls are bounded in number, dropped when their result has been
  collected or kept for a while after, and failed as detached when the client disconnects.

The port learns which request it belongs to from a context variable that the handler sets
around `run.call` (the run calls the tool in the handler's task, or in a task created from it).

Form shape (2025-11-25 elicitation schema, also valid in 2026-07-28): options → a titled
single-select (`oneOf [{const, title}]`), or with `multi_select` a titled multi-select (array
whose `items.anyOf` holds `{const, title}`); `allow_free_text` → a string field. Option
descriptions have no slot in the form, so the message is the question's numbered card.
accept → the answer (checked by `Question.answer`), decline / cancel → skip.

Approvals (`--approve ask`) take the same two paths with their own form: one titled
single-select, Allow / Deny / Allow this tool for the rest of the run; decline / cancel deny.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ...questions import Answer, Approval, Decision, Question, QuestionPortDetached
from ...results import Result

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.session import ServerSession

log = logging.getLogger("livetools.serve")

TARGET_SPACE = "mcp"
CHOICE, CHOICES, TEXT = "choice", "choices", "text"  # the form's field names
DECISION = "decision"  # the approval form's one field
T = TypeVar("T")
MAX_ASKS = 3  # a form answer that does not fit the question is asked again, this often in all
PARKED_LIMIT = 32  # 2026 era: calls waiting for the client's retry at once (and results kept)
KEEP_FINISHED = 300.0  # seconds a parked call's result waits for a late retry (e.g. after expiry)


# -- the form -------------------------------------------------------------------------------


def declares_form(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client can show an elicitation form. An empty `elicitation: {}` means form
    mode (the 2025-06-18 shape, kept by the 2025-11-25 spec for compatibility)."""
    if capabilities is None or capabilities.elicitation is None:
        return False
    elicitation = capabilities.elicitation
    return elicitation.form is not None or elicitation.url is None


def form_message(question: Question) -> str:
    """The numbered card, with the terminal's reply grammar swapped for how a form is answered."""
    card = question.card()
    grammar = question.how_to_reply()
    if card.endswith(grammar):
        card = card[: -len(grammar)].rstrip()
    ways = []
    if question.options:
        ways.append("pick any of the options" if question.multi_select else "pick an option")
    if question.allow_free_text:
        ways.append("type your own answer" if not question.options else "answer in your own words")
    return f"{card}\n\nIn the form: {' or '.join(ways)}. Declining skips the question."


def form_schema(question: Question) -> dict[str, Any]:
    """The elicitation `requestedSchema`: a flat object of primitive fields."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    titled = [{"const": o.label, "title": o.label} for o in question.options]
    # With free text as well, neither field alone is required: either one answers.
    alone = not question.allow_free_text
    if question.options and question.multi_select:
        properties[CHOICES] = {
            "type": "array",
            "title": "Choose one or more",
            "items": {"anyOf": titled},
            "minItems": 1 if alone else 0,
            "maxItems": len(titled),
        }
        if alone:
            required.append(CHOICES)
    elif question.options:
        properties[CHOICE] = {"type": "string", "title": "Choose one", "oneOf": titled}
        if alone:
            required.append(CHOICE)
    if question.allow_free_text:
        only = not question.options
        properties[TEXT] = {
            "type": "string",
            "title": "Your answer" if only else "Or in your own words",
            "description": "A short answer in your own words.",
        }
        if only:
            properties[TEXT]["minLength"] = 1
            required.append(TEXT)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def read_form(question: Question, content: dict[str, Any] | None) -> Answer:
    """An accepted form as an answer. Raises ValueError saying what did not fit."""
    content = content or {}
    choices: list[str] = []
    if question.multi_select:
        raw = content.get(CHOICES)
        if isinstance(raw, str):
            raw = [raw]
        if raw is not None:
            if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
                raise ValueError(f"{CHOICES!r} must be a list of option labels")
            choices = list(raw)
    else:
        raw = content.get(CHOICE)
        if raw is not None and not isinstance(raw, str):
            raise ValueError(f"{CHOICE!r} must be one option label")
        if raw:
            choices = [raw]
    text = content.get(TEXT)
    if text is not None and not isinstance(text, str):
        raise ValueError(f"{TEXT!r} must be text")
    return question.answer(choices=list(dict.fromkeys(choices)), text=(text or "").strip() or None)


def approval_message(approval: Approval) -> str:
    """The approval card, with the reply grammar swapped for the form's."""
    card = approval.card()
    grammar = approval.how_to_reply()
    if card.endswith(grammar):
        card = card[: -len(grammar)].rstrip()
    how = "pick Allow, Deny, or Allow for the rest of this run. Declining denies."
    return f"{card}\n\nIn the form: {how}"


def approval_schema(approval: Approval) -> dict[str, Any]:
    """One required titled single-select: Allow / Deny / Allow this tool for the rest of the run."""
    titled = [{"const": d.value, "title": label} for d, label in approval.labels().items()]
    return {
        "type": "object",
        "properties": {DECISION: {"type": "string", "title": "Decision", "oneOf": titled}},
        "required": [DECISION],
    }


def read_approval_form(content: dict[str, Any] | None) -> Decision:
    raw = (content or {}).get(DECISION)
    try:
        return Decision(raw)
    except ValueError:
        raise ValueError(f"{DECISION!r} must be one of allow, deny, always") from None


# -- the port -------------------------------------------------------------------------------


class _Asker(Protocol):
    """How the current tools/call reaches its client: one form in, the client's result out."""

    async def elicit(self, message: str, schema: dict[str, Any]) -> types.ElicitResult: ...


_ASKER: contextvars.ContextVar[_Asker | None] = contextvars.ContextVar(
    "livetools_mcp_asker", default=None
)


class ElicitationPort:
    """The run's `QuestionPort` while a client that can elicit is connected."""

    # Each form belongs to its own request, so approvals of concurrent calls need not queue
    # (a 2026-era call parked for its answer must not hold up the next call).
    concurrent = True

    async def __call__(self, question: Question) -> Answer:
        return await _ask_form(
            "question",
            form_message(question),
            form_schema(question),
            lambda content: read_form(question, content),
            Answer(skipped=True),
        )

    async def approve(self, approval: Approval) -> Decision:
        """The approval form. accept → the picked decision; decline and cancel deny."""
        return await _ask_form(
            "approval",
            approval_message(approval),
            approval_schema(approval),
            read_approval_form,
            Decision.DENY,
        )


async def _ask_form(
    what: str, message: str, schema: dict[str, Any], read: Callable[[Any], T], refused: T
) -> T:
    """Elicit through the asker of the current call until `read` accepts the content (a form
    that did not fit is asked again, saying why, MAX_ASKS times); decline and cancel give
    `refused`."""
    asker = _ASKER.get()
    if asker is None:
        raise QuestionPortDetached("this call did not come from the MCP client")
    problem = ""
    for _ in range(MAX_ASKS):
        shown = f"That answer did not fit: {problem}.\n\n{message}" if problem else message
        result = await asker.elicit(shown, schema)
        if result.action != "accept":  # decline, cancel
            return refused
        try:
            return read(result.content)
        except ValueError as exc:
            problem = str(exc)
    raise QuestionPortDetached(f"the client's form answers did not fit the {what}: {problem}")


# -- 2025-11-25: elicitation/create in the middle of the call -------------------------------


@dataclass
class _SessionAsker:
    session: ServerSession
    request_id: Any
    can_elicit: bool

    async def elicit(self, message: str, schema: dict[str, Any]) -> types.ElicitResult:
        from mcp.shared.exceptions import MCPError, NoBackChannelError
        from mcp_types import CONNECTION_CLOSED
        from pydantic import ValidationError

        if not self.can_elicit:
            raise QuestionPortDetached("the MCP client did not declare form elicitation")
        try:
            return await self.session.elicit_form(
                message, schema, related_request_id=self.request_id
            )
        except NoBackChannelError:  # answered as one JSON body (http/framing.py `one_body`)
            raise QuestionPortDetached("this call's answer cannot carry a question") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise QuestionPortDetached("the MCP client disconnected") from None
            raise QuestionPortDetached(f"the MCP client refused the form: {exc.message}") from None
        except ValidationError:
            raise QuestionPortDetached(
                "the MCP client answered with something other than a form result"
            ) from None


@contextlib.contextmanager
def asking_through_session(
    session: ServerSession, request_id: Any, *, can_elicit: bool
) -> Iterator[None]:
    """Questions asked inside this block go to the client as `elicitation/create` requests
    related to `request_id`."""
    token = _ASKER.set(_SessionAsker(session, request_id, can_elicit))
    try:
        yield
    finally:
        _ASKER.reset(token)


# -- 2026-07-28: InputRequiredResult and the client's retry ---------------------------------


@dataclass(eq=False)
class _ParkedCall:
    """One tools/call running in the background, possibly waiting for the client's answer."""

    token: str
    name: str
    arguments: dict[str, Any]
    can_elicit: bool
    task: asyncio.Task[Result] | None = None
    asking: asyncio.Event = field(default_factory=asyncio.Event)
    request: tuple[str, types.ElicitRequest] | None = None
    answer: asyncio.Future[types.ElicitResult] | None = None
    asked: int = 0
    detached: str | None = None
    finished_at: float | None = None

    # the port's side (runs in the call's task)

    async def elicit(self, message: str, schema: dict[str, Any]) -> types.ElicitResult:
        import mcp_types as types

        if not self.can_elicit:
            raise QuestionPortDetached("the MCP client did not declare form elicitation")
        if self.detached is not None:
            raise QuestionPortDetached(self.detached)
        self.asked += 1
        key = f"question-{self.asked}"
        form = types.ElicitRequestFormParams(message=message, requested_schema=schema)
        answer: asyncio.Future[types.ElicitResult] = asyncio.get_running_loop().create_future()
        self.answer = answer
        self.request = (key, types.ElicitRequest(params=form))
        self.asking.set()
        try:
            return await answer
        finally:
            if self.answer is answer:
                self._withdraw()

    def _withdraw(self) -> None:
        self.answer = None
        self.request = None
        self.asking.clear()

    # the handler's side

    def respond(self, responses: dict[str, Any] | None) -> None:
        """Hand the client's response for the open question (if it carries one) to the port."""
        import mcp_types as types
        from pydantic import ValidationError

        answer, request = self.answer, self.request
        if answer is None or request is None or answer.done() or not responses:
            return
        response = responses.get(request[0])
        if response is None:
            return
        self._withdraw()  # before the port runs again, so the next wait sees no stale question
        if isinstance(response, types.ElicitResult):
            answer.set_result(response)
            return
        try:
            dumped = response.model_dump(by_alias=True) if hasattr(response, "model_dump") else {}
            answer.set_result(types.ElicitResult.model_validate(dumped, by_name=False))
        except ValidationError:
            answer.set_exception(
                QuestionPortDetached("the MCP client answered with something other than a form")
            )

    def detach(self, reason: str) -> None:
        self.detached = reason
        answer = self.answer
        if answer is not None and not answer.done():
            self._withdraw()
            answer.set_exception(QuestionPortDetached(reason))


RunCall = Callable[[], Coroutine[Any, Any, Result]]


class ParkedCalls:
    """2026-era tools/calls of one connection that ask the human through `InputRequiredResult`.

    `call` runs a tool call in a background task with the port bound to it and returns either
    its result or, when the port wants an answer first, the input request plus a
    `requestState` token; `resume` takes the client's retry carrying that token."""

    def __init__(self) -> None:
        self._parked: dict[str, _ParkedCall] = {}

    async def call(
        self, name: str, arguments: dict[str, Any], run_call: RunCall, *, can_elicit: bool
    ) -> Result | types.InputRequiredResult:
        self._purge()
        parked = _ParkedCall(secrets.token_urlsafe(16), name, arguments, can_elicit)
        token = _ASKER.set(parked)
        try:
            parked.task = asyncio.create_task(run_call(), name=f"livetools mcp {name}")
        finally:
            _ASKER.reset(token)
        parked.task.add_done_callback(lambda _: _mark_finished(parked))
        return await self._drive(parked)

    async def resume(
        self,
        name: str,
        arguments: dict[str, Any],
        request_state: str,
        responses: dict[str, Any] | None,
    ) -> Result | types.InputRequiredResult:
        self._purge()
        parked = self._parked.get(request_state)
        if parked is None or parked.name != name or parked.arguments != arguments:
            return Result.error(
                f"{name}: this answer arrived for a call that is no longer waiting (it was "
                "answered already, expired long ago, or the server restarted); nothing was done. "
                "Call the tool again if you still need it."
            )
        parked.respond(responses)
        return await self._drive(parked)

    async def _drive(self, parked: _ParkedCall) -> Result | types.InputRequiredResult:
        """Wait until the call finishes or asks; a parked call stays listed until its result
        has been handed out."""
        import mcp_types as types

        task = parked.task
        assert task is not None
        while True:
            asking = asyncio.ensure_future(parked.asking.wait())
            try:
                await asyncio.wait({task, asking}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                # The client abandoned this round (cancelled it, or went away): stop the call.
                self._parked.pop(parked.token, None)
                parked.detach("the MCP client abandoned the call")
                task.cancel()
                raise
            finally:
                asking.cancel()
            if task.done():
                self._parked.pop(parked.token, None)
                return _outcome(parked.name, task)
            if parked.request is None:
                continue  # withdrawn between the wake-up and now
            if parked.token not in self._parked and self._waiting() >= PARKED_LIMIT:
                parked.detach(
                    f"{PARKED_LIMIT} questions are already waiting for this client's answers"
                )
                continue
            self._parked[parked.token] = parked
            key, request = parked.request
            return types.InputRequiredResult(
                input_requests={key: request}, request_state=parked.token
            )

    def _waiting(self) -> int:
        return sum(1 for parked in self._parked.values() if parked.finished_at is None)

    def _purge(self) -> None:
        """Forget results nobody came back for: after `KEEP_FINISHED` seconds, and beyond
        `PARKED_LIMIT` of them the oldest first."""
        now = time.monotonic()
        finished = sorted(
            (p.finished_at, token) for token, p in self._parked.items() if p.finished_at is not None
        )
        for n, (finished_at, token) in enumerate(finished):
            if now - finished_at > KEEP_FINISHED or len(finished) - n > PARKED_LIMIT:
                del self._parked[token]

    async def detach_all(self, reason: str, grace: float = 2.0) -> None:
        """The client is gone: every waiting question fails as detached (ask_user turns that
        into an error result); calls still running after `grace` seconds are cancelled."""
        parked = list(self._parked.values())
        self._parked.clear()
        for call in parked:
            call.detach(reason)
        tasks = {c.task for c in parked if c.task is not None and not c.task.done()}
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=grace)
            for task in late:
                task.cancel()


def _mark_finished(parked: _ParkedCall) -> None:
    parked.finished_at = time.monotonic()


def _outcome(name: str, task: asyncio.Task[Result]) -> Result:
    if task.cancelled():
        return Result.error(f"{name} was cancelled before it finished")
    exc = task.exception()
    if exc is not None:  # run.call reports caller errors as results; this is a bug
        log.error("tool call %s raised", name, exc_info=exc)
        return Result.error(f"{name} failed: {type(exc).__name__}: {exc}")
    return task.result()
