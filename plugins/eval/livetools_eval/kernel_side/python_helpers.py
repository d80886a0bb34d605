"""Runs once inside every Python kernel (its source is sent as a silent cell, then
`_livetools_setup(marker, ipython)` is called). Defines:

- `tool(name, args)` / `tools([(name, args), ...])`: call the run's tools. A request travels as an
  input_request whose prompt starts with `marker`; the host answers with JSON on the same stdin
  channel. The channel is not thread-safe, so one lock serializes requests; `tools()` sends one
  request and the host runs the calls concurrently.
- `%pip` (IPython) / `__livetools__.pip` (plain kernels): pip into this interpreter, then evict the
  changed distributions' modules from sys.modules so the next import sees the new code.
- `!cmd` with stdin closed and output streamed (IPython's pty-based one hangs on stdin readers).
- a `get_ipython()` shim in kernels that are not IPython: the host turns idioms into IPython's own
  calls (`get_ipython().system(...)`, `.run_line_magic(...)`, `.run_cell_magic(...)`), served here.
"""


def _livetools_setup(marker, ipython):
    import base64
    import builtins
    import contextlib
    import importlib
    import importlib.metadata
    import importlib.util
    import json
    import os
    import shlex
    import shutil
    import site
    import subprocess
    import sys
    import threading
    import time
    import types

    lock = threading.Lock()
    main_thread = threading.main_thread()
    shell = get_ipython() if ipython else None  # type: ignore[name-defined]  # noqa: F821
    kernel = getattr(shell, "kernel", None)
    current = {}  # the running cell's shell parent + ident, so threads can reach the host too
    plain_input = builtins.input

    class ToolError(Exception):
        """A tool called from this cell answered with an error."""

    class PipFailed(Exception):
        """`%pip` ended with a non-zero exit code (its output says why)."""

    class ToolResult:
        """What a tool returned: `.text` (what the model reads), `.data`, `.images` (PNG bytes)."""

        def __init__(self, reply):
            self.ok = bool(reply.get("ok"))
            self.text = str(reply.get("text", ""))
            self.data = reply.get("data")
            self.images = [base64.b64decode(i) for i in reply.get("images") or []]

        def __str__(self):
            return self.text

        def __repr__(self):
            head = self.text if len(self.text) <= 400 else self.text[:400] + "…"
            return f"ToolResult(ok={self.ok}, text={head!r})"

        def _repr_pretty_(self, printer, cycle):
            printer.text(self.text)  # a cell ending in tool(...) shows what the tool said

    def remember_parent(*_):
        if kernel is not None and hasattr(kernel, "_get_shell_context_var"):
            current["ident"] = kernel._get_shell_context_var(kernel._shell_parent_ident)
            current["parent"] = kernel.get_parent("shell")

    def ask(payload):
        prompt = marker + json.dumps(payload)
        with lock:
            if kernel is None:
                raw = plain_input(prompt)
            elif threading.current_thread() is main_thread or "parent" not in current:
                raw = kernel.raw_input(prompt)
            else:
                raw = kernel._input_request(prompt, current["ident"], current["parent"])
        return json.loads(raw)

    def tool(name, args=None, **kwargs):
        """Call one of the run's tools: tool("read", {"path": "a.py"}). Raises ToolError when the
        tool reports an error (including a tool your caller may not use)."""
        reply = ask({"call": [name, {**(args or {}), **kwargs}]})
        result = ToolResult(reply)
        if not result.ok:
            raise ToolError(result.text)
        return result

    def tools(calls):
        """Run several tool calls concurrently on the host: tools([("a", {...}), ("b", {...})]).
        Returns one ToolResult per call, in order; failures are results with ok=False."""
        batch = []
        for call in calls:
            if isinstance(call, str):
                batch.append([call, {}])
            elif isinstance(call, dict):
                batch.append([call.get("name"), call.get("args") or {}])
            else:
                name, *rest = call
                batch.append([name, rest[0] if rest else {}])
        reply = ask({"batch": batch})
        return [ToolResult(r) for r in reply.get("results", [])]

    # -- processes ---------------------------------------------------------------------------

    def stream(argv, shell_cmd=False):
        """Run a command with stdin closed, printing its output as it comes; an interrupt stops
        the command too. Returns the exit code."""
        proc = subprocess.Popen(
            argv,
            shell=shell_cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=0,  # an interrupt stops its whole group; still in the kernel's session
        )
        out = proc.stdout
        assert out is not None
        try:
            fd = out.fileno()
            last = "\n"
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                text = chunk.decode("utf-8", "replace")
                sys.stdout.write(text)
                last = text[-1]
            if last != "\n":
                sys.stdout.write("\n")
            return proc.wait()
        except BaseException:
            try:
                os.killpg(proc.pid, 15)
                proc.wait(1)
            except Exception:
                with contextlib.suppress(Exception):
                    os.killpg(proc.pid, 9)
            raise
        finally:
            out.close()

    def system(cmd):
        """`!cmd`: stdin closed (a reader gets EOF), output streamed; `!pip` is `%pip`."""
        if shell is not None:
            cmd = shell.var_expand(cmd, depth=1)
        words = cmd.split(None, 1)
        if words and words[0] in ("pip", "pip3"):
            return pip(words[1] if len(words) > 1 else "")
        code = stream(cmd, shell_cmd=True)
        if shell is not None:
            shell.user_ns["_exit_code"] = code
        if code:
            print(f"[exit code {code}]")

    def getoutput(cmd):
        out = subprocess.run(
            cmd, shell=True, stdin=subprocess.DEVNULL, capture_output=True, text=True
        )
        return (out.stdout + out.stderr).splitlines()

    def script(interpreter, body):
        code = stream([interpreter, "-c", body])  # stdin closed: a reader gets EOF
        if code:
            raise subprocess.CalledProcessError(code, interpreter)

    def cd(path):
        os.chdir(os.path.expanduser(path or "~"))
        print(os.getcwd())

    def timeit(stmt, namespace, number=0, repeat=7):
        import timeit as timing

        timer = timing.Timer(stmt, globals=namespace)
        if not number:
            number, _ = timer.autorange()
        runs = [t / number for t in timer.repeat(repeat, number)]
        mean = sum(runs) / len(runs)
        spread = (sum((r - mean) ** 2 for r in runs) / len(runs)) ** 0.5
        print(
            f"{fmt(mean)} ± {fmt(spread)} per loop (mean ± std. dev. of {repeat} runs, "
            f"{number} loops each)"
        )

    def fmt(seconds):
        for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
            if seconds >= scale:
                return f"{seconds / scale:.3g} {unit}"
        return f"{seconds * 1e9:.3g} ns"

    # -- %pip ----------------------------------------------------------------------------------

    def top_levels(dist):
        names = set()
        text = dist.read_text("top_level.txt")
        if text:
            names.update(n.strip() for n in text.split() if n.strip())
        for path in dist.files or ():
            first = path.parts[0] if path.parts else ""
            if len(path.parts) > 1 and first.isidentifier():
                names.add(first)
            elif len(path.parts) == 1 and first.endswith(".py"):
                names.add(first[:-3])
        return names

    def installed():
        importlib.invalidate_caches()
        out = {}
        for dist in importlib.metadata.distributions():
            name = (dist.metadata["Name"] or "").lower().replace("_", "-")
            if name and name not in out:
                out[name] = (dist.version, dist)
        return out

    def pip(line):
        """Install into this kernel's interpreter, then evict what changed from sys.modules."""
        __tracebackhide__ = True  # the error is pip's exit, not a frame of this helper
        args = shlex.split(line)
        if importlib.util.find_spec("pip") is not None:
            argv = [sys.executable, "-m", "pip", *args]
            if args[:1] == ["uninstall"] and not {"-y", "--yes"} & set(args):
                argv.insert(4, "-y")
        elif uv := (os.environ.get("UV") or shutil.which("uv")):
            if not args:
                args = ["--help"]
            argv = [uv, "pip", args[0], "--python", sys.executable, *args[1:]]
        else:
            print("pip is not available in this kernel's interpreter and uv is not on PATH")
            return
        before = installed()
        old_tops = {n: top_levels(d) for n, (_, d) in before.items()}
        code = stream(argv)
        after = installed()
        changed = sorted(
            n
            for n in set(before) | set(after)
            if (before.get(n) or (None,))[0] != (after.get(n) or (None,))[0]
        )
        tops = set()
        for name in changed:
            tops |= old_tops.get(name, set())
            if name in after:
                tops |= top_levels(after[name][1])
        tops.discard("__pycache__")
        evicted = sorted(m for m in sys.modules if m.split(".", 1)[0] in tops)
        for module in evicted:
            sys.modules.pop(module, None)
        for directory in [*site.getsitepackages(), site.getusersitepackages()]:
            if os.path.isdir(directory):
                site.addsitedir(directory)  # new .pth files (editable installs)
        importlib.invalidate_caches()
        if evicted:
            roots = sorted({m.split(".", 1)[0] for m in evicted})
            print(
                f"[evicted from sys.modules: {', '.join(roots)}; the next import loads the "
                "installed version (objects created before keep the old code)]"
            )
        if code:
            raise PipFailed(f"pip exited with code {code}")

    # -- a get_ipython() for kernels that are not IPython ---------------------------------------

    class Shim:
        """Serves the calls IPython's input transformer writes for the idioms."""

        def system(self, cmd):
            system(cmd)

        def getoutput(self, cmd):
            return getoutput(cmd)

        def run_line_magic(self, name, line, _stack_depth=1):
            caller = sys._getframe(1).f_globals
            if name == "pip":
                return pip(line)
            if name == "cd":
                return cd(line)
            if name == "timeit":
                number, repeat, stmt = timeit_options(line)
                return timeit(stmt, caller, number, repeat)
            if name == "env" and "=" in line:
                key, _, value = line.partition("=")
                os.environ[key.strip()] = value.strip()
                return None
            if name == "pwd":
                return os.getcwd()
            raise NotImplementedError(f"%{name} is not available in this kernel")

        def run_cell_magic(self, name, line, body):
            caller = sys._getframe(1).f_globals
            if name in ("bash", "sh"):
                return script(name, body)
            if name == "timeit":
                number, repeat, setup = timeit_options(line)
                if setup:
                    exec(setup, caller)
                return timeit(body, caller, number, repeat)
            if name == "writefile":
                with open(os.path.expanduser(line.strip()), "w") as f:
                    f.write(body)
                return print(f"Writing {line.strip()}")
            raise NotImplementedError(f"%%{name} is not available in this kernel")

    def timeit_options(line):
        number, repeat = 0, 7
        words = line.split()
        while len(words) >= 2 and words[0] in ("-n", "-r") and words[1].isdigit():
            if words[0] == "-n":
                number = int(words[1])
            else:
                repeat = int(words[1])
            words = words[2:]
        return number, repeat, " ".join(words)

    # -- wiring ----------------------------------------------------------------------------------

    helpers = types.SimpleNamespace(
        system=system,
        getoutput=getoutput,
        script=script,
        cd=cd,
        timeit=timeit,
        pip=pip,
        ask=ask,
        time=time,
    )
    session = getattr(kernel, "session", None)
    if session is not None:
        packer = session.pack

        def pack(obj):
            # A lone surrogate in printed text makes jupyter_client's packer raise inside the
            # output thread: the output is lost and a traceback takes its place. Replace it.
            try:
                return packer(obj)
            except UnicodeEncodeError:
                text = json.dumps(obj, default=str, ensure_ascii=False, allow_nan=False)
                return text.encode("utf-8", "replace")

        session.pack = pack
    names = {"tool": tool, "tools": tools, "ToolError": ToolError, "__livetools__": helpers}
    if shell is None:
        names["get_ipython"] = lambda: Shim()
        globals().update(names)  # the namespace this function was defined in: the user's
    else:
        shell.push(names, interactive=False)  # hidden from %who
        shell.events.register("pre_run_cell", remember_parent)
        shell.register_magic_function(pip, "line", "pip")
        shell.system = system
