// The engine's built-in English: words that carry no meaning of their own in a question (fillers),
// synonyms that map everyday words onto an app's own events and properties, and the names of
// countries. Everything app-specific comes from the lexicon (lexicon.ts); these lists only say
// how people refer to common things.

/** Words ignored when nothing else claims them ("could you show me the ..."). */
export const FILLERS = new Set(
  (
    'a an the of for to in on at by from with about around into within across along is are was were be been being am ' +
    'do does did done doing have has having had will would could can should shall may might must please pls plz kindly ' +
    'me my i we our ours us you your they them their it its this that these those there here what whats which who whom how hows ' +
    'when where just only also even still so very really quite show shows showing give get got getting gotten tell ' +
    'list display find know want need like wonder wondering let hey hi hello ok okay thanks thank um uh quick ' +
    'question some any all every each overall altogether currently data info information stats statistics report make ' +
    'made making happen happened occur occurred take took place placed record recorded track tracked ' +
    'generate generated come comes coming came bring brings brought as out up app apps site website thing things stuff something ' +
    'anything everything one ones yet already then ever approximately roughly whole entire well say ask compute ' +
    'calculate result results figure figures altogether among amongst use uses using used'
  ).split(/\s+/),
);

/** Words that may be left out of multiword names: "added (something) to (their) cart". */
export const SKIPPABLE = new Set([
  'the',
  'a',
  'an',
  'their',
  'his',
  'her',
  'my',
  'our',
  'your',
  'its',
  'some',
  'something',
  'anything',
  'item',
  'items',
  'product',
  'products',
  'things',
  'stuff',
  'them',
  'it',
]);

/** Groups of words that mean the same action; an app event whose name holds one answers to all. */
export const EVENT_SYNONYMS: readonly string[][] = [
  ['purchase', 'buy', 'order', 'transaction', 'sale', 'pay', 'payment', 'sell', 'checkout'],
  ['view', 'look', 'browse'],
  ['session', 'visit', 'open', 'launch'],
  ['signup', 'register', 'registration', 'join'],
  ['cart', 'basket', 'trolley'],
  ['add', 'put'],
  ['login', 'signin'],
  ['click', 'tap'],
  ['search'],
  ['install', 'download'],
  ['subscribe', 'subscription'],
];

/** Nouns for the users who did an action: "buyers" are the users who did a purchase event. */
export const AGENTS: Record<string, string> = {
  buyer: 'purchase',
  purchaser: 'purchase',
  payer: 'purchase',
  viewer: 'view',
  registrant: 'signup',
  subscriber: 'subscribe',
  searcher: 'search',
  installer: 'install',
};

/** Words naming an event of the app only as part of a longer name (never alone). */
export const GENERIC_NAME_WORDS = new Set([
  'start',
  'started',
  'end',
  'ended',
  'event',
  'item',
  'page',
  'app',
  'screen',
  'user',
  'to',
  'the',
  'of',
  'on',
  'in',
  'completed',
  'complete',
  'success',
  'button',
  'new',
  'id',
  'type',
]);

/** How people name common property keys (used only when the app has such a key). */
export const KEY_SYNONYMS: Record<string, string[]> = {
  country: ['country', 'nation', 'geo', 'location'],
  category: ['category', 'section', 'department'],
  platform: ['platform', 'os', 'operating system'],
  plan: ['plan', 'tier', 'subscription', 'pricing plan', 'subscription plan'],
  item_id: ['item', 'product', 'sku', 'article', 'item id', 'product id'],
  product_id: ['product', 'item', 'sku', 'product id'],
  currency: ['currency'],
  city: ['city', 'town'],
  language: ['language', 'locale'],
  source: ['source', 'channel'],
};

/** Words meaning money; they select the app's revenue property. */
export const MONEY_WORDS = new Set([
  'revenue',
  'revenues',
  'income',
  'earnings',
  'money',
  'gmv',
  'turnover',
  'spend',
  'spending',
  'spent',
  'spends',
  'earn',
  'earned',
  'sales',
  'dollars',
  'dollar',
  'usd',
  'bucks',
  'euros',
  'euro',
  // abbreviations
  'rev',
  'revs',
]);

/** Property names that hold money, in order of preference (DESIGN §6: revenue, else amount). */
export const MONEY_KEYS = ['revenue', 'amount', 'price', 'value', 'total'];

/** Values people write for a group of values: "mobile" is iOS or Android. */
export const VALUE_SYNONYMS: Record<string, string[]> = {
  ios: ['iphone', 'ipad', 'apple'],
  android: [],
  web: ['website'],
};
export const VALUE_GROUPS: Record<string, string[]> = {
  mobile: ['ios', 'android'],
};

/** ISO 3166 codes with the names and adjectives people use for them. */
export const COUNTRIES: Record<string, string[]> = {
  US: ['united states', 'usa', 'u.s.', 'america', 'the states', 'american', 'americans', 'the us'],
  GB: ['united kingdom', 'uk', 'britain', 'great britain', 'england', 'british', 'the uk'],
  FR: ['france', 'french'],
  DE: ['germany', 'german', 'germans', 'deutschland'],
  BR: ['brazil', 'brasil', 'brazilian', 'brazilians'],
  IN: ['india', 'indian', 'indians'],
  JP: ['japan', 'japanese'],
  ES: ['spain', 'spanish'],
  IT: ['italy', 'italian', 'italians'],
  CA: ['canada', 'canadian', 'canadians'],
  MX: ['mexico', 'mexican', 'mexicans'],
  AU: ['australia', 'australian', 'australians'],
  NL: ['netherlands', 'holland', 'dutch'],
  BE: ['belgium', 'belgian'],
  CH: ['switzerland', 'swiss'],
  SE: ['sweden', 'swedish'],
  NO: ['norway', 'norwegian'],
  DK: ['denmark', 'danish'],
  FI: ['finland', 'finnish'],
  PL: ['poland', 'polish'],
  PT: ['portugal', 'portuguese'],
  IE: ['ireland', 'irish'],
  AT: ['austria', 'austrian'],
  CN: ['china', 'chinese'],
  KR: ['south korea', 'korea', 'korean'],
  RU: ['russia', 'russian'],
  TR: ['turkey', 'turkish'],
  AR: ['argentina', 'argentinian'],
  CL: ['chile', 'chilean'],
  CO: ['colombia', 'colombian'],
  ZA: ['south africa', 'south african'],
  NG: ['nigeria', 'nigerian'],
  EG: ['egypt', 'egyptian'],
  SG: ['singapore'],
  ID: ['indonesia', 'indonesian'],
  TH: ['thailand', 'thai'],
  VN: ['vietnam', 'vietnamese'],
  PH: ['philippines', 'filipino'],
  NZ: ['new zealand'],
  IL: ['israel', 'israeli'],
  AE: ['united arab emirates', 'uae'],
  SA: ['saudi arabia'],
  UA: ['ukraine', 'ukrainian'],
};
