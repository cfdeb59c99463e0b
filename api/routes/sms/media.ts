/**
 * Text attachments (spec "SMS", scope rule 2; docs/sms.md "Text attachments"): `GET /sms/media/{id}` answers a
 * signed, short-lived link, and `GET /sms/media/{id}/content` serves the bytes to whoever holds one.
 */
import type { Handler } from '../../context';
import { orgOf } from '../../http';
import { ApiError } from '../../../domain/errors';
import { getMedia, getMediaContentById } from '../../../db/repositories/smsMedia';
import type { SmsMediaLink } from '../../../schemas/types/sms';
import { mediaSignature, mediaUrlTtlSeconds, verifyMediaSignature } from '../../sms/media';

/** The API base path (api/app.ts BASE_PATH; not imported, to keep api/app.ts out of this module's imports). */
const BASE_PATH = '/api/v1';

const mediaNotFound = () => new ApiError(404, 'media_not_found', 'No text attachment with this id exists in this organization');

/** GET /sms/media/{id} (getSMSMedia, sms:read): a signed link valid for MEDIA_URL_TTL_SECONDS. 404 `media_not_found` for another organization's id. */
export const getSMSMedia: Handler = async (ctx, { db, config }) => {
  const media = await getMedia(db, orgOf(ctx), ctx.params.id);
  if (!media) throw mediaNotFound();
  // Rounded up to a whole second, so a link is always valid for at least the TTL.
  const expires = Math.ceil(Date.now() / 1000) + mediaUrlTtlSeconds();
  const query = new URLSearchParams({ expires: String(expires), signature: mediaSignature(media.id, expires) });
  const data: SmsMediaLink = {
    id: media.id,
    url: `${config.publicBaseUrl}${BASE_PATH}/sms/media/${encodeURIComponent(media.id)}/content?${query}`,
    expiresAt: new Date(expires * 1000).toISOString(),
    contentType: media.contentType,
    size: media.sizeBytes,
    direction: media.direction,
  };
  return { data };
};

/** Types a browser may show inline from our origin; anything else is served as a download. */
const INLINE_TYPES = /^(image\/(jpeg|png|gif|webp|bmp)|video\/(mp4|3gpp|quicktime)|audio\/(mpeg|mp4|amr|ogg|wav)|text\/plain)$/;

/**
 * GET /sms/media/{id}/content (getSMSMediaContent, auth none: the signature is the credential): the
 * attachment's bytes with its media type. 403 `invalid_media_signature` for an expired, tampered or
 * missing signature; 404 `media_not_found` when the attachment is gone. Served with `nosniff`, a
 * sandboxing CSP and `private` caching until the link expires (customer-sent content on our origin).
 */
export const getSMSMediaContent: Handler = async (ctx, { db }) => {
  const id = ctx.params.id;
  const q = (k: string) => {
    const v = ctx.query[k];
    return Array.isArray(v) ? v[0] : v;
  };
  const expires = q('expires');
  if (!verifyMediaSignature(id, expires, q('signature'))) {
    throw new ApiError(403, 'invalid_media_signature', 'The media link is expired or its signature is invalid; ask GET /sms/media/{id} for a new link');
  }
  const found = await getMediaContentById(db, id);
  if (!found) throw mediaNotFound();
  const type = found.media.contentType;
  const maxAge = Math.max(0, Number(expires) - Math.floor(Date.now() / 1000));
  // Koa's documented escape hatch (as the consent CSV export does): the bytes, not the JSON envelope.
  ctx.respond = false;
  ctx.res.statusCode = 200;
  ctx.res.setHeader('Content-Type', type);
  ctx.res.setHeader('Content-Length', found.data.length);
  ctx.res.setHeader('X-Content-Type-Options', 'nosniff');
  ctx.res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  ctx.res.setHeader('Cache-Control', `private, max-age=${maxAge}`);
  ctx.res.setHeader('Content-Disposition', INLINE_TYPES.test(type) ? 'inline' : `attachment; filename="${id}"`);
  ctx.res.setHeader('ETag', `"${found.media.sha256}"`);
  ctx.res.end(found.data);
  return { data: null };
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  getSMSMedia: { responseSchema: 'SmsMediaLink' },
};
