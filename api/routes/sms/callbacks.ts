/**
 * Provider callbacks (spec "SMS"; docs/sms.md "10DLC review, submission and carrier callbacks"): the one
 * endpoint carriers call, keyless and signed.
 */
import type { Handler } from '../../context';
import { processProviderCallback } from '../../sms/callbacks';
import { SIGNATURE_HEADER } from '../../../domain/sms/callbackSignature';
import { processRealProviderWebhook, REAL_WEBHOOK_PROVIDERS } from '../../sms/providerWebhooks';
import { Readable } from 'node:stream';
import { TWILIO_PROVIDER } from '../../../providers/telephony/twilioClient';

/** TwiML that does nothing (Twilio's answer to a webhook that needs none). */
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

/**
 * POST /sms/provider-callbacks/{provider} (receiveSMSProviderCallback, no API key): see
 * api/sms/callbacks.ts (signature, storage, signals and keyword replies). Verifies the HMAC over the raw body (`ctx.request.rawBody`, set by koa-body's
 * `includeUnparsed`); without it, over the canonical re-serialization of the parsed JSON. `telnyx` and
 * `twilio` take the providers' own signed webhooks instead (api/sms/providerWebhooks.ts; Twilio's are
 * form-encoded and answered with empty TwiML).
 */
export const receiveSMSProviderCallback: Handler = async (ctx, deps) => {
  const req = ctx.request as unknown as { rawBody?: string; body?: unknown };
  // The route is declared with auth 'none', so api/app.ts keeps the exact bytes the provider signed.
  const raw = typeof req.rawBody === 'string' ? req.rawBody : '';
  if (REAL_WEBHOOK_PROVIDERS.has(ctx.params.provider)) {
    const query = Object.fromEntries(Object.entries(ctx.query).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]));
    const result = await processRealProviderWebhook(deps, ctx.params.provider, { raw, headers: ctx.headers, originalUrl: ctx.originalUrl, query });
    // Twilio reads a messaging webhook's answer as TwiML (an empty <Response/>: nothing to send back; keyword
    // replies go out through the API as every outbound text does) and warns (12300) about any other type.
    if (ctx.params.provider === TWILIO_PROVIDER) return { stream: { body: Readable.from([EMPTY_TWIML]), contentType: 'text/xml; charset=utf-8' } };
    return { data: result };
  }
  const result = await processProviderCallback(deps, ctx.params.provider, raw, ctx.get(SIGNATURE_HEADER) || undefined);
  return { data: result };
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  receiveSMSProviderCallback: { responseSchema: 'SmsProviderCallbackResult' },
};
