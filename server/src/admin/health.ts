// What the load balancer asks: is the database reachable, and are its migrations all applied.
import type { Database } from '../storage/db.js';
import { readiness } from '../storage/maintenance.js';

export async function databaseReadiness(database: Database): Promise<'ready' | 'migrating' | 'unavailable'> {
  try {
    return await readiness(database.knex);
  } catch {
    return 'unavailable';
  }
}
