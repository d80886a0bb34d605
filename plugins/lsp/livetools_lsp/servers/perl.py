"""Perl servers."""

from __future__ import annotations

import os
import tempfile

from ..spec import ServerSpec

# Perl::LanguageServer caches each parsed file under the root's .vscode/perl-lang unless
# `cacheDir` is set: a folder of the user's temp dir keeps the project clean (the cache is keyed
# by each file's absolute path, so projects can share it). `perlInc`: where `perl -c` (its
# syntax check) finds the project's own modules, a CPAN layout's lib/ or the root.
_CACHE = os.path.join(tempfile.gettempdir(), f"livetools-perl-lang-{os.getuid()}")

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="perl-languageserver",
        command=("perl", "-MPerl::LanguageServer", "-e", "Perl::LanguageServer::run"),
        # `perl --version` passes without the module.
        probe=("perl", "-MPerl::LanguageServer", "-e", "1"),
        extensions={".pl": "perl", ".pm": "perl", ".t": "perl"},
        markers=("Makefile.PL", "Build.PL", "cpanfile", "dist.ini", "META.json"),
        # Sent as didChangeConfiguration, which is also what starts its workspace parser.
        settings={"perl": {"cacheDir": _CACHE, "perlInc": ["lib", "."]}},
        # Said on stderr only: cross-file answers before it miss files (103 of 107 lines).
        ready_log=r"initial parsing done",
        # Its JSON follows Perl's per-process randomized hash order, so one range comes as
        # {start, end} or {end, start}: equal locations then differ as text, and a count of
        # references went 119-124 for the same 125 locations (107 distinct) from call to call.
        env={"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"},
    ),
)
