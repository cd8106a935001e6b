/** Reading the app's variables, as every runtime's planner does. Pure. */

/** A variable's value, or undefined when it is unset or empty (an empty value counts as unset). */
export function read(vars: Record<string, string>, name: string): string | undefined {
  const v = vars[name];
  return v === undefined || v.trim() === "" ? undefined : v;
}

/** A value as a message quotes it (JSON: what is invisible in it shows). */
export const quoted = (s: string) => JSON.stringify(s);

/** NUL, newline, tab, any other C0 control character, or DEL. */
export function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
