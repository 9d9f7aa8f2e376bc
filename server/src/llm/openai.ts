// OpenAI-compatible chat completions through the `openai` package; structured answers use JSON
// schema response formats.
import OpenAI from 'openai';
import { type JsonRequest, type Llm, LlmError, type TextRequest } from './types.js';

export class OpenAiLlm implements Llm {
  private readonly client: OpenAI;

  constructor(private readonly options: { baseUrl?: string; apiKey: string; model: string; timeoutMs?: number }) {
    this.client = new OpenAI({
      baseURL: options.baseUrl,
      apiKey: options.apiKey,
      timeout: options.timeoutMs ?? 30_000,
      maxRetries: 1,
    });
  }

  private messages(request: TextRequest) {
    const limit = request.maxCharacters ? `\nAnswer in at most ${request.maxCharacters} characters.` : '';
    return [
      { role: 'system' as const, content: request.system + limit },
      { role: 'user' as const, content: request.prompt },
    ];
  }

  async text(request: TextRequest): Promise<string> {
    const completion = await this.client.chat.completions.create({
      model: this.options.model,
      messages: this.messages(request),
    });
    const content = completion.choices[0]?.message?.content;
    if (typeof content !== 'string') throw new LlmError('The language model returned no text.');
    return content.trim();
  }

  async json<T>(request: JsonRequest): Promise<T> {
    const completion = await this.client.chat.completions.create({
      model: this.options.model,
      messages: this.messages(request),
      response_format: {
        type: 'json_schema',
        json_schema: { name: request.schemaName, schema: request.schema, strict: true },
      },
    });
    const content = completion.choices[0]?.message?.content;
    if (typeof content !== 'string') throw new LlmError('The language model returned no answer.');
    try {
      return JSON.parse(content) as T;
    } catch {
      throw new LlmError('The language model did not answer with valid JSON.');
    }
  }
}
