/**
 * A provider look-up's answer, the read side of a write done once (services/effects.ts `performOnce`):
 * the object, proof that it does not exist, or that the provider cannot tell.
 */
export type Lookup<R> = { found: R } | { absent: true } | { cannotTell: string };
