// The body validators of the two ingestion operations for the lean listener (ingest-listener.ts),
// compiled once at start from the contract by express-openapi-validator's own pieces: its spec
// loader and schema preprocessor, its ajv factory with the options the Express app gives it
// (validator-options.ts), the body schema it builds for `application/json`, and its mapping of
// ajv's errors. A body is therefore refused with exactly the errors the Express app gives.
import { createRequestAjv } from 'express-openapi-validator/dist/framework/ajv/index.js';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import { BodySchemaParser } from 'express-openapi-validator/dist/middlewares/parsers/body.parse.js';
import { SchemaPreprocessor } from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import {
  ajvErrorsToValidatorError,
  augmentAjvErrors,
  ContentType,
} from 'express-openapi-validator/dist/middlewares/util.js';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';
import type { OpenApiDocument } from '../contract.js';
import type { OperationId } from './operations.js';
import { requestValidation, validatorFormats } from './validator-options.js';

/** The operations the lean listener serves, by path (all POST). */
export const INGEST_PATHS = { '/v1/events': 'Events_track', '/v1/events/batch': 'Events_trackBatch' } as const;

/** What the validator throws for a refused body: toAppError (errors.ts) turns it into the envelope. */
export interface BodyRefusal {
  status: 400;
  errors: { path: string; message: string; errorCode?: string }[];
}

export interface IngestOperation {
  readonly operationId: OperationId;
  /** The contract path, e.g. `/v1/events`. */
  readonly path: string;
  /** The operation's OpenAPI object (what `req.openapi.schema` holds in the Express app). */
  readonly schema: { operationId: string; summary?: string };
  /** Checks a parsed JSON body (which ajv may fill with defaults); the refusal, or null. */
  validate(body: unknown, headers: Record<string, unknown>): BodyRefusal | null;
}

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects as the validator's pieces handle them.
type Loose = any;

/** Compiles the validators; fails at start if the contract gives these operations parameters. */
export async function compileIngestValidators(doc: OpenApiDocument): Promise<Map<string, IngestOperation>> {
  const options = new OpenApiValidator({
    apiSpec: doc as never,
    validateRequests: requestValidation(),
    formats: validatorFormats(),
    validateResponses: false,
    validateSecurity: false,
  }).ajvOpts;
  const spec = await new OpenApiSpecLoader({
    apiDoc: structuredClone(doc) as never,
    validateApiSpec: false,
    $refParser: { mode: 'bundle' },
  }).load();
  const apiDoc = spec.apiDoc as Loose;
  new SchemaPreprocessor(apiDoc, options.preprocessor, undefined as never).preProcess();
  const ajv = createRequestAjv(apiDoc, options.request as never);
  const json = ContentType.fromString('application/json');
  const operations = new Map<string, IngestOperation>();
  for (const [path, operationId] of Object.entries(INGEST_PATHS)) {
    const schema = apiDoc.paths?.[path]?.post;
    if (schema?.operationId !== operationId || (schema.parameters ?? []).length > 0) {
      throw new Error(`The lean ingestion path expects ${operationId} at POST ${path} without parameters.`);
    }
    // As express-openapi-validator's Validator builds the body schema of a request.
    const body = new BodySchemaParser().parse(path, schema, json) as Loose;
    const check = ajv.compile({
      paths: apiDoc.paths,
      components: apiDoc.components,
      properties: { query: {}, headers: {}, params: {}, cookies: {}, body },
      ...(body.required ? { required: ['body'] } : {}),
    });
    operations.set(path, {
      operationId,
      path,
      schema,
      validate(value, headers) {
        if (check({ query: {}, headers, params: {}, cookies: undefined, body: value })) return null;
        const errors = augmentAjvErrors([...(check.errors ?? [])]);
        return ajvErrorsToValidatorError(400, errors) as BodyRefusal;
      },
    });
  }
  return operations;
}
