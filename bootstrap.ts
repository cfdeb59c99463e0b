/**
 * First-start bootstrap: when the database has no organization yet, create one with a secret key
 * holding every non-reserved scope, so a newcomer can call the API at once (README "Quick start": two commands),
 * and an owner who can sign in at /login to approve OAuth apps (docs/team-and-oauth.md "Team").
 */
import type { Db } from './db';
import { createOrganization, listOrganizations } from './db/repositories/organizations';
import { createSecretKey } from './db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from './domain/scopes';
import { createMember } from './db/repositories/team';
import { randomBase62 } from './db/ids';
import { hashPassword } from './services/team/passwords';

/** Sign-in name of the bootstrap organization's first owner. */
export const BOOTSTRAP_OWNER_EMAIL = 'owner@bootstrap.localhost';

/**
 * @returns the new organization id, key and owner (email and password, shown once: only its argon2id hash
 *   is stored), or undefined when organizations already exist
 */
export async function bootstrapIfEmpty(db: Db, brand: string): Promise<{ orgId: string; key: string; owner: { email: string; password: string } } | undefined> {
  const password = randomBase62(18);
  const passwordHash = await hashPassword(password);
  return db.transaction(async (trx) => {
    // One bootstrap even if two processes start at once.
    await trx.raw('SELECT pg_advisory_xact_lock(727001)');
    if ((await listOrganizations(trx)).length > 0) return undefined;
    const org = await createOrganization(trx, 'Bootstrap organization');
    const { key } = await createSecretKey(trx, org.id, { brand, scopes: NON_RESERVED_SCOPES, name: 'bootstrap' });
    await createMember(trx, org.id, { email: BOOTSTRAP_OWNER_EMAIL, name: 'Owner', role: 'owner', passwordHash });
    return { orgId: org.id, key, owner: { email: BOOTSTRAP_OWNER_EMAIL, password } };
  });
}
