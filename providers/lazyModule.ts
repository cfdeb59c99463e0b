/**
 * Provider SDKs loaded on their first use rather than when their adapter's module loads. The official Telnyx,
 * Stripe and OpenAI SDKs take 0.2–0.6 s each to load (`require`, measured on the 2-core VM), which every process —
 * API, worker, CLI — paid at start even on the sandbox adapters, which never call them.
 */

/** A module loaded once, on the first call; {@link LazyModule.loaded} peeks without loading. */
export interface LazyModule<T> {
  /** The module, loaded now if it was not. */
  (): T;
  /**
   * The module if anything in the process loaded it already (this holder, or another importer such as a test that
   * builds its own client), else undefined: a value can only be an instance of the SDK's classes (its error types)
   * once the SDK is loaded, so `instanceof` checks need not load it.
   */
  loaded(): T | undefined;
}

/**
 * @param load `() => require('<package>') as typeof import('<package>')` (a literal `require`, so the dependency check
 *   still sees the package)
 * @param packageName the same package, to tell whether the process loaded it already (Node's `require.cache`)
 */
export function lazyModule<T>(load: () => T, packageName: string): LazyModule<T> {
  let value: T | undefined;
  const get = (() => (value ??= load())) as LazyModule<T>;
  get.loaded = () => value ?? (require.cache[require.resolve(packageName)] ? (value = load()) : undefined);
  return get;
}
