/**
 * Organizations' customers at the payments provider (docs/going-live.md "Stripe"): one per organization and
 * provider, created on the first top-up. Every query is scoped by organization.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';

/** The organization's customer id at `provider` (Stripe `cus_…`), or undefined before its first top-up. */
export async function getPaymentCustomer(db: Db | Knex.Transaction, orgId: string, provider: string): Promise<string | undefined> {
  const r = await db('payment_customers').where({ org_id: orgId, provider }).first('customer_id');
  return r?.customer_id;
}

/**
 * Stores the organization's customer at `provider` unless one is stored already.
 * @returns the stored customer id (the earlier one when two top-ups raced)
 */
export async function savePaymentCustomer(db: Db, orgId: string, provider: string, customerId: string): Promise<string> {
  await db('payment_customers').insert({ org_id: orgId, provider, customer_id: customerId }).onConflict(['org_id', 'provider']).ignore();
  return (await getPaymentCustomer(db, orgId, provider)) ?? customerId;
}
