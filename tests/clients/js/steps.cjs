"use strict";
// One line of JSON per step on stdout: {"step", "ok", "value"} or {"step", "ok": false, "error"}.
// A failing step is recorded and the flow goes on, so one run reports every step.

function describe(err) {
  if (err === null || typeof err !== "object") return String(err);
  const parts = [err.name || "Error", err.message || ""];
  const code = err.error?.code ?? err.code;
  if (code !== undefined) parts.push(`code=${code}`);
  if (err.statusCode !== undefined) parts.push(`status=${err.statusCode}`);
  if (err.status !== undefined) parts.push(`status=${err.status}`);
  return parts.filter(Boolean).join(" ");
}

let current = { name: "flow", tolerate: false, strays: [] };

// An error no step awaited (a socket's 'error' event) fails the step running when it came, unless that step
// tolerates them (it retries until its own result says whether it worked): then they are only counted.
process.on("uncaughtException", (err) => {
  if (current.tolerate) {
    current.strays.push(describe(err));
    return;
  }
  process.stdout.write(JSON.stringify({ step: current.name, ok: false, error: `uncaught: ${describe(err)}` }) + "\n");
});

// `show` turns the step's result into what is printed (the result itself is returned to the flow);
// `tolerate` makes stray errors during the step count instead of failing it.
async function step(name, fn, show = (value) => value, tolerate = false) {
  current = { name, tolerate, strays: [] };
  try {
    const value = await fn();
    const shown = show(value);
    process.stdout.write(JSON.stringify({ step: name, ok: true, value: shown === undefined ? null : shown }) + "\n");
    return value;
  } catch (err) {
    const strays = current.strays.length ? ` (after ${current.strays.length} stray errors: ${current.strays[0]})` : "";
    process.stdout.write(JSON.stringify({ step: name, ok: false, error: describe(err) + strays }) + "\n");
    return undefined;
  }
}

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The stray errors counted so far in the running step (one that tolerates them).
const strays = () => [...current.strays];

module.exports = { step, env, sleep, strays };
