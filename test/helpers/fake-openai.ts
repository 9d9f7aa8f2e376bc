// A local HTTP server that speaks OpenAI's chat completions API (POST /v1/chat/completions), so
// the OpenAI adapter is tested over real HTTP. `respond` decides each answer's message content (a
// promise holds the answer until it settles).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string }[];
  response_format?: { type: string; json_schema?: { name: string; schema: unknown; strict?: boolean } };
  headers: http.IncomingHttpHeaders;
}

export interface FakeOpenAi {
  /** Base URL to give LLM_BASE_URL (ends with /v1). */
  baseUrl: string;
  requests: ChatRequest[];
  close(): Promise<void>;
}

export async function startFakeOpenAi(
  respond: (
    req: ChatRequest,
  ) => string | { status: number; body: unknown } | Promise<string | { status: number; body: unknown }>,
): Promise<FakeOpenAi> {
  const requests: ChatRequest[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', async () => {
      res.setHeader('content-type', 'application/json');
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.statusCode = 404;
        res.end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
        return;
      }
      const body = JSON.parse(raw);
      const chat: ChatRequest = { ...body, headers: req.headers };
      requests.push(chat);
      const answer = await respond(chat);
      if (typeof answer !== 'string') {
        res.statusCode = answer.status;
        res.end(JSON.stringify(answer.body));
        return;
      }
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            { index: 0, message: { role: 'assistant', content: answer, refusal: null }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
