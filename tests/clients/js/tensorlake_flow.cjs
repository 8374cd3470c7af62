"use strict";
// The TypeScript TensorLake SDK (tensorlake on npm) through a full lifecycle against sandproof serve.
// Environment: TENSORLAKE_API_URL, TENSORLAKE_API_KEY, TENSORLAKE_SANDBOX_PROXY_URL (as `sandproof env` exports them).
const { Sandbox, SandboxClient, StdinMode } = require("tensorlake");
const { step, env, sleep, strays } = require("./steps.cjs");

const text = (bytes) => new TextDecoder().decode(bytes);

// A 501 refusal (an operation the mock does not support here, as the emulator's PTY) as a value; any other error rethrown.
function refusal(err) {
  const match = /status (501)\): (\{.*\})/s.exec(err.message ?? "");
  if (!match) throw err;
  return { refused: Number(match[1]), code: JSON.parse(match[2]).code };
}

async function main() {
  const options = { apiUrl: env("TENSORLAKE_API_URL"), apiKey: env("TENSORLAKE_API_KEY"), requestTimeout: 30 };
  const sandbox = await step(
    "create",
    async () =>
      Sandbox.create({
        ...options,
        cpus: 1,
        memoryMb: 1024,
        timeoutSecs: 600,
        name: `clients-flow-${process.pid}`,
        allowInternetAccess: false,
        allowOut: ["pypi.org"],
        startupTimeout: 20,
      }),
    (created) => created.sandboxId,
  );
  if (!sandbox) return;
  await step("info", async () => {
    const info = await sandbox.info();
    return {
      status: info.status,
      name: info.name ?? null,
      cpus: info.resources?.cpus ?? null,
      memoryMb: info.resources?.memoryMb ?? null,
      timeoutSecs: info.timeoutSecs ?? null,
    };
  });
  await step("health", async () => (await sandbox.health()).healthy);
  await step("run", async () => {
    const result = await sandbox.run("echo", { args: ["hello", "tensorlake"] });
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
  });
  await step("run_shell_exit_code", async () => {
    const result = await sandbox.run("sh", { args: ["-c", "echo out; echo err >&2; exit 4"] });
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
  });
  await step("run_env_cwd", async () => {
    const result = await sandbox.run("sh", { args: ["-c", "pwd; echo $FLOW"], env: { FLOW: "f1" }, workingDir: "/tmp" });
    return result.stdout;
  });
  await step("files_write_read", async () => {
    await sandbox.writeFile("/tmp/flow/hello.txt", new TextEncoder().encode("hello file"));
    return text(await sandbox.readFile("/tmp/flow/hello.txt"));
  });
  await step("files_binary", async () => {
    await sandbox.writeFile("/tmp/flow/data.bin", new Uint8Array([0, 1, 2, 255]));
    return Array.from(await sandbox.readFile("/tmp/flow/data.bin"));
  });
  await step("files_by_command", async () => (await sandbox.run("cat", { args: ["/tmp/flow/hello.txt"] })).stdout);
  await step("files_list", async () => {
    const listing = await sandbox.listDirectory("/tmp/flow");
    return listing.entries.map((e) => ({ name: e.name, isDir: e.isDir, size: e.size ?? null })).sort((a, b) => a.name.localeCompare(b.name));
  });
  await step("files_delete", async () => {
    await sandbox.deleteFile("/tmp/flow/data.bin");
    const listing = await sandbox.listDirectory("/tmp/flow");
    return listing.entries.map((e) => e.name).sort();
  });
  await step("files_read_missing", async () => {
    try {
      await sandbox.readFile("/tmp/flow/none.txt");
      return "read";
    } catch (err) {
      return err.name;
    }
  });
  const started = await step(
    "process_start",
    async () => sandbox.startProcess("sh", { args: ["-c", "echo line1; echo line2; echo oops >&2; exit 2"] }),
    (info) => ({ pid: typeof info.pid, command: info.command }),
  );
  await step("process_wait", async () => {
    let info = await sandbox.getProcess(started.pid);
    for (let i = 0; i < 50 && info.status === "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      info = await sandbox.getProcess(started.pid);
    }
    return { status: info.status, exitCode: info.exitCode ?? null };
  });
  await step("process_output", async () => {
    const stdout = await sandbox.getStdout(started.pid);
    const stderr = await sandbox.getStderr(started.pid);
    return { stdout: stdout.lines, stderr: stderr.lines };
  });
  await step("process_list", async () => {
    const processes = await sandbox.listProcesses();
    return processes.some((p) => p.pid === started.pid);
  });
  await step("process_kill", async () => {
    const sleeper = await sandbox.startProcess("sleep", { args: ["30"] });
    await sandbox.killProcess(sleeper.pid);
    let info = await sandbox.getProcess(sleeper.pid);
    for (let i = 0; i < 50 && info.status === "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      info = await sandbox.getProcess(sleeper.pid);
    }
    return { status: info.status, signal: info.signal ?? null, exitCode: info.exitCode ?? null };
  });
  await step("process_follow", async () => {
    const proc = await sandbox.startProcess("sh", { args: ["-c", "echo f1; echo f2"] });
    const lines = [];
    for await (const event of sandbox.followStdout(proc.pid)) lines.push(event.line);
    return lines;
  });
  await step("process_stdin", async () => {
    const proc = await sandbox.startProcess("cat", { stdinMode: StdinMode.PIPE });
    await sandbox.writeStdin(proc.pid, new TextEncoder().encode("fed through stdin\n"));
    await sandbox.closeStdin(proc.pid);
    let info = await sandbox.getProcess(proc.pid);
    for (let i = 0; i < 50 && info.status === "running"; i++) {
      await sleep(100);
      info = await sandbox.getProcess(proc.pid);
    }
    return { status: info.status, stdout: (await sandbox.getStdout(proc.pid)).lines };
  });
  await step("pty", async () => {
    const chunks = [];
    let pty;
    try {
      pty = await sandbox.createPty({
        command: "sh",
        rows: 24,
        cols: 80,
        onData: (data) => chunks.push(Buffer.from(data).toString()),
      });
    } catch (err) {
      return refusal(err);
    }
    await pty.sendInput("echo pty-$((40 + 2)); exit 7\n");
    const code = await pty.wait();
    return { exitCode: code, saw: chunks.join("").includes("pty-42") };
  });
  await step("expose_ports", async () => {
    const client = new SandboxClient(options, true);
    try {
      return (await client.exposePorts(sandbox.sandboxId, [8080])).exposedPorts;
    } finally {
      client.close();
    }
  });
  await step("tunnel", async () => {
    await sandbox.writeFile("/tmp/www/index.html", new TextEncoder().encode("through the tunnel"));
    await sandbox.startProcess("python3", { args: ["-m", "http.server", "8123", "-d", "/tmp/www"] });
    const tunnel = await sandbox.createTunnel(8123);
    try {
      let last = "";
      for (let i = 0; i < 15; i++) {
        try {
          const response = await fetch(`http://127.0.0.1:${tunnel.localPort}/index.html`);
          return { status: response.status, body: await response.text() };
        } catch (err) {
          last = String(err);
          await sleep(100);
        }
      }
      // A runtime without ports (the emulator) refuses the tunnel's WebSocket with an HTTP 501 answer.
      if (strays().some((s) => /handshake failed with HTTP 501/.test(s))) return { refused: 501 };
      throw new Error(`nothing answered through the tunnel: ${last}`);
    } finally {
      await tunnel.close();
    }
  }, undefined, true);
  await step("list", async () => {
    const all = await Sandbox.list(options);
    return all.some((s) => s.sandboxId === sandbox.sandboxId);
  });
  await step("suspend", async () => {
    await sandbox.suspend();
    return await sandbox.status();
  });
  await step("resume", async () => {
    await sandbox.resume();
    const result = await sandbox.run("cat", { args: ["/tmp/flow/hello.txt"] });
    return { status: await sandbox.status(), stdout: result.stdout };
  });
  await step("terminate", async () => {
    await sandbox.terminate();
    return true;
  });
  await step("get_after_terminate", async () => {
    const client = new SandboxClient(options, true);
    try {
      const info = await client.get(sandbox.sandboxId);
      return { status: info.status };
    } catch (err) {
      return { error: err.name };
    } finally {
      client.close();
    }
  });
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ step: "flow", ok: false, error: String(err && err.stack) }) + "\n");
  process.exitCode = 1;
});
