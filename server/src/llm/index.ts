// The language-model interface. One implementation talks to any OpenAI-compatible endpoint
// (openai.ts); when none is configured, callers fall back to their built-in deterministic engines
// (the natural-language query engine, the push message composer).
import type { Config } from '../config.js';
import { OpenAiLlm } from './openai.js';

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

/** The configured model, or null when no LLM_BASE_URL / LLM_API_KEY is set. */
export function createLlm(config: Config): Llm | null {
  if (!config.llm.baseUrl && !config.llm.apiKey) return null;
  return new OpenAiLlm({
    baseUrl: config.llm.baseUrl,
    apiKey: config.llm.apiKey ?? 'not-needed',
    model: config.llm.model,
  });
}
