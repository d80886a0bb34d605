"""Child processes that never outlive their run or their host (see child.py and reaper.py)."""

from .child import ChildProcess, ProcessStartError
from .sessions import (
    kill_session,
    process_state,
    session_members,
    signal_session,
    stat_fields,
)
from .tracking import forget, reaper_pid, track, tracked_sessions

__all__ = [
    "ChildProcess",
    "ProcessStartError",
    "forget",
    "kill_session",
    "process_state",
    "reaper_pid",
    "session_members",
    "signal_session",
    "stat_fields",
    "track",
    "tracked_sessions",
]
