// Push text from a prompt without a language model, and the length rule every generated text
// obeys. The composer turns an instruction ("remind them gently that items are still in their
// cart") into the notification itself ("Items are still in your cart."): it drops the instruction
// verb and style notes, speaks to the reader in the second person, and fits the limit. Same prompt
// and limit, same text; never empty, never longer than the limit.

const ELLIPSIS = '…';
const FALLBACK = 'You have a new notification.';

/** Characters as the limit counts them: UTF-16 code units, so the bound holds on any measure. */
const size = (s: string) => s.length;

function normalize(text: string): string {
  return text
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^["'“”‘’`]+|["'“”‘’`]+$/g, '')
    .trim();
}

/** Cuts `s` to at most `n` code units without splitting a surrogate pair. */
function hardCut(s: string, n: number): string {
  let out = s.slice(0, Math.max(0, n));
  const last = out.charCodeAt(out.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) out = out.slice(0, -1);
  return out;
}

/**
 * Fits `text` within `max` characters: unchanged when it fits, else cut at the last word boundary
 * with an ellipsis (a hard cut when no boundary is near or the limit is tiny). Empty only when
 * `text` has nothing printable.
 */
export function fitToLimit(text: string, max: number): string {
  const clean = normalize(text);
  const limit = Math.max(1, Math.floor(max));
  if (size(clean) <= limit) return clean;
  if (limit <= 3) return hardCut(clean, limit).trim() || hardCut(clean, limit);
  const room = hardCut(clean, limit - size(ELLIPSIS));
  const boundary = room.lastIndexOf(' ');
  // Keep the word boundary unless it throws away more than half of the room.
  let head = boundary >= room.length / 2 ? room.slice(0, boundary) : room;
  head = head.replace(/[\s,;:.!?\-–—(]+$/u, '');
  if (!head) head = room.trim() || room;
  return head + ELLIPSIS;
}

// Instruction openings: "remind them that", "let the user know", "write a push about", ...
const LEAD_INS: RegExp[] = [
  /^(?:please\s+)?(?:write|create|compose|draft|generate|send|make)\s+(?:them\s+|the\s+users?\s+)?(?:an?\s+|the\s+)?(?:short\s+|brief\s+|quick\s+|friendly\s+|fun\s+|catchy\s+)*(?:push\s+)?(?:notification|message|text|note|push|reminder|alert)s?\s*(?:to\s+(?:them|the\s+users?|users?|customers?)\s*)?(?:(?:about|on|regarding|saying|that says|telling\s+(?:them|the\s+users?))\s+(?:that\s+)?|:\s*)?/i,
  /^(?:please\s+)?(?:gently\s+|kindly\s+)?(?:remind|tell|inform|notify|warn|alert|ask|invite|encourage|nudge|urge|let)\s+(?:them|the\s+users?|users?|the\s+customers?|customers?|him|her|people)\s+(?:gently\s+|kindly\s+|politely\s+)?(?:know\s+)?(?:about\s+|of\s+|that\s+|to\s+)?/i,
  /^(?:please\s+)?(?:announce|mention|say|explain|highlight|promote)\s+(?:to\s+(?:them|the\s+users?)\s+)?(?:that\s+)?/i,
];

// Style notes that describe the text instead of being part of it.
const STYLE_NOTE =
  /^(?:in\s+an?\s+)?(?:(?:very|really|super)\s+)?(?:friendly|casual|formal|playful|warm|urgent|short|brief|concise|fun|gentle|polite|professional|upbeat|excited|enthusiastic|serious|neutral|witty)(?:\s+(?:and|,)\s+\w+)*(?:\s+(?:tone|voice|style|way|manner))?$|^(?:keep it|make it|be)\s+.*$|^(?:use|with|add|include)\s+(?:an?\s+)?emojis?.*$|^(?:no|without)\s+emojis?$|^(?:under|max(?:imum)?|at most|less than)\s+\d+\s+(?:characters|chars|words)$/i;

const SECOND_PERSON: [RegExp, string][] = [
  [/\b(?:the user|the customer)'s\b/gi, 'your'],
  [/\b(?:the user|the customer|they) (?:is|are)\b/gi, 'you are'],
  [/\b(?:the user|the customer|they) (?:has|have)\b/gi, 'you have'],
  [/\b(?:the user|the customer|they) (?:was|were)\b/gi, 'you were'],
  [/\b(?:the user|the customer) (\w+?)s\b/gi, 'you $1'],
  [/\bthey're\b/gi, "you're"],
  [/\bthey've\b/gi, "you've"],
  [/\bthey'll\b/gi, "you'll"],
  [/\bthemselves\b/gi, 'yourself'],
  [/\btheirs\b/gi, 'yours'],
  [/\btheir\b/gi, 'your'],
  [/\bthem\b/gi, 'you'],
  [/\bthey\b/gi, 'you'],
  [/\b(?:the user|the customer)\b/gi, 'you'],
];

function sentenceCase(s: string): string {
  const first = s.codePointAt(0);
  if (first === undefined) return s;
  const ch = String.fromCodePoint(first);
  return ch.toUpperCase() + s.slice(ch.length);
}

/** A notification text written from `prompt`, at most `max` characters, never empty. */
export function composeMessage(prompt: string, max: number): string {
  let text = normalize(prompt);
  // Drop trailing style notes: "..., friendly tone", "...; keep it short".
  const parts = text.split(/\s*[,;]\s*|\s+-\s+|\s*\(\s*|\s*\)\s*/).filter(Boolean);
  while (parts.length > 1 && STYLE_NOTE.test(parts[parts.length - 1]!)) parts.pop();
  text =
    parts.length > 0 ? text.slice(0, text.indexOf(parts[parts.length - 1]!) + parts[parts.length - 1]!.length) : text;
  for (const lead of LEAD_INS) {
    const stripped = text.replace(lead, '');
    if (stripped !== text && stripped.trim()) {
      text = stripped;
      break;
    }
  }
  for (const [pattern, replacement] of SECOND_PERSON) text = text.replace(pattern, replacement);
  text = normalize(text).replace(/[\s,;:\-–—]+$/u, '');
  if (/[\p{L}\p{N}]/u.test(text)) {
    text = sentenceCase(text);
    if (!/[.!?…]$/u.test(text)) text += '.';
  } else {
    text = FALLBACK;
  }
  return fitToLimit(text, max) || fitToLimit(FALLBACK, max);
}

/**
 * The text to send from a model's answer: the answer fitted to the limit, or the composer's text
 * when the answer has nothing printable. Never empty, never longer than `max`.
 */
export function finishGenerated(answer: string, prompt: string, max: number): string {
  return fitToLimit(answer, max) || composeMessage(prompt, max);
}
