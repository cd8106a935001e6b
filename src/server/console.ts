/**
 * The web console: one static page that drives the same /v1 API as the CLI, with the token the user
 * pastes (kept in the tab's sessionStorage only). Every value is put on the page as text, never as HTML.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export const CONSOLE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pier console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f8fa}
header{background:#1b1f24;color:#fff;padding:.7em 1.2em;display:flex;gap:1em;align-items:center}
header h1{font-size:1.1em;margin:0}main{padding:1.2em;max-width:1100px}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:1em;margin-bottom:1em}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3em .5em;border-bottom:1px solid #eee;font-size:.92em}
button{cursor:pointer}input,select{padding:.3em}pre{background:#0d1117;color:#e6edf3;padding:.8em;overflow:auto;max-height:420px;font-size:.85em}
.err{color:#b42318}.muted{color:#57606a}a{color:#0969da;cursor:pointer}
</style></head><body>
<header><h1>Pier</h1><span class="muted" id="who"></span></header>
<main>
<section id="login"><h2>Sign in</h2><p>Paste an API token (the admin token is in the data dir's <code>cli.json</code>).</p>
<input id="token" type="password" size="50" autocomplete="off"> <button id="signin">Sign in</button> <span class="err" id="loginErr"></span></section>
<div id="app" hidden>
<section><h2>Apps</h2><table><thead><tr><th>Name</th><th>Type</th><th>Instances</th><th>State</th><th>URL</th></tr></thead><tbody id="apps"></tbody></table>
<p><span id="createForm"><input id="newName" placeholder="name"> <select id="newType"><option>docker</option><option>node</option><option>phpserver</option></select>
<input id="newTask" placeholder="task command (optional), e.g. phpserver php-cli task.php" size="45">
<button id="create">Create app</button></span> <span class="err" id="createErr"></span></p><p class="err" id="appsErr"></p></section>
<section id="detail" hidden><h2 id="dName"></h2><p class="muted" id="dInfo"></p>
<p><button id="restart">Restart</button> <button id="stop">Stop</button> <span id="dMsg"></span></p>
<h3>Environment variables</h3><table><tbody id="env"></tbody></table>
<p><input id="envName" placeholder="variable name"> <input id="envValue" placeholder="variable value" size="40">
<button id="envUpdate">Update Changes</button> <span class="err" id="envErr"></span></p>
<h3>Deployments</h3><table><thead><tr><th>Id</th><th>State</th><th>Cause</th><th>Created</th><th>Reason</th></tr></thead><tbody id="deps"></tbody></table>
<pre id="log" hidden></pre></section>
</div></main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("pierToken") || "";
let current = null;
async function api(method, path, body) {
  const r = await fetch("/v1" + path, { method, headers: { authorization: "Bearer " + token, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  const data = text && (r.headers.get("content-type") || "").includes("json") ? JSON.parse(text) : text;
  if (!r.ok) throw new Error(data && data.error ? data.error.message + (data.error.hint ? " (" + data.error.hint + ")" : "") : r.statusText);
  return data;
}
function row(tbody, cells, onclick) {
  const tr = document.createElement("tr");
  for (const c of cells) { const td = document.createElement("td"); if (c instanceof Node) td.append(c); else td.textContent = c ?? ""; tr.append(td); }
  if (onclick) { tr.style.cursor = "pointer"; tr.onclick = onclick; }
  tbody.append(tr);
}
async function loadApps() {
  const apps = await api("GET", "/apps");
  $("apps").replaceChildren();
  for (const a of apps) {
    const link = document.createElement("a"); link.textContent = a.name; link.onclick = () => guard($("appsErr"), () => showApp(a.name));
    row($("apps"), [link, a.type, String(a.instances) + " x " + a.flavor, a.stopped ? "stopped" : "active", a.url]);
  }
}
async function showApp(name) {
  current = name;
  const s = await api("GET", "/apps/" + encodeURIComponent(name) + "/status");
  $("detail").hidden = false; $("log").hidden = true;
  $("dName").textContent = s.app.name + " (" + s.app.type + ")";
  $("dInfo").textContent = "state " + s.state + (s.release ? ", release v" + s.release.number : "") + " | git " + s.app.gitUrl + " | " + (s.app.task ? "task: " + s.app.task : s.app.url);
  const env = (await api("GET", "/apps/" + encodeURIComponent(name) + "/env")).vars;
  $("env").replaceChildren();
  for (const [k, v] of Object.entries(env)) {
    const rm = document.createElement("button"); rm.textContent = "remove";
    rm.onclick = () => guard($("envErr"), async () => { await api("PATCH", "/apps/" + encodeURIComponent(name) + "/env", { unset: [k] }); await showApp(name); });
    row($("env"), [k, v, rm]);
  }
  const deps = await api("GET", "/apps/" + encodeURIComponent(name) + "/deployments");
  $("deps").replaceChildren();
  for (const d of deps) row($("deps"), [d.id, d.state, d.cause, d.createdAt, d.reason], () => showLog(d.id));
}
async function showLog(id) {
  const text = await api("GET", "/apps/" + encodeURIComponent(current) + "/deployments/" + id + "/log");
  $("log").hidden = false; $("log").textContent = text;
}
async function guard(el, fn) { el.textContent = ""; try { await fn(); } catch (e) { el.textContent = e.message; } }
// What the token is: the page shows its scope and offers only what it may do; the server decides anyway,
// and a refused call (403) shows its message where it was made.
async function signedIn() {
  const who = await api("GET", "/whoami");
  $("who").textContent = "signed in with token " + who.name + " (" + (who.app ? "app " + who.app.name : "admin") + (who.readOnly ? ", read-only" : "") + ")";
  $("createForm").hidden = !who.admin || who.readOnly;
  $("login").hidden = true; $("app").hidden = false; await loadApps();
}
$("signin").onclick = () => guard($("loginErr"), async () => {
  token = $("token").value.trim(); await api("GET", "/apps");
  sessionStorage.setItem("pierToken", token); await signedIn();
});
$("create").onclick = () => guard($("createErr"), async () => {
  const task = $("newTask").value.trim();
  await api("POST", "/apps", { name: $("newName").value.trim(), type: $("newType").value, ...(task ? { task } : {}) }); await loadApps();
});
$("envUpdate").onclick = () => guard($("envErr"), async () => {
  await api("PATCH", "/apps/" + encodeURIComponent(current) + "/env", { set: { [$("envName").value.trim()]: $("envValue").value } });
  $("envName").value = ""; $("envValue").value = ""; await showApp(current);
});
$("restart").onclick = () => guard($("dMsg"), async () => { const d = await api("POST", "/apps/" + encodeURIComponent(current) + "/deployments", {}); $("dMsg").textContent = "deployment " + d.id + " queued"; await showApp(current); });
$("stop").onclick = () => guard($("dMsg"), async () => { await api("POST", "/apps/" + encodeURIComponent(current) + "/stop"); await showApp(current); });
if (token) { signedIn().catch(() => sessionStorage.removeItem("pierToken")); }
</script></body></html>
`;
