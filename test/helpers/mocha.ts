/**
 * Mocha fixtures shared by the suites: a resource started for one `describe` block.
 */

/**
 * Starts a resource in a mocha `before` hook of the enclosing `describe` (registered where this is
 * called) and stops it in an `after` hook. `opts.timeoutMs` is the `before` hook's timeout in ms
 * (default: the suite's).
 * @returns a stand-in whose property reads reach the started resource;
 * reading one before the `before` hook ran throws an Error naming `what`.
 */
export function useResource<T extends object>(what: string, start: () => Promise<T>, stop: (resource: T) => Promise<void> | void, opts: { timeoutMs?: number } = {}): T {
  let resource: T | undefined;
  before(async function () {
    if (opts.timeoutMs !== undefined) this.timeout(opts.timeoutMs);
    resource = await start();
  });
  after(async () => {
    if (resource) await stop(resource);
  });
  return new Proxy({} as T, {
    get(_target, prop) {
      if (!resource) throw new Error(`${what} used before its before() hook ran`);
      // Not bound: a method called through the stand-in reads `this.x` through it, and a function-valued
      // property (a Knex instance) keeps its own properties.
      return Reflect.get(resource, prop, resource);
    },
    // A property set through the stand-in (a stub's switch) is the resource's own.
    set(_target, prop, value) {
      if (!resource) throw new Error(`${what} used before its before() hook ran`);
      return Reflect.set(resource, prop, value, resource);
    },
  });
}

/**
 * Sets environment variables (computed when the enclosing `describe` starts) in a `before` hook and restores
 * the previous values, unset ones included, in an `after` hook.
 */
export function useEnvVars(vars: () => Record<string, string>): void {
  const saved: Record<string, string | undefined> = {};
  before(() => {
    for (const [k, v] of Object.entries(vars())) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}
