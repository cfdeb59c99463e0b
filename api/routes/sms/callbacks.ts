/**
 * Provider callbacks (spec "SMS"; README "10DLC review, submission and carrier callbacks"): the one
 * endpoint carriers call, keyless and signed.
 */
import type { Handler } from '../../context';
import { processProviderCallback } from '../../sms/callbacks';
import { SIGNATURE_HEADER } from '../../../domain/sms/callbackSignature';
import { processRealProviderWebhook, REAL_WEBHOOK_PROVIDERS } from '../../sms/providerWebhooks';

/**
 * POST /sms/provider-callbacks/{provider} (receiveSMSProviderCallback, no API key): see
 * api/sms/callbacks.ts (signature, storage, signals and keyword replies). Verifies the HMAC over the raw body (`ctx.request.rawBody`, set by koa-body's
 * `includeUnparsed`); without it, over the canonical re-serialization of the parsed JSON. `telnyx` and
 * `twilio` take the providers' own signed webhooks instead (api/sms/providerWebhooks.ts; Twilio's are
 * form-encoded).
 */
export const receiveSMSProviderCallback: Handler = async (ctx, deps) => {
  const req = ctx.request as unknown as { rawBody?: string; body?: unknown };
  // The route is declared with auth 'none', so api/app.ts keeps the exact bytes the provider signed.
  const raw = typeof req.rawBody === 'string' ? req.rawBody : '';
  if (REAL_WEBHOOK_PROVIDERS.has(ctx.params.provider)) {
    const query = Object.fromEntries(Object.entries(ctx.query).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]));
    return { data: await processRealProviderWebhook(deps, ctx.params.provider, { raw, headers: ctx.headers, originalUrl: ctx.originalUrl, query }) };
  }
  const result = await processProviderCallback(deps, ctx.params.provider, raw, ctx.get(SIGNATURE_HEADER) || undefined);
  return { data: result };
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  receiveSMSProviderCallback: { responseSchema: 'SmsProviderCallbackResult' },
};
