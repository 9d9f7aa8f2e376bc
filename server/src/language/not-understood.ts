// The engine's one refusal: a question or criteria text it could not read, with the words it
// could not place (the service turns it into a clear answer for the user).
/**
 * The text could not be read; `unknown` names the words that could not be placed, and
 * `rephrasings` may offer texts to try instead (kept only if the engine answers them).
 */
export class NotUnderstood extends Error {
  constructor(
    message: string,
    readonly unknown: string[] = [],
    readonly rephrasings: string[] = [],
  ) {
    super(message);
  }
}
