// The language-model interface. One implementation talks to any OpenAI-compatible endpoint
// (openai.ts); when none is configured, callers fall back to their built-in deterministic engines
// (the natural-language query engine, the push message composer). The composition root (tally.ts)
// calls createLlm once.
import type { Config } from '../config.js';
import { OpenAiLlm } from './openai.js';
import type { Llm } from './types.js';

export { type JsonRequest, type Llm, LlmError, type TextRequest } from './types.js';

/** The configured model, or null when no LLM_BASE_URL / LLM_API_KEY is set. */
export function createLlm(config: Config): Llm | null {
  if (!config.llm.baseUrl && !config.llm.apiKey) return null;
  return new OpenAiLlm({
    baseUrl: config.llm.baseUrl,
    apiKey: config.llm.apiKey ?? 'not-needed',
    model: config.llm.model,
  });
}
