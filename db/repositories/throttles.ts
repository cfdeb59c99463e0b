/**
 * Counters of the credential-guessing throttle (domain/throttle.ts; OWASP ASVS 4.0 V2.2.1): one row per
 * opaque key (`acct:…`, `acct-addr:…`, `addr:…`, `client:…`, `client-addr:…`, each a SHA-256, so no
 * e-mail or address is stored). Keys belong to no organization — they are counted before anyone is
 * authenticated, also for e-mails that match no member — so, like `findMemberByEmail`, these functions
 * take no organization id.
 */
import type { Db } from '../index';
import { backoffSeconds, type ThrottleKey } from '../../domain/throttle';

/** The outcome of {@link reserveAttempt}: counted, or refused until a key reopens. */
export type Reservation = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * Counts one attempt against every key, before the credential is checked, atomically: the keys' rows are
 * locked (in key order, so concurrent attempts cannot deadlock) and either every key is open and each
 * count moves by one — closing a key whose count reaches its policy's `free` for the back-off — or one is
 * closed and nothing moves. So N parallel attempts evaluate at most `free` credentials, and a refused
 * attempt never lengthens anyone's back-off.
 * @returns `ok`, or the seconds until every closed key reopens (≥ 1)
 */
export async function reserveAttempt(db: Db, keys: ThrottleKey[]): Promise<Reservation> {
  const sorted = [...keys].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    await t('sign_in_throttles').insert(sorted.map((k) => ({ key: k.key }))).onConflict('key').ignore();
    const rows: Array<{ key: string; attempts: number; blocked_until: Date | null; updated_at: Date }> = await t('sign_in_throttles')
      .whereIn('key', sorted.map((k) => k.key))
      .orderBy('key')
      .forUpdate()
      .select('key', 'attempts', 'blocked_until', 'updated_at');
    // The clock once the locks are held (now() is the transaction's start, before any wait for them).
    const now = ((await t.raw('SELECT clock_timestamp() AS now')).rows[0].now as Date).getTime();
    const closedFor = Math.max(0, ...rows.map((r) => (r.blocked_until ? r.blocked_until.getTime() - now : 0)));
    if (closedFor > 0) return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(closedFor / 1000)) };
    const byKey = new Map(rows.map((r) => [r.key, r]));
    const values = sorted.map((k) => {
      const r = byKey.get(k.key)!;
      const idle = now - r.updated_at.getTime() > k.policy.forgetSeconds * 1000;
      const attempts = (idle ? 0 : r.attempts) + 1;
      return { key: k.key, attempts, closeSeconds: backoffSeconds(k.policy, attempts) };
    });
    await t.raw(
      `UPDATE sign_in_throttles s
          SET attempts = v.attempts,
              blocked_until = CASE WHEN v.close > 0 THEN to_timestamp(?::float8 / 1000) + make_interval(secs => v.close) END,
              updated_at = to_timestamp(?::float8 / 1000)
         FROM (VALUES ${values.map(() => '(?::text, ?::int, ?::float8)').join(', ')}) AS v(key, attempts, close)
        WHERE s.key = v.key`,
      [now, now, ...values.flatMap((v) => [v.key, v.attempts, v.closeSeconds])],
    );
    return { ok: true };
  });
}

/**
 * Settles a successful attempt: keys marked `reset` start again from zero and reopen; keys marked `refund`
 * give back this attempt's point (reopening when it falls under `free`). A failed attempt needs no call:
 * {@link reserveAttempt} already counted it.
 */
export async function settleSuccess(db: Db, keys: ThrottleKey[]): Promise<void> {
  const reset = keys.filter((k) => k.onSuccess === 'reset').map((k) => k.key);
  const refund = keys.filter((k) => k.onSuccess === 'refund');
  if (reset.length) await db('sign_in_throttles').whereIn('key', reset).update({ attempts: 0, blocked_until: null });
  for (const k of refund) {
    await db('sign_in_throttles')
      .where({ key: k.key })
      .update({
        attempts: db.raw('greatest(attempts - 1, 0)'),
        blocked_until: db.raw('CASE WHEN attempts - 1 < ? THEN NULL ELSE blocked_until END', [k.policy.free]),
      });
  }
}

/** Deletes keys with no attempt for `idleSeconds` (housekeeping). @returns how many rows it deleted */
export async function purgeIdleThrottles(db: Db, idleSeconds: number): Promise<number> {
  return db('sign_in_throttles')
    .where('updated_at', '<', db.raw('now() - make_interval(secs => ?)', [idleSeconds]))
    .where((q) => q.whereNull('blocked_until').orWhere('blocked_until', '<', db.fn.now()))
    .delete();
}
