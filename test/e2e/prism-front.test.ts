// What the Prism run's front (helpers/prism-front.ts) does besides passing requests on, for two
// faults of Prism 5.14.2, each shown narrow against a stand-in with no validator of its own:
// - a list parameter declared `explode: false` sent repeated (`?events=a&events=b`, which the
//   server reads as one list, as the parameter's description says): Prism reads only the last
//   occurrence, so its finding on that parameter is left out, and every other finding still counts;
// - a JSON body with an object key past U+00FF: Prism quotes body keys in its sl-violations header,
//   Node refuses the header and Prism stops, so the front sends such a request straight to the server.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadContract } from '../../server/src/contract.js';
import { prismDocument, UPSTREAM_HEADER } from '../helpers/prism.js';
import { failures, repeatedLists } from '../helpers/prism-front.js';
import { throughPrism } from '../helpers/prism-stand-in.js';

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;
const { doc } = loadContract();
const exampleOf = (media: Node) => (Object.values(media.examples as Node)[0] as Node).value as Node;
const funnels = (doc.paths['/mcp/analytics/funnels'] as Node).get as Node;
const FUNNEL = exampleOf(funnels.responses['200'].content['application/json']);
const upsert = (doc.paths['/v1/users'] as Node).post as Node;
const USER = exampleOf(upsert.requestBody.content['application/json']);
const USER_ANSWER = exampleOf(upsert.responses['200'].content['application/json']);
const REFUSAL = { success: false, error: 'Bad Request', code: 'INVALID_REQUEST', message: 'not allowed' };

const run = throughPrism();

describe('a repeated explode:false list', () => {
  const get = async (query: string, body: unknown = FUNNEL) => {
    const sent = await run.send(
      {
        method: 'GET',
        url: `/mcp/analytics/funnels?app_id=app-1&${query}`,
        headers: { 'x-mcp-api-key': 'tk_mcp_stand-in' },
      },
      { status: 200, body },
    );
    expect(sent.bypassed).toBe(false);
    return sent.found;
  };

  it('is the funnel steps, the one such parameter of the document', () => {
    expect(repeatedLists('GET', '/mcp/analytics/funnels?events=a&events=b')).toEqual(['events']);
    expect(repeatedLists('GET', '/mcp/analytics/funnels?events=a,b')).toEqual([]);
    expect(repeatedLists('GET', '/mcp/analytics/funnels?app_id=a&app_id=b')).toEqual([]);
    expect(repeatedLists('POST', '/mcp/analytics/funnels?events=a&events=b')).toEqual([]);
    expect(repeatedLists('GET', '/mcp/analytics/retention?events=a&events=b')).toEqual([]);
  });

  it("leaves out Prism's finding on it: Prism judged the last occurrence alone", async () => {
    expect(await get('events=signup&events=purchase')).toEqual([]);
    expect(await get('events=signup,item_view&events=purchase')).toEqual([]);
  });

  it('still reports the same finding on the list sent in its declared form', async () => {
    expect(await get('events=signup')).toEqual([
      expect.stringMatching(/^GET \/mcp\/analytics\/funnels -> 200: request\.query\.events .*fewer than 2/),
    ]);
  });

  it('still reports every other finding on a request that repeats it', async () => {
    expect(await get('events=signup&events=purchase&time_window=0')).toEqual([
      expect.stringMatching(/-> 200: request\.query\.time_window /),
    ]);
    expect(await get('events=signup&events=purchase&app_id=app-2')).toEqual([
      expect.stringMatching(/-> 200: request\.query\.app_id /),
    ]);
    expect(await get('events=signup&events=purchase', { ...FUNNEL, internal_note: 'x' })).toEqual([
      expect.stringMatching(/-> 200: response\.body .*internal_note/),
    ]);
  });
});

describe('a JSON body key past U+00FF', () => {
  const post = (body: unknown, answer: { status: number; body: unknown }) =>
    run.send(
      {
        method: 'POST',
        url: '/v1/users',
        headers: { authorization: 'Bearer tk_live_stand-in', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      },
      answer,
    );

  it('goes straight to the server, anywhere in the body', async () => {
    for (const body of [
      { ...USER, 'prix€': 1 },
      { ...USER, properties: { nested: [{ 日本: 1 }] } },
      { ...USER, 'a\u007f': 1 },
    ]) {
      const sent = await post(body, { status: 400, body: REFUSAL });
      expect(sent).toMatchObject({ status: 400, bypassed: true, found: [] });
    }
  });

  it('and only then: a Latin-1 key goes through Prism, which quotes it', async () => {
    const sent = await post({ ...USER, clé: 1 }, { status: 200, body: USER_ANSWER });
    expect(sent.bypassed).toBe(false);
    expect(sent.found).toEqual([expect.stringMatching(/-> 200: request\.body .*found 'clé'/)]);
  });

  it("is quoted only from requests: the document's own names, patterns and allowed values fit a header", () => {
    const unfit: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (!node || typeof node !== 'object') return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'description' || key === 'examples' || key === 'example' || key === 'summary') continue;
        if (/[\u007f\u0100-\uffff]/.test(JSON.stringify(key))) unfit.push(`${where}/${key}`);
        if (['pattern', 'enum', 'const', 'name'].includes(key) && /[\u007f\u0100-\uffff]/.test(JSON.stringify(value)))
          unfit.push(`${where}/${key}`);
        walk(value, `${where}/${key}`);
      }
    };
    walk(JSON.parse(fs.readFileSync(prismDocument().file, 'utf8')), '#');
    expect(unfit).toEqual([]);
  });
});

describe('Prism 5.14.2 given such a key itself', () => {
  const own = throughPrism();

  it('stops (so the front must keep it away; when this fails, a fixed Prism no longer needs that)', async () => {
    const send = () =>
      fetch(`${own.prismUrl()}/v1/users`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer tk_live_stand-in',
          'content-type': 'application/json',
          [UPSTREAM_HEADER]: own.standInUrl(),
        },
        body: JSON.stringify({ ...USER, 'prix€': 1 }),
      });
    await expect(send()).rejects.toThrow();
    await expect(send()).rejects.toThrow();
  });
});

describe("Prism's cut header with one request finding longer than the cut", () => {
  const cut = `Too many violations! [{"location":["request","body"],"severity":"Error","code":"additionalProperties","message":"Request body must NOT have additional properties; found '${'é'.repeat(5000)}`;
  it('does not fail the run when the server refused the request', () => {
    expect(failures(cut, 400)).toEqual([]);
  });
  it('fails it when the server accepted the request', () => {
    expect(failures(cut, 200)).toEqual([expect.stringMatching(/^unreadable sl-violations header/)]);
  });
  it('fails it when the cut one is an answer finding', () => {
    const answer = cut.replace('["request","body"]', '["response","body"]');
    expect(failures(answer, 400)).toEqual([expect.stringMatching(/^unreadable sl-violations header/)]);
  });
});
