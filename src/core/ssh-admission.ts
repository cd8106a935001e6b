/** A connection that has not authenticated yet, as the SSH server's admission sees it. */
export interface Unauthenticated {
  /** The remote address; null on the builds' unix socket. */
  source: string | null;
  /** When it was opened (ms): the oldest of a source yields first. */
  openedAt: number;
}

export type Admission =
  | { accept: true; evict: Unauthenticated | null }
  | { accept: false; why: "per-source" | "full" };

/**
 * Whether a new connection from `source` gets one of the listener's unauthenticated slots (`held` are the
 * listener's slots taken now). One address takes at most `perSource`. When every slot is taken, a newcomer
 * from an address that would still hold fewer than the largest holder takes the slot of that holder's oldest
 * connection: a few addresses can keep each other waiting, never everyone else (ADR 0020). On the builds'
 * socket (no addresses), a full listener refuses.
 */
export function admit(
  held: readonly Unauthenticated[],
  source: string | null,
  limits: { max: number; perSource: number },
): Admission {
  const counts = new Map<string, Unauthenticated[]>();
  for (const h of held) {
    if (h.source === null) continue;
    const list = counts.get(h.source) ?? [];
    list.push(h);
    counts.set(h.source, list);
  }
  const mine = source === null ? 0 : (counts.get(source)?.length ?? 0);
  if (source !== null && mine >= limits.perSource) return { accept: false, why: "per-source" };
  if (held.length < limits.max) return { accept: true, evict: null };
  if (source === null) return { accept: false, why: "full" };
  let hog: Unauthenticated[] = [];
  for (const list of counts.values()) if (list.length > hog.length) hog = list;
  if (hog.length <= mine + 1) return { accept: false, why: "full" };
  const oldest = hog.reduce((a, b) => (b.openedAt < a.openedAt ? b : a));
  return { accept: true, evict: oldest };
}
