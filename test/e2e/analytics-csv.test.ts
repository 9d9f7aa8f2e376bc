// CSV output of POST /v1/analytics/query is safe to open in a spreadsheet: text cells (and column
// names) starting with =, +, -, @, tab or carriage return are prefixed with ', so they are shown,
// not run as formulas. Numbers, negative ones included, are written as they are; JSON output is
// never altered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toCsv } from '../../server/src/analytics/query.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

const CELLS = [
  '=HYPERLINK("https://evil.example","x")',
  '+1+1',
  '-2+3',
  '@SUM(A1:A9)',
  '\tindented',
  '\rreturn',
  'plain',
];

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  await tenant.client.eventsTrackBatch({
    body: {
      events: CELLS.map((text, i) => ({
        user_id: 'csv-user',
        event_name: 'csv',
        properties: { i, text, amount: -1.5 * i },
      })),
    },
  });
});
afterAll(() => server?.close());

const SQL = `SELECT properties->>'text' AS "=label", (properties->>'amount')::numeric AS amount, (properties->>'i')::int - 3 AS n
  FROM events WHERE event_name = 'csv' ORDER BY (properties->>'i')::int`;

describe('CSV output', () => {
  it('prefixes formula-like text with a quote and leaves numbers alone', async () => {
    const res = await tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query: SQL, format: 'csv' } });
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(String(res.data)).toBe(
      [
        `'=label,amount,n`,
        `"'=HYPERLINK(""https://evil.example"",""x"")",0,-3`,
        `'+1+1,-1.5,-2`,
        `'-2+3,-3,-1`,
        `'@SUM(A1:A9),-4.5,0`,
        `'\tindented,-6,1`,
        `"'\rreturn",-7.5,2`,
        `plain,-9,3`,
        '',
      ].join('\r\n'),
    );
  });

  it('returns the same rows untouched as JSON', async () => {
    const res = await tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query: SQL } });
    expect(res.response.status).toBe(200);
    expect(res.data?.data.map((r) => r['=label'])).toEqual(CELLS);
  });

  it('treats numeric text (PostgreSQL numeric and bigint values) as numbers, and other text by its first character', () => {
    expect(
      toCsv(['a'], [{ a: '-12.50' }, { a: '+3' }, { a: '-1e5' }, { a: -7 }, { a: '-' }, { a: '- 1' }, { a: 'x=1' }]),
    ).toBe("a\r\n-12.50\r\n+3\r\n-1e5\r\n-7\r\n'-\r\n'- 1\r\nx=1\r\n");
  });
});
