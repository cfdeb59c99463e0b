/**
 * Start-up check of the real carriers' settings (docs/going-live.md): the worker asks each configured
 * provider one cheap authenticated read before it polls, so bad credentials stop it with one line
 * naming the variable instead of failing the first customer's registration, purchase, text or call.
 */
import { checkTelnyxCredentials } from './telephony/telnyxClient';
import { checkTwilioCredentials } from './telephony/twilioClient';
import { requiredEnv } from './telephony/live';
import { createPayments } from './payments';
import { loadIntegrationSettings } from '../domain/integrations/settings';

/**
 * Checks the settings of the payments provider (PAYMENTS_PROVIDER; Stripe's keys) and of the integrations
 * (domain/integrations/settings.ts: INTEGRATIONS_LIVE, Google's OAuth client for a live google_calendar, Cal.com's
 * origin, HubSpot's API base, timeout and OAuth app), so a process refuses to start with one line naming the
 * setting instead of failing the first top-up, booking or lookup. Called by `start:api` and by the worker.
 * @throws Error naming the setting
 */
export function checkPaymentsAndIntegrationSettings(): void {
  createPayments();
  loadIntegrationSettings();
}

/**
 * Checks the payments and integration settings ({@link checkPaymentsAndIntegrationSettings}) and the providers named
 * by CARRIER_PROVIDER and TELEPHONY_PROVIDER (the sandboxes need nothing).
 * @throws Error with one line naming the missing or refused setting
 */
export async function checkProviderCredentials(): Promise<void> {
  checkPaymentsAndIntegrationSettings();
  const names = new Set([process.env.CARRIER_PROVIDER || 'sandbox', process.env.TELEPHONY_PROVIDER || 'sandbox']);
  if (names.has('telnyx')) {
    requiredEnv('TELNYX_PUBLIC_KEY', 'verifying Telnyx webhooks');
    if ((process.env.TELEPHONY_PROVIDER || 'sandbox') === 'telnyx') {
      requiredEnv('TELNYX_MESSAGING_PROFILE_ID', 'texts through Telnyx');
      requiredEnv('TELNYX_CONNECTION_ID', 'calls through Telnyx');
    }
    await checkTelnyxCredentials();
  }
  if (names.has('twilio')) await checkTwilioCredentials();
}
