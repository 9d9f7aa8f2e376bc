// The part of pg-cursor (2.22) Tally uses: a cursor submitted with client.query(cursor).
declare module 'pg-cursor' {
  import type { Submittable } from 'pg';
  export default class Cursor implements Submittable {
    constructor(text: string, values?: unknown[], config?: { rowMode?: 'array' });
    submit(connection: unknown): void;
    read(rows: number): Promise<unknown[]>;
    close(): Promise<void>;
  }
}
