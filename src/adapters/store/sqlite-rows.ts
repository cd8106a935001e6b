// What the store's tables share (src/adapters/store/sqlite*.ts): a row as better-sqlite3 gives it, its
// values read as text, and the two queries every table's class runs.
import type Database from "better-sqlite3";

export type Row = Record<string, unknown>;
export const now = (): string => new Date().toISOString();
export const str = (v: unknown): string => String(v);
export const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/** The tables of one part of the store, on the store's database. */
export class SqliteTables {
  constructor(protected readonly db: Database.Database) {}

  protected one(sql: string, ...params: unknown[]): Row | undefined {
    return this.db.prepare(sql).get(...params) as Row | undefined;
  }

  protected all(sql: string, ...params: unknown[]): Row[] {
    return this.db.prepare(sql).all(...params) as Row[];
  }
}
