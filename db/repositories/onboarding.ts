/**
 * The proofs behind the setup checklist (`GET /onboarding`; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): for each step, when the organization first did it (null when it has not), read
 * from the resources themselves in one statement.
 */
import type { Db } from '../index';
import { iso } from '../timestamps';
import type { OnboardingStep } from '../../schemas/types/settings';

/** When each checklist step was first done, null when not done. */
export async function onboardingProofs(db: Db, orgId: string): Promise<Record<OnboardingStep['key'], string | null>> {
  const res = await db.raw(
    `SELECT
       (SELECT min(created_at) FROM agents WHERE org_id = :org) AS first_agent,
       (SELECT min(coalesce(ready_at, updated_at)) FROM knowledge_sources WHERE org_id = :org AND status = 'ready') AS knowledge_ready,
       (SELECT min(created_at) FROM agent_versions WHERE org_id = :org) AS first_publish,
       (SELECT min(purchased_at) FROM phone_numbers WHERE org_id = :org AND status = 'purchased') AS number_purchased,
       (SELECT min(coalesce(activated_at, updated_at)) FROM sms_registrations WHERE org_id = :org AND status = 'active') AS sms_registration_active,
       (SELECT min(succeeded_at) FROM webhook_deliveries WHERE org_id = :org AND status = 'succeeded') AS webhook_verified,
       (SELECT min(started_at) FROM conversations WHERE org_id = :org AND simulation = false) AS first_conversation`,
    { org: orgId },
  );
  const r = res.rows[0];
  return {
    first_agent: iso(r.first_agent),
    knowledge_ready: iso(r.knowledge_ready),
    first_publish: iso(r.first_publish),
    number_purchased: iso(r.number_purchased),
    sms_registration_active: iso(r.sms_registration_active),
    webhook_verified: iso(r.webhook_verified),
    first_conversation: iso(r.first_conversation),
  };
}
