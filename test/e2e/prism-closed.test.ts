// The Prism run (helpers/prism.ts) catches what a handler must never do: answer a field the
// document does not declare, or accept a body field it does not declare. A small stand-in server
// answers POST /v1/users (the contract's Users_upsert) as the test tells it to, with no validator of
// its own, behind the same front, Prism and dispatcher as the test servers of a Prism run; so what
// is reported here is Prism's finding alone. Prism 5 ignores `unevaluatedProperties`, the form the
// committed document closes objects with: the same answers through Prism reading the committed
// document pass unnoticed, which is why a Prism run gives it a copy closed with
// `additionalProperties: false` (helpers/closed-contract.ts).
import { describe, expect, it } from 'vitest';
import { CONTRACT_PATH, loadContract } from '../../server/src/contract.js';
import { prismDocument } from '../helpers/prism.js';
import { throughPrism } from '../helpers/prism-stand-in.js';

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;
const upsert = (loadContract().doc.paths['/v1/users'] as Node).post as Node;
const exampleOf = (media: Node) => (Object.values(media.examples as Node)[0] as Node).value as Node;
const REQUEST = exampleOf(upsert.requestBody.content['application/json']);
const ANSWER = exampleOf(upsert.responses['200'].content['application/json']);

/** POST /v1/users through a Prism run on `document`: what the front reported. */
function through(document?: string) {
  const run = throughPrism(document);
  return async (answer: { status: number; body: unknown }, body: unknown = REQUEST) => {
    const sent = await run.send(
      {
        method: 'POST',
        url: '/v1/users',
        headers: { authorization: 'Bearer tk_live_stand-in', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      },
      answer,
    );
    // Prism passes the answer on as the stand-in gave it (`--errors false`); it only reports.
    expect(sent.status).toBe(answer.status);
    expect(sent.body).toEqual(answer.body);
    expect(sent.bypassed).toBe(false);
    return sent.found;
  };
}

describe('Prism reading the document closed in the form it enforces', () => {
  const send = through();

  it('closes every object schema of the document, leaving none open', () => {
    const { closed, leftOpen } = prismDocument();
    expect(closed).toBeGreaterThan(100);
    expect(leftOpen).toBe(0);
  });

  it("passes the operation's own example", async () => {
    expect(await send({ status: 200, body: ANSWER })).toEqual([]);
  });

  it('reports an answer with a field the document does not declare', async () => {
    const found = await send({ status: 200, body: { ...ANSWER, internal_note: 'not for clients' } });
    console.log(`Prism's finding for an undeclared answer field:\n  ${found.join('\n  ')}`);
    expect(found).toEqual([expect.stringMatching(/^POST \/v1\/users -> 200: response\.body .*internal_note/)]);
  });

  it('reports a request with an undeclared field that the server accepted, not one it refused', async () => {
    const extra = { ...REQUEST, favourite_colour: 'teal' };
    const accepted = await send({ status: 200, body: ANSWER }, extra);
    expect(accepted).toEqual([expect.stringMatching(/^POST \/v1\/users -> 200: request\.body .*favourite_colour/)]);
    const refusal = {
      success: false,
      error: 'Bad Request',
      code: 'INVALID_REQUEST',
      message: 'favourite_colour is not allowed',
    };
    expect(await send({ status: 400, body: refusal }, extra)).toEqual([]);
  });
});

describe('Prism reading the committed document', () => {
  const send = through(CONTRACT_PATH);

  it('lets both through: Prism 5 does not enforce unevaluatedProperties', async () => {
    expect(await send({ status: 200, body: { ...ANSWER, internal_note: 'not for clients' } })).toEqual([]);
    expect(await send({ status: 200, body: ANSWER }, { ...REQUEST, favourite_colour: 'teal' })).toEqual([]);
  });
});
