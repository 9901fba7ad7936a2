/**
 * SQL texts built once per shape. A batched statement's text depends on how many values it binds
 * (and on a page window's shape), not on the values: `posts.pageByAuthors` for a page of 20 users
 * is one 4.4 KB text of 20 LIMITed ranges. Built anew on every request, it was concatenated, then
 * flattened and hashed as the SQLite statement cache's key: ~9 µs a request, where the same string
 * kept here is hashed once (V8 keeps a string's hash in the string).
 *
 * A repository holds one (its dialect's placeholders are in the texts); at most `max` shapes are
 * kept, the oldest dropped first.
 */
export class SqlTexts {
  private readonly texts = new Map<string, string>();

  constructor(private readonly max = 200) {}

  /** The text of `shape`, built by `build` the first time. */
  get(shape: string, build: () => string): string {
    let text = this.texts.get(shape);
    if (text === undefined) {
      text = build();
      if (this.texts.size >= this.max) {
        this.texts.delete(this.texts.keys().next().value as string);
      }
      this.texts.set(shape, text);
    }
    return text;
  }
}
