/**
 * First-start bootstrap: when the database has no organization yet, create one with a secret key
 * holding every non-reserved scope, so a newcomer can call the API at once (README "Quick start": two commands).
 */
import type { Db } from './db';
import { createOrganization, listOrganizations } from './db/repositories/organizations';
import { createSecretKey } from './db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from './domain/scopes';

/** @returns the new organization id and key, or undefined when organizations already exist */
export async function bootstrapIfEmpty(db: Db, brand: string): Promise<{ orgId: string; key: string } | undefined> {
  return db.transaction(async (trx) => {
    // One bootstrap even if two processes start at once.
    await trx.raw('SELECT pg_advisory_xact_lock(727001)');
    if ((await listOrganizations(trx)).length > 0) return undefined;
    const org = await createOrganization(trx, 'Bootstrap organization');
    const { key } = await createSecretKey(trx, org.id, { brand, scopes: NON_RESERVED_SCOPES, name: 'bootstrap' });
    return { orgId: org.id, key };
  });
}
