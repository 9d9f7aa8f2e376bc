// Where a running server can be reached, recorded for the `tally` command on the same machine:
// `<DATA_DIR>/server.json` (readable only by its owner, beside credentials.json) holds the address
// the server actually listens on and its process id. The CLI uses it when it is told no address,
// so a server started with another PORT is found without --url.
import fs from 'node:fs';
import path from 'node:path';
import { processIsAlive } from '../storage/lock.js';

const FILE = 'server.json';

interface Recorded {
  url: string;
  pid: number;
  started_at: string;
}

/** Records `url` for this process; the returned function removes the record if it is still ours. */
export function recordServerAddress(dataDir: string, url: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, FILE);
  const record: Recorded = { url, pid: process.pid, started_at: new Date().toISOString() };
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return () => {
    if (readRecord(file)?.pid === process.pid) fs.rmSync(file, { force: true });
  };
}

/** The address a live server recorded in `dataDir`, or null (none, unreadable, or its process is gone). */
export function recordedServerAddress(dataDir: string): string | null {
  const record = readRecord(path.join(dataDir, FILE));
  if (!record || !processIsAlive(record.pid)) return null;
  return record.url;
}

function readRecord(file: string): Recorded | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Recorded>;
    if (typeof parsed.url !== 'string' || !Number.isInteger(parsed.pid)) return null;
    return parsed as Recorded;
  } catch {
    return null;
  }
}
