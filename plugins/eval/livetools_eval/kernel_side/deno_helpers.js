// Runs once inside every Deno kernel (sent as a silent cell). Defines tool()/tools(), which reach
// the host over the stdin channel: prompt() with a marked message is an input_request the host
// answers with JSON. A plain prompt() gets null (nobody can type here). `__livetools__` holds
// what rewritten idioms (!cmd, %cd, %%bash, %%timeit) call.
{
  const MARKER = "__MARKER__";
  const ask = globalThis.prompt;
  const decoder = new TextDecoder();

  class ToolError extends Error {
    constructor(message) {
      super(message);
      this.name = "ToolError";
    }
  }

  class ToolResult {
    constructor(reply) {
      this.ok = Boolean(reply.ok);
      this.text = String(reply.text ?? "");
      this.data = reply.data ?? null;
      this.images = (reply.images ?? []).map((b64) =>
        Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
      );
    }
    toString() {
      return this.text;
    }
    [Symbol.for("Jupyter.display")]() {
      return { "text/plain": this.text }; // a cell ending in tool(...) shows what the tool said
    }
  }
  const wrap = (reply) => new ToolResult(reply);

  const request = (payload) => {
    const raw = ask(MARKER + JSON.stringify(payload));
    if (raw === null) throw new Error("tool bridge unavailable: this kernel has no stdin channel");
    return JSON.parse(raw);
  };

  const tool = (name, args = {}) => {
    const result = wrap(request({ call: [name, args] }));
    if (!result.ok) throw new ToolError(result.text);
    return result;
  };

  const tools = (calls) => {
    const batch = calls.map((c) =>
      typeof c === "string" ? [c, {}] : Array.isArray(c) ? [c[0], c[1] ?? {}] : [c.name, c.args ?? {}]
    );
    return request({ batch }).results.map(wrap);
  };

  const print = (text) => Deno.jupyter.broadcast("stream", { name: "stdout", text });

  const run = async (shell, script) => {
    const child = new Deno.Command(shell, {
      args: ["-c", "exec 2>&1\n" + script],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    let last = "\n";
    for await (const chunk of child.stdout) {
      const text = decoder.decode(chunk, { stream: true });
      if (text) {
        await print(text);
        last = text.at(-1);
      }
    }
    if (last !== "\n") await print("\n");
    const { code } = await child.status;
    globalThis._exit_code = code;
    return code;
  };

  const fmt = (seconds) => {
    for (const [unit, scale] of [["s", 1], ["ms", 1e-3], ["µs", 1e-6], ["ns", 1e-9]]) {
      if (seconds >= scale) return `${(seconds / scale).toPrecision(3)} ${unit}`;
    }
    return `${(seconds * 1e9).toPrecision(3)} ns`;
  };

  const helpers = {
    async system(command) {
      const code = await run("sh", command);
      if (code) await print(`[exit code ${code}]\n`);
    },
    async script(shell, body) {
      const code = await run(shell, body);
      if (code) throw new Error(`${shell} exited with code ${code}`);
    },
    cd(path) {
      Deno.chdir(path || Deno.env.get("HOME") || "/");
      console.log(Deno.cwd());
    },
    async timeit(fn, number = 0, repeat = 7) {
      if (!number) {
        number = 1;
        for (;;) {
          const t = performance.now();
          for (let i = 0; i < number; i++) await fn();
          if (performance.now() - t >= 200 || number >= 1e7) break;
          number *= 10;
        }
      }
      const runs = [];
      for (let r = 0; r < repeat; r++) {
        const t = performance.now();
        for (let i = 0; i < number; i++) await fn();
        runs.push((performance.now() - t) / 1000 / number);
      }
      const mean = runs.reduce((a, b) => a + b, 0) / runs.length;
      const sd = Math.sqrt(runs.reduce((a, b) => a + (b - mean) ** 2, 0) / runs.length);
      const plural = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;
      console.log(
        `${fmt(mean)} ± ${fmt(sd)} per loop (mean ± std. dev. of ${plural(repeat, "run")}, ` +
          `${plural(number, "loop")} each)`,
      );
    },
    async time(fn) {
      const t = performance.now();
      const value = await fn();
      console.log(`Wall time: ${fmt((performance.now() - t) / 1000)}`);
      return value;
    },
  };

  globalThis.prompt = (message, fallback) => {
    const value = ask(message, fallback);
    return value === "\x04" ? null : value; // end-of-file: no human at this keyboard
  };
  Object.assign(globalThis, { tool, tools, ToolError, __livetools__: helpers });
}
