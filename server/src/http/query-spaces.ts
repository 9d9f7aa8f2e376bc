// Query values as form encoders write them: HTML forms and URLSearchParams send a space as `+`
// (`?event_name=add+to+cart`). The query parser reads `+` as a space already, but the request
// validator refuses a bare `+` as a reserved character (400 "must be url encoded"), so the same
// value would be taken or refused depending on how the client encoded it. Spelling `+` as `%20` in
// the query before anything reads it makes both agree: `+` is a space, `%2B` a plus sign (the
// contract's introduction says so). Paths are left alone: there `+` is a plus sign.
import type { NextFunction, Request, Response } from 'express';

const spaced = (url: string): string => {
  const query = url.indexOf('?');
  if (query < 0 || url.indexOf('+', query) < 0) return url;
  return url.slice(0, query + 1) + url.slice(query + 1).replace(/\+/g, '%20');
};

export function formEncodedSpaces(req: Request, _res: Response, next: NextFunction): void {
  req.url = spaced(req.url);
  req.originalUrl = spaced(req.originalUrl);
  next();
}
