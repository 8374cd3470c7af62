// The sandproof dashboard: one page on the /_mock admin API, polled once a second. No build step, no libraries.
"use strict";

const API = "/_mock";
const POLL_MS = 1000;
const JOURNAL_KEEP = 500;

const state = {
  lastSeq: 0,
  journal: [],
  selected: null,
  catalogue: null,
  filterKey: "",
  polling: false,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(API + path, init);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (!response.ok) {
    const message = data && typeof data === "object" ? (data.message || data.detail || JSON.stringify(data)) : text;
    const error = new Error(`${method} ${API}${path}: ${response.status} ${message}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function say(message, ok) {
  const status = $("status");
  status.textContent = message || "";
  status.className = ok ? "ok" : "";
}

function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
}

function pretty(text) {
  if (!text) return "";
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return text; }
}

function replaceRows(tbody, rows) {
  tbody.replaceChildren(...rows);
}

// --- sandboxes --------------------------------------------------------------------------------------

function policyText(policy) {
  if (!policy) return "none";
  if (policy.defaultAction !== undefined) {
    const rules = (policy.egress || []).map((r) => `${r.action} ${r.target}`);
    return [`default ${policy.defaultAction}`, ...rules].join("; ");
  }
  const parts = [`internet ${policy.allow_internet_access === false ? "off" : "on"}`];
  if ((policy.allow_out || []).length) parts.push(`allow ${policy.allow_out.join(", ")}`);
  if ((policy.deny_out || []).length) parts.push(`deny ${policy.deny_out.join(", ")}`);
  return parts.join("; ");
}

function metadataText(metadata) {
  return Object.entries(metadata || {}).map(([k, v]) => `${k}=${v}`).join(", ");
}

async function refreshSandboxes() {
  const data = await call("GET", "/sandboxes");
  $("provider").textContent = data.provider;
  document.title = `sandproof ${data.provider} mock`;
  const rows = data.sandboxes.map((sb) =>
    el("tr", { dataset: { id: sb.id } },
      el("td", { class: "sandbox-id", title: JSON.stringify(sb.details || {}, null, 2) }, sb.id),
      el("td", { class: `state state-${sb.state}` }, sb.state),
      el("td", {}, sb.image || ""),
      el("td", { class: "policy" }, policyText(sb.policy)),
      el("td", {}, (sb.ports || []).join(", ")),
      el("td", { class: "metadata" }, metadataText(sb.metadata)),
      el("td", {}, when(sb.expires_at)),
      el("td", {},
        el("button", { type: "button", class: "small", title: "show this sandbox's requests",
          onclick: () => { $("filter-sandbox").value = sb.id; filtersChanged(); } }, "requests"),
        " ",
        el("button", { type: "button", class: "small target", title: "aim the custom rule at this sandbox",
          onclick: () => { $("fault-sandbox").value = sb.id; $("rule-details").open = true; } }, "fault"))));
  replaceRows($("sandboxes").tBodies[0], rows);
  $("sandbox-count").textContent = `(${rows.length})`;
  $("sandboxes-empty").hidden = rows.length > 0;
}

// --- fault rules ------------------------------------------------------------------------------------

function ruleMatch(rule) {
  return `${rule.method} ${rule.path}` + (rule.sandbox_id ? ` @${rule.sandbox_id}` : "");
}

function ruleAction(rule) {
  if (rule.action === "respond") return `respond ${rule.status}` + (rule.delay ? ` after ${rule.delay}s` : "");
  if (rule.action === "delay") return `delay ${rule.delay}s ${rule.delay_phase}`;
  if (rule.action === "cut_stream" || rule.action === "stall_stream") return `${rule.action} after ${rule.after_chunks}`;
  return rule.action;
}

// One fault rule's row: id, name, match, action, times fired, then the cells the table adds.
function ruleRow(rule, ...cells) {
  return el("tr", { dataset: { id: rule.id } },
    el("td", {}, rule.id),
    el("td", {}, rule.name),
    el("td", {}, ruleMatch(rule)),
    el("td", {}, ruleAction(rule)),
    el("td", {}, rule.fired),
    ...cells);
}

async function refreshFaults() {
  const rules = await call("GET", "/faults?all=1");
  const active = rules.filter((rule) => !rule.ended);
  const ended = rules.filter((rule) => rule.ended).reverse();
  const rows = active.map((rule) =>
    ruleRow(rule,
      el("td", {}, rule.times === null ? "forever" : rule.times - rule.fired),
      el("td", {}, el("button", { type: "button", class: "small remove", onclick: () => removeFault(rule.id) }, "remove"))));
  replaceRows($("faults").tBodies[0], rows);
  $("faults-empty").hidden = rows.length > 0;
  replaceRows($("faults-ended").tBodies[0], ended.map((rule) =>
    ruleRow(rule,
      el("td", {}, rule.last_fired_at === null ? "never" : when(rule.last_fired_at)),
      el("td", {}, rule.ended))));
  $("faults-ended-count").textContent = ended.length ? `(${ended.length})` : "";
}

async function removeFault(id) {
  try {
    await call("DELETE", `/faults/${id}`);
    say(`removed rule ${id}`, true);
  } catch (error) { say(error.message); }
  await refreshFaults().catch(() => {});
}

function numberOr(id, fallback) {
  const raw = $(id).value.trim();
  return raw === "" ? fallback : Number(raw);
}

function parseBody(text) {
  const trimmed = text.trim();
  if (!trimmed) return null;
  try { return JSON.parse(trimmed); } catch (_) { return text; }
}

function genericRule() {
  const action = $("fault-action").value;
  const rule = {
    method: $("fault-method").value,
    path: $("fault-path").value.trim() || "*",
    action,
    times: numberOr("fault-times", null),
    probability: numberOr("fault-probability", 1),
  };
  const sandbox = $("fault-sandbox").value.trim();
  if (sandbox) rule.sandbox_id = sandbox;
  const name = $("fault-name").value.trim();
  if (name) rule.name = name;
  if (action === "respond") {
    rule.status = numberOr("fault-status", 503);
    rule.body = parseBody($("fault-body").value);
    const headers = $("fault-headers").value.trim();
    rule.headers = headers ? JSON.parse(headers) : {};
    const ctype = $("fault-content-type").value.trim();
    if (ctype) rule.content_type = ctype;
  }
  if (action === "respond" || action === "delay") {
    rule.delay = numberOr("fault-delay", 0);
    rule.delay_phase = $("fault-delay-phase").value;
  }
  if (action === "cut_stream" || action === "stall_stream") rule.after_chunks = numberOr("fault-after-chunks", 0);
  if (action === "stall_stream") rule.stall_seconds = numberOr("fault-stall", 30);
  return rule;
}

async function addGenericRule(event) {
  event.preventDefault();
  try {
    const rule = await call("POST", "/faults", genericRule());
    say(`added rule ${rule.id} (${rule.name})`, true);
  } catch (error) { say(error.message); }
  await refreshFaults().catch(() => {});
}

function showActionFields() {
  const action = $("fault-action").value;
  for (const label of document.querySelectorAll("#fault-form [data-for]")) {
    label.hidden = !label.dataset.for.split(" ").includes(action);
  }
}

// --- the named fault catalogue (served by a mock that has one) ---------------------------------------

async function loadCatalogue() {
  try {
    const data = await call("GET", "/faults/catalogue");
    state.catalogue = (data && Array.isArray(data.faults)) ? data.faults : null;
  } catch (_) {
    state.catalogue = null;
  }
  const form = $("catalogue-form");
  if (!state.catalogue || state.catalogue.length === 0) {
    form.hidden = true;
    $("rule-details").open = true;
    return;
  }
  form.hidden = false;
  $("rule-details").open = false;
  const select = $("catalogue-select");
  select.replaceChildren(...state.catalogue.map((f) => el("option", { value: f.name }, f.name)));
  showCatalogueFault();
}

function paramInput(param) {
  const id = `param-${param.name}`;
  const type = String(param.type || "string").toLowerCase();
  let input;
  if (type.startsWith("bool")) {
    input = el("input", { id, type: "checkbox", dataset: { kind: "bool", name: param.name } });
    input.checked = Boolean(param.default);
  } else if (["int", "integer", "float", "number"].includes(type)) {
    input = el("input", { id, type: "number", step: "any", dataset: { kind: "number", name: param.name } });
    if (param.default !== null && param.default !== undefined) input.value = param.default;
  } else if (["json", "object", "array", "dict", "list"].includes(type)) {
    input = el("textarea", { id, rows: 2, dataset: { kind: "json", name: param.name } });
    if (param.default !== null && param.default !== undefined) input.value = JSON.stringify(param.default);
  } else {
    input = el("input", { id, dataset: { kind: "text", name: param.name } });
    if (param.default !== null && param.default !== undefined) input.value = param.default;
  }
  return el("label", { title: param.description || "" }, `${param.name} (${type})`, input,
    param.description ? el("span", { class: "hint" }, param.description) : null);
}

function showCatalogueFault() {
  const fault = (state.catalogue || []).find((f) => f.name === $("catalogue-select").value);
  if (!fault) return;
  $("catalogue-description").textContent = fault.description || "";
  $("catalogue-reaction").textContent = fault.sdk_reaction ? `SDK reaction: ${fault.sdk_reaction}` : "";
  $("catalogue-params").replaceChildren(el("div", { class: "grid" }, ...(fault.params || []).map(paramInput)));
}

function catalogueParams() {
  const params = {};
  for (const input of document.querySelectorAll("#catalogue-params [data-name]")) {
    const { kind, name } = input.dataset;
    if (kind === "bool") { params[name] = input.checked; continue; }
    const raw = input.value.trim();
    if (raw === "") continue;
    params[name] = kind === "number" ? Number(raw) : kind === "json" ? JSON.parse(raw) : raw;
  }
  return params;
}

async function armCatalogueFault(event) {
  event.preventDefault();
  const name = $("catalogue-select").value;
  try {
    const armed = await call("POST", `/faults/catalogue/${encodeURIComponent(name)}`, catalogueParams());
    const count = armed && Array.isArray(armed.rules) ? armed.rules.length : 0;
    say(`armed ${name} (${count} rule${count === 1 ? "" : "s"})`, true);
  } catch (error) { say(error.message); }
  await refreshFaults().catch(() => {});
}

// --- virtual clock ----------------------------------------------------------------------------------

async function refreshClock() {
  const clock = await call("GET", "/clock");
  $("clock-now").textContent = when(clock.now);
  const mode = $("clock-mode");
  if (document.activeElement !== mode) mode.value = clock.mode;
}

// What an advance changed: the sandboxes that ended or moved to another state, as one line.
function clockChanges(before, after) {
  const now = new Map(after.map((sb) => [sb.id, sb.state]));
  const changes = [];
  for (const sb of before) {
    const state = now.get(sb.id);
    if (state === undefined) changes.push(`${sb.id} ${sb.state} → gone`);
    else if (state !== sb.state) changes.push(`${sb.id} ${sb.state} → ${state}`);
  }
  return changes.length ? `; ${changes.length} sandbox${changes.length > 1 ? "es" : ""} changed: ${changes.join(", ")}` : "";
}

async function advanceClock() {
  try {
    const before = (await call("GET", "/sandboxes")).sandboxes;
    const result = await call("POST", "/clock/advance", { seconds: numberOr("clock-seconds", 0) });
    const after = (await call("GET", "/sandboxes")).sandboxes;
    say(`clock now ${when(result.now)}${clockChanges(before, after)}`, true);
  } catch (error) { say(error.message); }
  await refreshAll();
}

async function setClockMode() {
  try {
    await call("POST", "/clock/mode", { mode: $("clock-mode").value });
    say(`clock mode ${$("clock-mode").value}`, true);
  } catch (error) { say(error.message); }
  await refreshClock().catch(() => {});
}

// --- DNS --------------------------------------------------------------------------------------------

async function refreshDns() {
  const dns = await call("GET", "/dns");
  const rows = Object.entries(dns.entries).map(([name, addresses]) =>
    el("tr", {}, el("td", {}, name), el("td", {}, addresses.length ? addresses.join(", ") : "(unresolvable)")));
  replaceRows($("dns").tBodies[0], rows);
  const select = $("dns-default");
  if (document.activeElement !== select) select.value = dns.default;
}

async function setDnsEntry(event) {
  event.preventDefault();
  const name = $("dns-name").value.trim();
  const addresses = $("dns-addresses").value.split(",").map((a) => a.trim()).filter(Boolean);
  try {
    await call("POST", "/dns", { [name]: addresses });
    say(`DNS ${name} set`, true);
    $("dns-name").value = "";
    $("dns-addresses").value = "";
  } catch (error) { say(error.message); }
  await refreshDns().catch(() => {});
}

async function setDnsDefault() {
  try {
    const dns = await call("GET", "/dns");
    await call("PUT", "/dns", { entries: dns.entries, default: $("dns-default").value });
    say(`DNS default ${$("dns-default").value}`, true);
  } catch (error) { say(error.message); }
  await refreshDns().catch(() => {});
}

// --- unknown fields ---------------------------------------------------------------------------------

async function refreshUnknown() {
  const unknown = await call("GET", "/journal/unknown");
  const items = Object.entries(unknown).map(([callName, fields]) =>
    el("li", {}, el("code", {}, callName), ": ", fields.join(", ")));
  $("unknown").replaceChildren(...items);
  $("unknown-empty").hidden = items.length > 0;
}

// --- journal ----------------------------------------------------------------------------------------

function journalFilters() {
  const params = new URLSearchParams({ brief: "1" });
  const method = $("filter-method").value;
  const path = $("filter-path").value.trim();
  const status = $("filter-status").value.trim();
  const sandbox = $("filter-sandbox").value.trim();
  if (method) params.set("method", method);
  if (path) params.set("path", path.includes("*") || path.includes("?") ? path : `${path}*`);
  if (status) params.set("status", status);
  if (sandbox) params.set("sandbox_id", sandbox);
  return params;
}

function journalRow(entry) {
  const bad = entry.status >= 400 || entry.status === 0;
  const row = el("tr", { dataset: { seq: entry.seq }, onclick: () => showEntry(entry.seq) },
    el("td", {}, entry.seq),
    el("td", {}, when(entry.time).slice(11)),
    el("td", {}, entry.method),
    el("td", {}, entry.path + (entry.query ? `?${entry.query}` : "")),
    el("td", { class: bad ? "status-bad" : "status-ok" }, entry.status),
    el("td", {}, entry.sandbox_id || ""),
    el("td", {}, entry.fault || ""));
  if (entry.seq === state.selected) row.classList.add("selected");
  return row;
}

function renderJournal() {
  const rows = state.journal.slice().reverse().map(journalRow);
  replaceRows($("journal").tBodies[0], rows);
  $("journal-count").textContent = `(${state.journal.length} shown)`;
}

async function refreshJournal() {
  const params = journalFilters();
  const key = params.toString();
  if (key !== state.filterKey) {
    state.filterKey = key;
    state.journal = [];
    state.lastSeq = 0;
  }
  if (state.lastSeq) params.set("since", String(state.lastSeq));
  else params.set("limit", "200");
  const entries = await call("GET", `/journal?${params}`);
  if (state.filterKey !== key) return;  // the filters changed while this poll was out
  const fresh = entries.filter((e) => e.seq > state.lastSeq);
  if (fresh.length === 0 && state.journal.length) return;
  state.journal.push(...fresh);
  if (state.journal.length > JOURNAL_KEEP) state.journal.splice(0, state.journal.length - JOURNAL_KEEP);
  if (fresh.length) state.lastSeq = fresh[fresh.length - 1].seq;
  renderJournal();
}

function filtersChanged() {
  state.filterKey = "";
  refreshJournal().catch((error) => say(error.message));
}

function headerLines(headers) {
  return Object.entries(headers || {}).map(([k, v]) => `${k}: ${v}`).join("\n");
}

async function showEntry(seq) {
  state.selected = seq;
  for (const row of $("journal").tBodies[0].rows) row.classList.toggle("selected", Number(row.dataset.seq) === seq);
  const detail = $("entry-detail");
  let entry;
  try { entry = await call("GET", `/journal/${seq}`); } catch (error) {
    detail.replaceChildren(el("p", { class: "hint" }, error.message));
    return;
  }
  const notes = [
    `tenant ${entry.tenant || "-"}`,
    `sandbox ${entry.sandbox_id || "-"}`,
    entry.fault ? `fault ${entry.fault}` : null,
    entry.unknown_fields.length ? `unknown fields ${entry.unknown_fields.join(", ")}` : null,
  ].filter(Boolean).join(" · ");
  detail.replaceChildren(
    el("h3", {}, `#${entry.seq} ${entry.method} ${entry.path}${entry.query ? "?" + entry.query : ""}`),
    el("p", { class: "hint" }, `${when(entry.time)} · ${notes}`),
    el("h3", {}, "Request headers"), el("pre", { id: "entry-request-headers" }, headerLines(entry.headers)),
    el("h3", {}, "Request body"), el("pre", { id: "entry-request-body" }, pretty(entry.body) || "(empty)"),
    el("h3", {}, `Response ${entry.status}`), el("pre", { id: "entry-response-headers" }, headerLines(entry.response_headers)),
    el("h3", {}, "Response body" + (entry.response_truncated ? " (truncated)" : "")),
    el("pre", { id: "entry-response-body" }, pretty(entry.response_body) || "(empty)"));
}

async function clearJournal() {
  try {
    await call("DELETE", "/journal");
    state.journal = [];
    state.selected = null;
    renderJournal();
    say("journal cleared", true);
  } catch (error) { say(error.message); }
}

// --- polling ----------------------------------------------------------------------------------------

async function refreshAll() {
  const parts = [refreshSandboxes(), refreshFaults(), refreshClock(), refreshUnknown()];
  if ($("journal-live").checked) parts.push(refreshJournal());
  const results = await Promise.allSettled(parts);
  const failed = results.find((r) => r.status === "rejected");
  if (failed) say(`cannot reach the mock: ${failed.reason.message}`);
  document.body.dataset.refreshed = String(Date.now());
}

async function poll() {
  if (state.polling) return;
  state.polling = true;
  try { await refreshAll(); } finally { state.polling = false; }
}

function start() {
  $("clock-advance").addEventListener("click", advanceClock);
  $("clock-mode").addEventListener("change", setClockMode);
  $("fault-form").addEventListener("submit", addGenericRule);
  $("fault-action").addEventListener("change", showActionFields);
  $("faults-clear").addEventListener("click", async () => {
    try { await call("DELETE", "/faults"); say("all rules removed", true); } catch (error) { say(error.message); }
    await refreshFaults().catch(() => {});
  });
  $("catalogue-form").addEventListener("submit", armCatalogueFault);
  $("catalogue-select").addEventListener("change", showCatalogueFault);
  $("dns-form").addEventListener("submit", setDnsEntry);
  $("dns-default").addEventListener("change", setDnsDefault);
  $("journal-clear").addEventListener("click", clearJournal);
  for (const id of ["filter-method", "filter-path", "filter-status", "filter-sandbox"]) {
    $(id).addEventListener("change", filtersChanged);
  }
  showActionFields();
  // Ready once the page has shown everything once: the catalogue, DNS and the first poll (provider, sandboxes).
  Promise.allSettled([loadCatalogue(), refreshDns(), poll()]).then(() => {
    document.body.dataset.ready = "1";
  });
  setInterval(poll, POLL_MS);
  setInterval(() => refreshDns().catch(() => {}), 5 * POLL_MS);
}

start();
