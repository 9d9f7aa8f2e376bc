// The contract as a reader sees it: every operation shows a request example (when it takes a
// body or parameters) and an example for each answer it documents, errors included, and says
// what it does. A new operation or status without its example fails here, not in review.
import { describe, expect, it } from 'vitest';
import { listOperations, loadContract } from '../../server/src/contract.js';

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;
const { doc } = loadContract();
const operations = listOperations(doc).map((o) => ({ ...o, op: doc.paths[o.path]![o.method.toLowerCase()] as Node }));

const hasExample = (media: Node | undefined) =>
  media !== undefined && (media.example !== undefined || Object.keys(media.examples ?? {}).length > 0);

describe('examples everywhere', () => {
  it('the document names a contact', () => {
    expect((doc.info as Node).contact?.name).toBeTruthy();
  });

  it('every operation has a summary and a description', () => {
    const missing = operations.filter(({ op }) => !op.summary || !op.description).map((o) => o.operationId);
    expect(missing).toEqual([]);
  });

  it('every request body has an example', () => {
    const missing = operations
      .filter(({ op }) => op.requestBody && !hasExample(op.requestBody.content?.['application/json']))
      .map((o) => o.operationId);
    expect(missing).toEqual([]);
  });

  it('every documented answer with a body has an example', () => {
    const missing: string[] = [];
    for (const { operationId, op } of operations) {
      for (const [status, response] of Object.entries(op.responses as Node)) {
        const content = (response as Node).content as Node | undefined;
        if (!content) continue; // the click link's 302 has no body
        for (const [type, media] of Object.entries(content)) {
          if (!hasExample(media as Node)) missing.push(`${operationId} ${status} ${type}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
