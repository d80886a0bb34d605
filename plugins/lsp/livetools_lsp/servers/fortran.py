"""Fortran: fortls, free and fixed form (fixed form is the .f/.for of Fortran 77 code still run)."""

from __future__ import annotations

from ..spec import ServerSpec

FORTRAN_EXT = {
    suffix: "fortran"
    for base in (".f", ".for", ".fpp", ".ftn", ".f77", ".f90", ".f95", ".f03", ".f08")
    for suffix in (base, base.upper())
}

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="fortls",
        # Unless told not to, fortls asks PyPI for a newer fortls at start and installs it.
        command=("fortls", "--disable_autoupdate"),
        extensions=FORTRAN_EXT,
    ),
)
