// The batch ingestion baseline: COPY of the rows Tally itself stored (the batch's 100 events, each
// copied with a fresh uuidv7 id and the current time) into `bench_copy`, a table created `LIKE events
// INCLUDING ALL` (same columns, defaults, constraints and indexes), in COPY statements of 10,000
// rows on one connection, for `seconds` after one warm-up statement. It runs after Tally has
// stopped, on the same database: the scratch PostgreSQL database, or the embedded data directory
// opened with PGlite in this process. Rows a second is the database's bulk-load rate for exactly
// what a batch writes to `events`, which Tally's batches (plus users, counters and the event
// dictionary, in one transaction) are compared with.
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { uuidv7 } from '../server/src/ids.js';

const COLUMNS = [
  'id',
  'app_id',
  'user_id',
  'event_name',
  'properties',
  'ip',
  'ua',
  'source',
  'is_bot',
  'created_at',
  'received_at',
] as const;
const ROWS_PER_COPY = 10_000;
// The batch's 100 events (properties.i from 0 to 99), each as Tally last stored it.
const TEMPLATE = `select distinct on ((properties->>'i')::int)
    app_id, user_id, event_name, properties::text as properties, ip, ua, source, is_bot
  from events where (properties->>'i')::int < 100
  order by (properties->>'i')::int, received_at desc`;
const CREATE = 'drop table if exists bench_copy; create table bench_copy (like events including all)';
const COPY_SQL = `copy bench_copy (${COLUMNS.join(', ')}) from stdin`;

type Row = Record<string, unknown>;

/** COPY's text format: tab-separated, `\N` for null, backslash escapes. */
function field(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  return String(value).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}

function copyText(template: Row[]): Buffer<ArrayBuffer> {
  const now = new Date().toISOString();
  let text = '';
  for (let i = 0; i < ROWS_PER_COPY; i++) {
    const r = template[i % template.length]!;
    const row: Row = { ...r, id: uuidv7(), created_at: now, received_at: now };
    text += `${COLUMNS.map((c) => field(row[c])).join('\t')}\n`;
  }
  return Buffer.from(text) as Buffer<ArrayBuffer>;
}

/** Runs `copyOnce` for `seconds` after one warm-up call; rows a second. */
async function timed(seconds: number, copyOnce: () => Promise<void>): Promise<{ rows: number; perSecond: number }> {
  await copyOnce();
  let rows = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  while (performance.now() < end) {
    await copyOnce();
    rows += ROWS_PER_COPY;
  }
  return { rows, perSecond: (rows / (performance.now() - started)) * 1000 };
}

interface CopyConnection {
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/** COPY ... FROM STDIN through node-postgres, with `data` as the whole input. */
function copyIn(client: pg.Client, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const query = new pg.Query(COPY_SQL) as pg.Query & { handleCopyInResponse(c: CopyConnection): void };
    query.handleCopyInResponse = (connection) => {
      connection.sendCopyFromChunk(data);
      connection.endCopyFrom();
    };
    query.on('end', () => resolve());
    query.on('error', reject);
    client.query(query);
  });
}

export async function copyPostgres(databaseUrl: string, seconds: number) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const template = (await client.query(TEMPLATE)).rows as Row[];
    if (template.length === 0) throw new Error('no events to copy');
    await client.query(CREATE);
    return await timed(seconds, () => copyIn(client, copyText(template)));
  } finally {
    await client.end();
  }
}

/** The same on the embedded database of a stopped Tally's data directory. */
export async function copyEmbedded(dataDir: string, seconds: number) {
  const db = await PGlite.create({ dataDir: path.join(dataDir, 'pgdata') });
  try {
    const template = (await db.query<Row>(TEMPLATE)).rows;
    if (template.length === 0) throw new Error('no events to copy');
    await db.exec(CREATE);
    const sql = COPY_SQL.replace('from stdin', "from '/dev/blob'");
    return await timed(seconds, async () => {
      await db.query(sql, [], { blob: new Blob([copyText(template)]) });
    });
  } finally {
    await db.close();
  }
}
