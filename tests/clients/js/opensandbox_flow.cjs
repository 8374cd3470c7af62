"use strict";
// The TypeScript OpenSandbox SDK (@alibaba-group/opensandbox) through a full lifecycle against sandproof serve.
// Environment: OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_API_KEY (as `sandproof env` exports them).
const { ConnectionConfig, Sandbox, SandboxManager } = require("@alibaba-group/opensandbox");
const { step, env, sleep } = require("./steps.cjs");

async function main() {
  const connectionConfig = new ConnectionConfig({
    domain: env("OPEN_SANDBOX_DOMAIN"),
    apiKey: env("OPEN_SANDBOX_API_KEY"),
    requestTimeoutSeconds: 30,
  });
  const sandbox = await step("create", async () => {
    const created = await Sandbox.create({
      connectionConfig,
      image: "python:3.11",
      timeoutSeconds: 600,
      env: { GREETING: "hello from env" },
      metadata: { suite: "clients" },
      networkPolicy: { defaultAction: "deny", egress: [{ action: "allow", target: "pypi.org" }] },
      credentialProxy: { enabled: true },
      readyTimeoutSeconds: 20,
    });
    return created;
  }, (created) => created.id);
  if (!sandbox) return;
  await step("info", async () => {
    const info = await sandbox.getInfo();
    return { state: info.status.state, metadata: info.metadata, image: info.image, expires: Boolean(info.expiresAt) };
  });
  await step("healthy", async () => sandbox.isHealthy());
  await step("run_echo", async () => {
    const execution = await sandbox.commands.run("echo hello sandbox");
    return { stdout: execution.logs.stdout.map((m) => m.text).join(""), error: execution.error ?? null };
  });
  await step("run_env", async () => {
    const execution = await sandbox.commands.run("echo $GREETING");
    return execution.logs.stdout.map((m) => m.text).join("");
  });
  await step("run_exit_code", async () => {
    const execution = await sandbox.commands.run("sh -c 'echo oops >&2; exit 3'");
    return {
      stderr: execution.logs.stderr.map((m) => m.text).join(""),
      error: execution.error ? { name: execution.error.name, value: execution.error.value } : null,
    };
  });
  await step("run_handlers", async () => {
    const seen = [];
    await sandbox.commands.run("printf 'a\\nb\\n'", undefined, {
      onStdout: (m) => {
        seen.push(m.text);
      },
    });
    return seen.join("");
  });
  await step("run_cwd_envs", async () => {
    const execution = await sandbox.commands.run("pwd; echo $EXTRA", { workingDirectory: "/tmp", envs: { EXTRA: "x1" } });
    return execution.logs.stdout.map((m) => m.text).join("");
  });
  await step("run_background", async () => {
    const execution = await sandbox.commands.run("echo started; sleep 0.2; echo done", { background: true });
    let status = await sandbox.commands.getCommandStatus(execution.id);
    for (let i = 0; i < 50 && status.running; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await sandbox.commands.getCommandStatus(execution.id);
    }
    const logs = await sandbox.commands.getBackgroundCommandLogs(execution.id);
    return { running: status.running, exitCode: status.exitCode, logs: logs.content };
  });
  await step("session", async () => {
    const session = await sandbox.commands.createSession({ workingDirectory: "/tmp" });
    await sandbox.commands.runInSession(session, "mkdir -p /tmp/sess && cd /tmp/sess && export MARK=kept");
    const execution = await sandbox.commands.runInSession(session, "pwd; echo $MARK");
    return execution.logs.stdout.map((m) => m.text.trim()).filter(Boolean);
  });
  await step("files_write", async () => {
    await sandbox.files.createDirectories([{ path: "/tmp/demo", mode: 755 }]);
    await sandbox.files.writeFiles([
      { path: "/tmp/demo/hello.txt", data: "Hello World", mode: 644 },
      { path: "/tmp/demo/data.bin", data: new Uint8Array([0, 1, 2, 255]) },
    ]);
    return true;
  });
  await step("files_read", async () => sandbox.files.readFile("/tmp/demo/hello.txt"));
  await step("files_read_bytes", async () => Array.from(await sandbox.files.readBytes("/tmp/demo/data.bin")));
  await step("files_read_by_command", async () => {
    const execution = await sandbox.commands.run("cat /tmp/demo/hello.txt");
    return execution.logs.stdout.map((m) => m.text).join("");
  });
  await step("files_info", async () => {
    const info = await sandbox.files.getFileInfo(["/tmp/demo/hello.txt"]);
    return { size: info["/tmp/demo/hello.txt"]?.size ?? null };
  });
  await step("files_search", async () => {
    const found = await sandbox.files.search({ path: "/tmp/demo", pattern: "*.txt" });
    return found.map((f) => f.path).sort();
  });
  await step("files_move_delete", async () => {
    await sandbox.files.moveFiles([{ src: "/tmp/demo/hello.txt", dest: "/tmp/demo/moved.txt" }]);
    const moved = await sandbox.files.readFile("/tmp/demo/moved.txt");
    await sandbox.files.deleteFiles(["/tmp/demo/moved.txt"]);
    const left = await sandbox.files.search({ path: "/tmp/demo", pattern: "*.txt" });
    return { moved, left: left.map((f) => f.path) };
  });
  await step("endpoint", async () => {
    const endpoint = await sandbox.getEndpoint(8000);
    const url = await sandbox.getEndpointUrl(8000);
    return { endpoint: endpoint.endpoint, url };
  });
  await step("endpoint_fetch", async () => {
    // A real server where programs run (the linux runtime); the emulator answers a sandbox's ports with its echo app.
    await sandbox.files.writeFiles([{ path: "/tmp/www/index.html", data: "served from the sandbox" }]);
    await sandbox.commands.run("python3 -m http.server 8000 -d /tmp/www", { background: true });
    const endpoint = await sandbox.getEndpoint(8000);
    const url = await sandbox.getEndpointUrl(8000);
    let response;
    for (let i = 0; i < 30; i++) {
      response = await fetch(`${url}/index.html`, { headers: endpoint.headers ?? {} });
      if (response.status !== 502) break;
      await sleep(100);
    }
    return { status: response.status, body: await response.text() };
  });
  await step("metrics", async () => {
    const metrics = await sandbox.getMetrics();
    return { cpuCount: metrics.cpuCount, memoryTotalMiB: metrics.memoryTotalMiB };
  });
  await step("egress_get", async () => {
    const policy = await sandbox.getEgressPolicy();
    return { defaultAction: policy.defaultAction, egress: policy.egress };
  });
  await step("egress_patch", async () => {
    await sandbox.patchEgressRules([{ action: "allow", target: "www.github.com" }]);
    const policy = await sandbox.getEgressPolicy();
    return policy.egress.map((rule) => `${rule.action}:${rule.target}`).sort();
  });
  await step("credential_vault", async () => {
    await sandbox.credentialVault.create({
      credentials: [{ name: "pypi-token", source: { value: "secret-value" } }],
      bindings: [
        {
          name: "pypi-token",
          match: { hosts: ["pypi.org"] },
          auth: { type: "bearer", credential: "pypi-token" },
        },
      ],
    });
    const state = await sandbox.credentialVault.get();
    return {
      revision: state.revision,
      credentials: state.credentials.map((c) => c.name),
      bindings: state.bindings.map((b) => b.name),
      leaked: JSON.stringify(state).includes("secret-value"),
    };
  });
  await step("renew", async () => {
    const renewed = await sandbox.renew(1200);
    return Boolean(renewed.expiresAt);
  });
  await step("patch_metadata", async () => {
    const info = await sandbox.patchMetadata({ stage: "patched" });
    return info.metadata;
  });
  await step("manager_list", async () => {
    const manager = SandboxManager.create({ connectionConfig });
    try {
      const list = await manager.listSandboxInfos({ states: ["Running"], metadata: { suite: "clients" } });
      return list.items.map((s) => s.id);
    } finally {
      await manager.close();
    }
  });
  let current = sandbox;
  await step("pause", async () => {
    await sandbox.pause();
    const info = await sandbox.getInfo();
    return info.status.state;
  });
  await step("resume", async () => {
    current = await sandbox.resume({ readyTimeoutSeconds: 20 });
    const execution = await current.commands.run("echo back");
    return { state: (await current.getInfo()).status.state, stdout: execution.logs.stdout.map((m) => m.text).join("") };
  });
  await step("kill", async () => {
    await current.kill();
    return true;
  });
  await step("info_after_kill", async () => {
    const manager = SandboxManager.create({ connectionConfig });
    try {
      const info = await manager.getSandboxInfo(sandbox.id);
      return { state: info.status.state };
    } catch (err) {
      return { error: err.error?.code ?? String(err) };
    } finally {
      await manager.close();
    }
  });
  await current.close();
  if (current !== sandbox) await sandbox.close();
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ step: "flow", ok: false, error: String(err && err.stack) }) + "\n");
  process.exitCode = 1;
});
