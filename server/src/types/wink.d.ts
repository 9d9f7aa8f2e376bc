// Types for wink-lemmatizer and the word list of wink-lexicon (neither ships its own).
declare module 'wink-lemmatizer' {
  const lemmatizer: {
    noun(word: string): string;
    verb(word: string): string;
    adjective(word: string): string;
  };
  export default lemmatizer;
}

declare module 'wink-lexicon/src/wn-words.js' {
  /** WordNet base forms, each mapped to its index in the sense table. */
  const words: Record<string, number>;
  export default words;
}
