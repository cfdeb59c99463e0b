/**
 * The official `twilio` SDK client as the Twilio adapter uses it (docs/going-live.md "Twilio"):
 * `TWILIO_ACCOUNT_SID` + `TWILIO_AUTH_TOKEN` (HTTP Basic), and `TWILIO_BASE_URL` (unset = Twilio's own
 * `https://{product}.twilio.com` hosts; tests point it at a loopback stub: the request's host is
 * replaced, its path kept). No SDK retries (`autoRetry` off): 429s are waited out by `withRateLimit`
 * with the `Retry-After` Twilio sent, which this client keeps on the error it throws.
 */
import twilio from 'twilio';
import RequestClient from 'twilio/lib/base/RequestClient';
import { requiredEnv, type RateLimitProbe } from './live';

/** Provider name of the Twilio adapter (also the `{provider}` segment of its webhook path). */
export const TWILIO_PROVIDER = 'twilio';

/** A 429 answer, with the `Retry-After` it carried. */
export class TwilioRateLimited extends Error {
  readonly status = 429;
  constructor(readonly retryAfter: string | null, body: unknown) {
    super(`Twilio rate limit (429): ${JSON.stringify(body)}`);
    this.name = 'TwilioRateLimited';
  }
}

/** The SDK's HTTP client, redirected to `baseUrl` when set, turning a 429 into TwilioRateLimited. */
class ConfiguredRequestClient extends RequestClient {
  constructor(private readonly baseUrl: string | undefined) {
    super({ autoRetry: false, timeout: 30_000 });
  }

  override async request<TData>(opts: RequestClient.RequestOptions<TData>) {
    const uri = this.baseUrl ? opts.uri.replace(/^https:\/\/[^/]+/, this.baseUrl.replace(/\/+$/, '')) : opts.uri;
    const res = await super.request({ ...opts, uri });
    if (res.statusCode === 429) throw new TwilioRateLimited(res.headers?.['retry-after'] ?? null, res.body);
    return res;
  }
}

/** The Twilio account settings. @throws Error naming the variable when unset */
export function twilioSettings(): { accountSid: string; authToken: string; baseUrl: string | undefined } {
  return {
    accountSid: requiredEnv('TWILIO_ACCOUNT_SID', 'the Twilio adapter'),
    authToken: requiredEnv('TWILIO_AUTH_TOKEN', 'the Twilio adapter'),
    baseUrl: process.env.TWILIO_BASE_URL || undefined,
  };
}

/** A Twilio SDK client from the environment. */
export function twilioClient(): twilio.Twilio {
  const s = twilioSettings();
  return twilio(s.accountSid, s.authToken, { httpClient: new ConfiguredRequestClient(s.baseUrl) });
}

/** 429 and its `Retry-After` from a Twilio call. */
export const twilioRateLimit: RateLimitProbe = (err) => (err instanceof TwilioRateLimited ? { rateLimited: true, retryAfter: err.retryAfter } : { rateLimited: false, retryAfter: null });

/** Twilio's error code of a RestException (e.g. 21422 "number not available"), else undefined. */
export function twilioErrorCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * Checks the credentials once (worker start-up): `GET /2010-04-01/Accounts/{sid}.json`.
 * @throws Error with one line naming the variables when Twilio refuses them
 */
export async function checkTwilioCredentials(client: twilio.Twilio = twilioClient()): Promise<void> {
  const sid = twilioSettings().accountSid;
  try {
    await client.api.v2010.accounts(sid).fetch();
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 401 || status === 403 || status === 404) throw new Error(`TWILIO_ACCOUNT_SID/TWILIO_AUTH_TOKEN are refused by Twilio (${status}); set the account's SID and auth token`);
    throw new Error(`Twilio credentials could not be checked: ${err instanceof Error ? err.message : String(err)}`);
  }
}
