import DataLoader from 'dataloader';

/**
 * The DataLoaders of one GraphQL operation, created lazily by name. Every loader lives exactly as long
 * as the context it hangs off (one HTTP request, or one WebSocket operation), so batches never leak
 * data between callers. Usage (in a resolver):
 *
 *   ctx.loaders.get('userById', (ids) => users.findByIds(ids).then((rows) => byId(ids, rows)))
 */
export class LoaderRegistry {
  private readonly loaders = new Map<string, DataLoader<unknown, unknown, unknown>>();

  /** `cache: false` (used for subscriptions) still batches within a tick but never serves stale rows. */
  constructor(private readonly cache = true) {}

  get<K, V, C = K>(
    name: string,
    batch: DataLoader.BatchLoadFn<K, V>,
    options: Omit<DataLoader.Options<K, V, C>, 'cache'> = {},
  ): DataLoader<K, V, C> {
    let loader = this.loaders.get(name) as DataLoader<K, V, C> | undefined;
    if (!loader) {
      loader = new DataLoader<K, V, C>(batch, { ...options, cache: this.cache });
      this.loaders.set(name, loader);
    }
    return loader;
  }

  clearAll(): void {
    for (const loader of this.loaders.values()) {
      loader.clearAll();
    }
  }
}

/** Orders `rows` like `keys` (DataLoader's contract); a missing row becomes `undefined`. */
function byKey<K, T>(
  keys: readonly K[],
  rows: readonly T[],
  keyOf: (row: T) => K,
): (T | undefined)[] {
  const map = new Map<K, T>();
  for (const row of rows) {
    map.set(keyOf(row), row);
  }
  return keys.map((k) => map.get(k));
}

export function byId<T extends { id: string }>(
  ids: readonly string[],
  rows: readonly T[],
): (T | undefined)[] {
  return byKey(ids, rows, (r) => r.id);
}
