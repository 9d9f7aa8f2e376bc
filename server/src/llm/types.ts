// What the language model offers its callers, apart from any implementation: the requests, the
// interface and its error. index.ts picks the implementation; openai.ts is one.

export interface TextRequest {
  /** Instructions for the model. */
  system: string;
  /** The user's prompt. */
  prompt: string;
  /** Upper bound the caller will enforce on the answer, given to the model as guidance. */
  maxCharacters?: number;
}

export interface JsonRequest extends TextRequest {
  /** Name of the JSON schema (letters, digits, underscores). */
  schemaName: string;
  /** A JSON schema the answer must follow (OpenAI structured outputs, strict mode). */
  schema: Record<string, unknown>;
}

export interface Llm {
  /** Plain text. */
  text(request: TextRequest): Promise<string>;
  /** A JSON value following `schema`. */
  json<T>(request: JsonRequest): Promise<T>;
}

export class LlmError extends Error {}
