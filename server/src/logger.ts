// Structured JSON logs (pino). One root logger; requests get a child carrying their request id.
import { type Logger, pino } from 'pino';

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'tally' },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-mcp-api-key"]',
        '*.access_token',
        '*.rest_api_key',
        '*.webhook_secret',
      ],
      censor: '[redacted]',
    },
  });
}
