/**
 * Start-up check of the real carriers' settings (docs/going-live.md): the worker asks each configured
 * provider one cheap authenticated read before it polls, so bad credentials stop it with one line
 * naming the variable instead of failing the first customer's registration, purchase, text or call.
 */
import { checkTelnyxCredentials } from './telephony/telnyxClient';
import { checkTwilioCredentials } from './telephony/twilioClient';
import { requiredEnv } from './telephony/live';
import { loadIntegrationSettings } from '../domain/integrations/settings';

/**
 * Checks the providers named by CARRIER_PROVIDER and TELEPHONY_PROVIDER (the sandboxes need nothing), and the
 * integration settings (INTEGRATIONS_LIVE naming google_calendar needs Google's OAuth client; docs/going-live.md).
 * @throws Error with one line naming the missing or refused setting
 */
export async function checkProviderCredentials(): Promise<void> {
  loadIntegrationSettings();
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
