/** The web console (ADR 0017): sign in, then pages chosen by the URL's hash (`#/apps/web/variables`). */
import "./console.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, describe, onUnauthorized, session } from "./api.js";
import { AppPage } from "./app-page.js";
import { CreateAddon } from "./create-addon.js";
import { CreateApp } from "./create-app.js";
import { Home } from "./home.js";
import type { Whoami } from "./types.js";
import { ErrorInline } from "./ui.js";

function useHash(): string[] {
  const read = () =>
    decodeURIComponent(location.hash.replace(/^#\/?/, ""))
      .split("/")
      .filter((p) => p !== "");
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => setParts(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return parts;
}

function SignIn({ onSignedIn }: { onSignedIn: (w: Whoami) => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const who = await api("GET /v1/whoami", { token: token.trim() });
      session.save(token.trim());
      onSignedIn(who);
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? "This token is not valid (or was revoked)."
          : describe(err),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form class="card" onSubmit={submit}>
        <h1>Sign in to Pier</h1>
        <p class="muted">
          Paste an API token: the admin token is in the data dir's <code>cli.json</code>;{" "}
          <code>pier tokens create</code> makes others, limited to one app if you like. It stays in this tab
          only.
        </p>
        <label for="token">API token</label>
        <input
          id="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          required
        />
        <div class="row">
          <button type="submit" class="primary" disabled={busy || token.trim() === ""} aria-busy={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
          <ErrorInline error={error} />
        </div>
      </form>
    </main>
  );
}

function Console() {
  const [who, setWho] = useState<Whoami | null>(null);
  const [checking, setChecking] = useState(session.token() !== "");
  const route = useHash();
  const signOut = () => {
    session.clear();
    setWho(null);
  };
  useEffect(() => {
    onUnauthorized(signOut);
    if (!session.token()) return;
    api("GET /v1/whoami")
      .then(setWho)
      .catch(() => session.clear())
      .finally(() => setChecking(false));
  }, []);
  if (checking) return <p class="muted">Signing in…</p>;
  if (!who) return <SignIn onSignedIn={setWho} />;
  const [page, name, tab] = route;
  document.title = `${
    page === "apps" && name
      ? `${name} · `
      : page === "new-app"
        ? "New app · "
        : page === "new-addon"
          ? "New add-on · "
          : ""
  }Pier console`;
  const canCreate = who.admin && !who.readOnly;
  let body = <Home who={who} />;
  if (page === "new-app") body = canCreate ? <CreateApp /> : <Home who={who} />;
  else if (page === "new-addon") body = canCreate ? <CreateAddon /> : <Home who={who} />;
  else if (page === "apps" && name)
    body = <AppPage key={name} name={name} tab={tab ?? "information"} who={who} />;
  return (
    <>
      <header class="top">
        <a href="#/" class="brand">
          Pier
        </a>
        <nav aria-label="Main">
          <a href="#/" aria-current={page === undefined ? "page" : undefined}>
            Apps and add-ons
          </a>
        </nav>
        <span class="who" data-testid="who">
          {who.name} ({who.app ? `app ${who.app.name}` : "admin"}
          {who.readOnly ? ", read-only" : ""})
        </span>
        <button type="button" class="plain small" onClick={signOut}>
          Sign out
        </button>
      </header>
      {body}
    </>
  );
}

const root = document.getElementById("root");
if (root) {
  root.replaceChildren();
  render(<Console />, root);
}
