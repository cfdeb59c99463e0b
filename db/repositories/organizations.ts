/** Organizations: the tenant every other row belongs to (spec "Tenancy"). */
import type { Db } from '../index';
import { newId } from '../ids';

/** An organization as stored. */
export interface Organization {
  id: string;
  name: string;
  createdAt: Date;
}

/** Creates an organization. @returns the new row */
export async function createOrganization(db: Db, name: string): Promise<Organization> {
  const [row] = await db('organizations').insert({ id: newId('org'), name }).returning('*');
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

/** Every organization, oldest first (operator CLI only; there is no cross-tenant API). */
export async function listOrganizations(db: Db): Promise<Organization[]> {
  const rows = await db('organizations').select('*').orderBy('created_at', 'asc');
  return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at }));
}

/** One organization by id, or undefined. */
export async function getOrganization(db: Db, orgId: string): Promise<Organization | undefined> {
  const r = await db('organizations').where({ id: orgId }).first();
  return r ? { id: r.id, name: r.name, createdAt: r.created_at } : undefined;
}
