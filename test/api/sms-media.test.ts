/**
 * Text-message attachments (docs/sms.md "Text attachments"; spec "Scope rules" 2 and 3): `mediaIds` of
 * `POST /sms/messages` take SMS uploads (`file_…`, purpose sms) and any attachment of the organization
 * (`med_…`, including one a customer sent), never a web-chat upload; inbound media from the provider
 * callback is stored and its ids are carried by `sms.message.received`; `GET /sms/media/{id}` (sms:read)
 * answers a short-lived signed link whose content endpoint needs no API key.
 *
 * `GET /sms/media/{id}/content` is not in the route table yet: this suite registers it for its own app
 * and removes it afterwards.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { startTestWorker, testTemporal } from '../helpers/temporal';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { startApi, type RunningApi } from '../../api/server';
import { createDb, type Db } from '../../db';
import { loadConfig } from '../../config';
import { createLogger } from '../../runtime';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { createUpload, collectExpiredUploads } from '../../db/repositories/uploads';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createSmsActivities } from '../../activities/sms';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import type { OutgoingText, TelephonyAdapter } from '../../providers/telephony';
import { mediaSignature } from '../../api/sms/media';
import { COMPLETE_BRAND, postCallback } from './sms-fixtures';
import { until } from '../helpers/wait';


/** A real 1×1 PNG (uploads must be what they say) with a random tail, so each run's bytes differ. */
const PNG = Buffer.concat([Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64'), crypto.randomBytes(64)]);

interface Res {
  status: number;
  body: any;
  headers: Headers;
  bytes: Buffer;
}

describe('SMS attachments (mediaIds, inbound media, GET /sms/media/{id} signed links)', function () {
  this.timeout(60_000);
  let db: Db;
  let api: RunningApi;
  let worker: { stop(): Promise<void> } | undefined;
  const sentTexts: OutgoingText[] = [];
  /** A provider that accepts every text and records it (no receipts). */
  const telephony = {
    provider: 'sandbox',
    sendMessage: async (_orgId: string, text: OutgoingText) => {
      sentTexts.push(text);
      return { providerMessageId: `SMmed${crypto.randomBytes(6).toString('hex')}`, status: 'SENT' as const };
    },
  } as unknown as TelephonyAdapter;
  let numberIndex = 0;

  before(async () => {
    const { client } = await testTemporal();
    const databaseUrl = await createMigratedTestDatabase('smsmedia');
    db = createDb(databaseUrl);
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' });
    const logger = createLogger('silent');
    const taskQueue = `sms-media-${crypto.randomBytes(4).toString('hex')}`;
    api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue } });
    worker = await startTestWorker(taskQueue, createSmsActivities({ db, config, logger }, { telephony }));
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.MEDIA_URL_TTL_SECONDS;
    await worker?.stop();
    await api?.close();
    await db?.destroy();
  });

  async function call(method: string, path: string, opts: { key?: string; json?: unknown; body?: FormData } = {}): Promise<Res> {
    const headers: Record<string, string> = {};
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    if (opts.json !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path.startsWith('http') ? path : `${api.baseUrl}${path}`, { method, headers, body: opts.body ?? (opts.json !== undefined ? JSON.stringify(opts.json) : undefined) });
    const bytes = Buffer.from(await res.arrayBuffer());
    let body: any;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch {
      body = undefined;
    }
    return { status: res.status, body, headers: res.headers, bytes };
  }

  /** A path+query of the signed link (the configured public base URL is not this test's port). */
  const linkPath = (url: string) => {
    const u = new URL(url);
    return `${u.pathname.replace(/^\/api\/v1/, '')}${u.search}`;
  };

  async function key(orgId: string, scopes: string[]): Promise<string> {
    return (await createSecretKey(db, orgId, { brand: loadConfig({ logLevel: 'silent' }).keyBrandPrefix, scopes })).key;
  }

  /** An organization with an active registration and an SMS-enabled number. */
  async function smsOrg(name = 'Media Org'): Promise<{ orgId: string; key: string; from: string }> {
    const org = await createOrganization(db, name);
    const k = await key(org.id, NON_RESERVED_SCOPES);
    expect((await call('PUT', '/sms', { key: k, json: COMPLETE_BRAND })).status).to.equal(200);
    const from = sandboxInventory('312')[numberIndex++].e164;
    const bought = await call('POST', '/numbers/purchase', { key: k, json: { e164: from } });
    expect(bought.status, JSON.stringify(bought.body)).to.be.oneOf([200, 201]);
    expect((await call('PUT', `/numbers/${bought.body.data.id}/sms`, { key: k, json: { enabled: true } })).status).to.equal(200);
    await db('sms_registrations').where({ org_id: org.id }).update({ status: 'active' });
    return { orgId: org.id, key: k, from };
  }

  async function upload(k: string, purpose?: string, data: Buffer = PNG, name = 'photo.png', type = 'image/png'): Promise<Res> {
    const form = new FormData();
    if (purpose !== undefined) form.append('purpose', purpose);
    form.append('file', new Blob([data], { type }), name);
    return call('POST', '/uploads', { key: k, body: form });
  }

  /** An inbound text from a customer to `to`, with the given media. @returns the stored message row */
  async function inbound(to: string, media: unknown, from = '+12125550199'): Promise<any> {
    const id = `SMin${crypto.randomBytes(6).toString('hex')}`;
    const res = await postCallback({ call: call2 } as never, { type: 'message.inbound', id, from, to, text: 'Here is the photo', media });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return db('sms_messages').where({ provider_message_id: id }).first();
  }

  /** The shape postCallback expects of a TestApi's `call` (raw body and headers). */
  async function call2(method: string, path: string, opts: { raw?: string; headers?: Record<string, string> }) {
    const res = await fetch(`${api.baseUrl}${path}`, { method, headers: opts.headers, body: opts.raw });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
  }

  it('sends an SMS upload as an attachment: the file_ id becomes one med_ attachment, kept from collection, reused by later sends and handed to the provider', async () => {
    const org = await smsOrg();
    const up = await upload(org.key, 'sms');
    expect(up.status, JSON.stringify(up.body)).to.equal(201);
    const fileId = up.body.data.id;
    const to = '+12125550148';
    const sent = await call('POST', '/sms/messages', { key: org.key, json: { from: org.from, to, body: 'Acme Dental: your x-ray', trigger: 'reply', mediaIds: [fileId] } });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
    const [medId] = sent.body.data.mediaIds;
    expect(medId).to.match(/^med_/);
    const row = await db('sms_media').where({ id: medId }).first();
    expect(row).to.include({ org_id: org.orgId, message_id: sent.body.data.id, direction: 'outbound', upload_id: fileId, content_type: 'image/png' });
    expect(Number(row.size_bytes)).to.equal(PNG.length);
    // The upload is now attached: expiry no longer collects it.
    await db('uploads').where({ id: fileId }).update({ expires_at: db.raw(`now() - interval '1 hour'`) });
    await collectExpiredUploads(db, 1000);
    expect(await db('uploads').where({ id: fileId }).first('id')).to.not.equal(undefined);
    // A second send naming the same upload reuses its attachment.
    const again = await call('POST', '/sms/messages', { key: org.key, json: { from: org.from, to, body: 'Acme Dental: again', trigger: 'reply', mediaIds: [fileId] } });
    expect(again.status, JSON.stringify(again.body)).to.equal(202);
    expect(again.body.data.mediaIds).to.deep.equal([medId]);
    const text = await until(async () => sentTexts.find((t) => t.reference === sent.body.data.id));
    expect(text.mediaIds).to.deep.equal([medId]);
    const created = await db('events').where({ org_id: org.orgId, type: 'sms.message.updated' }).whereRaw(`data->>'messageId' = ?`, [sent.body.data.id]).first();
    expect(created.data.attachmentIds).to.deep.equal([medId]);
  });

  it('stores media of an inbound text and lists the ids in sms.message.received; a redelivered callback stores nothing more', async () => {
    const org = await smsOrg();
    const jpeg = crypto.randomBytes(300);
    const payload = { type: 'message.inbound', id: `SMdup${crypto.randomBytes(4).toString('hex')}`, from: '+12125550177', to: org.from, text: 'Photo attached', media: [{ contentType: 'image/jpeg', contentBase64: jpeg.toString('base64') }, { contentType: 'text/vcard', contentBase64: Buffer.from('BEGIN:VCARD').toString('base64') }] };
    const first = await postCallback({ call: call2 } as never, payload);
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const msg = await db('sms_messages').where({ provider_message_id: payload.id }).first();
    expect(msg.media_ids).to.have.length(2);
    const stored = await db('sms_media').whereIn('id', msg.media_ids).orderBy('content_type');
    expect(stored.map((m: any) => [m.direction, m.content_type, m.message_id, Number(m.size_bytes)])).to.deep.equal([
      ['inbound', 'image/jpeg', msg.id, 300],
      ['inbound', 'text/vcard', msg.id, 11],
    ]);
    expect(Buffer.compare(stored[0].data, jpeg)).to.equal(0);
    const events = await db('events').where({ org_id: org.orgId, type: 'sms.message.received' });
    expect(events).to.have.length(1);
    expect(events[0].data.attachmentIds).to.deep.equal(msg.media_ids);
    expect(events[0].data.messageId).to.equal(msg.id);
    // The stored provider event keeps types and sizes, not the bytes.
    const providerEvent = await db('sms_provider_events').where({ external_id: payload.id }).first();
    expect(JSON.stringify(providerEvent.payload)).to.not.include(jpeg.toString('base64').slice(0, 40));

    const dup = await postCallback({ call: call2 } as never, payload);
    expect(dup.body.data.duplicate).to.equal(true);
    expect(await db('sms_media').where({ org_id: org.orgId })).to.have.length(2);
  });

  it('refuses malformed inbound media with 400 naming media[i] and stores nothing', async () => {
    const org = await smsOrg();
    const id = `SMbad${crypto.randomBytes(4).toString('hex')}`;
    const res = await postCallback({ call: call2 } as never, { type: 'message.inbound', id, from: '+12125550177', to: org.from, text: 'x', media: [{ contentType: 'image/jpeg', contentBase64: 'not base64!' }, { contentBase64: 'AAAA' }] });
    expect(res.status).to.equal(400);
    expect(res.body.errors.map((e: any) => e.field)).to.deep.equal(['media[0].contentBase64', 'media[1].contentType']);
    expect(await db('sms_messages').where({ provider_message_id: id })).to.have.length(0);
  });

  it('forwards an attachment a customer sent (inbound med_ id) on an outgoing text, with only sms:send', async () => {
    const org = await smsOrg();
    const msg = await inbound(org.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }]);
    const [medId] = msg.media_ids;
    const sendOnly = await key(org.orgId, ['sms:send']);
    const sent = await call('POST', '/sms/messages', { key: sendOnly, json: { from: org.from, to: '+12125550149', body: 'Acme Dental: forwarding your photo', trigger: 'reply', mediaIds: [medId] } });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
    expect(sent.body.data.mediaIds).to.deep.equal([medId]);
    expect((await db('sms_messages').where({ id: sent.body.data.id }).first()).media_ids).to.deep.equal([medId]);
    // Forwarding does not copy: the attachment still names the message that first carried it.
    expect((await db('sms_media').where({ id: medId }).first()).message_id).to.equal(msg.id);
  });

  it('does not reach web-chat uploads or another organization\'s ids (404 media_not_found naming the field), refuses general uploads (422), expired uploads (404 file_expired) and malformed ids (400)', async () => {
    const org = await smsOrg();
    const other = await smsOrg('Other Org');
    const chat = await createUpload(db, org.orgId, { filename: 'chat.png', contentType: 'image/png', data: PNG, purpose: 'chat' });
    const foreignUpload = (await upload(other.key, 'sms')).body.data.id;
    const foreignMedia = (await inbound(other.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }])).media_ids[0];
    const general = (await upload(org.key)).body.data.id;
    const good = (await upload(org.key, 'sms')).body.data.id;
    // Made after the last POST /uploads, whose opportunistic collection would delete it (then: media_not_found).
    const expired = await createUpload(db, org.orgId, { filename: 'old.png', contentType: 'image/png', data: PNG, purpose: 'sms', ttlSeconds: 0 });
    const send = (mediaIds: string[]) => call('POST', '/sms/messages', { key: org.key, json: { from: org.from, to: '+12125550150', body: 'Acme Dental: hello', trigger: 'reply', mediaIds } });
    const before = await db('sms_messages').where({ org_id: org.orgId }).count<{ count: string }[]>('* as count');

    const hidden = await send([good, chat.id, foreignUpload, foreignMedia, 'med_doesnotexist']);
    expect(hidden.status).to.equal(404);
    expect(hidden.body.code).to.equal('media_not_found');
    expect(hidden.body.errors.map((e: any) => e.field)).to.deep.equal(['mediaIds[1]', 'mediaIds[2]', 'mediaIds[3]', 'mediaIds[4]']);
    // A chat upload answers exactly like an unknown id.
    expect(hidden.body.errors[0].message).to.equal(hidden.body.errors[3].message);

    const notSms = await send([general]);
    expect(notSms.status).to.equal(422);
    expect(notSms.body.code).to.equal('upload_not_for_sms');
    expect(notSms.body.errors[0].field).to.equal('mediaIds[0]');

    const old = await send([expired.id]);
    expect(old.status).to.equal(404);
    expect(old.body.code).to.equal('file_expired');

    const malformed = await send(['upl_x', good, good]);
    expect(malformed.status).to.equal(400);
    expect(malformed.body.errors.map((e: any) => e.field)).to.deep.equal(['mediaIds[0]', 'mediaIds[2]']);

    // Nothing was written by the refusals: no message, no attachment, the good upload still unattached.
    expect(await db('sms_messages').where({ org_id: org.orgId }).count<{ count: string }[]>('* as count')).to.deep.equal(before);
    expect(await db('sms_media').where({ org_id: org.orgId, direction: 'outbound' })).to.have.length(0);
    expect((await db('uploads').where({ id: good }).first()).attached_at).to.equal(null);
    // POST /uploads itself never makes chat uploads.
    const chatUpload = await upload(org.key, 'chat');
    expect(chatUpload.status).to.equal(400);
    expect(chatUpload.body.errors[0].field).to.equal('purpose');
  });

  it('answers GET /sms/media/{id} with a signed link that serves the bytes without an API key, and stops serving once it expires', async () => {
    const org = await smsOrg();
    const msg = await inbound(org.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }]);
    const [medId] = msg.media_ids;
    const link = await call('GET', `/sms/media/${medId}`, { key: org.key });
    expect(link.status, JSON.stringify(link.body)).to.equal(200);
    expect(link.body.data).to.include({ id: medId, contentType: 'image/png', size: PNG.length, direction: 'inbound' });
    const expiresAt = new Date(link.body.data.expiresAt).getTime();
    expect(expiresAt - Date.now()).to.be.within(295_000, 301_000);
    expect(link.body.data.url).to.match(new RegExp(`/api/v1/sms/media/${medId}/content\\?expires=\\d+&signature=[0-9a-f]{64}$`));
    const content = await call('GET', linkPath(link.body.data.url));
    expect(content.status).to.equal(200);
    expect(content.headers.get('content-type')).to.equal('image/png');
    expect(content.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(Buffer.compare(content.bytes, PNG)).to.equal(0);
    // An outbound attachment made from an upload is served from the upload's bytes.
    const up = (await upload(org.key, 'sms', Buffer.from('GIF89a-bytes'), 'a.gif', 'image/gif')).body.data.id;
    const sent = await call('POST', '/sms/messages', { key: org.key, json: { from: org.from, to: '+12125550151', body: 'Acme Dental: gif', trigger: 'reply', mediaIds: [up] } });
    const outLink = await call('GET', `/sms/media/${sent.body.data.mediaIds[0]}`, { key: org.key });
    expect(outLink.body.data.direction).to.equal('outbound');
    expect((await call('GET', linkPath(outLink.body.data.url))).bytes.toString()).to.equal('GIF89a-bytes');

    process.env.MEDIA_URL_TTL_SECONDS = '1';
    try {
      const short = await call('GET', `/sms/media/${medId}`, { key: org.key });
      expect(new Date(short.body.data.expiresAt).getTime() - Date.now()).to.be.at.most(2_000);
      expect((await call('GET', linkPath(short.body.data.url))).status).to.equal(200);
      await new Promise((r) => setTimeout(r, Math.max(0, new Date(short.body.data.expiresAt).getTime() - Date.now()) + 50));
      const late = await call('GET', linkPath(short.body.data.url));
      expect(late.status).to.equal(403);
      expect(late.body.code).to.equal('invalid_media_signature');
    } finally {
      delete process.env.MEDIA_URL_TTL_SECONDS;
    }
  });

  it('refuses a tampered, re-dated or missing signature with 403 invalid_media_signature', async () => {
    const org = await smsOrg();
    const [medId] = (await inbound(org.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }])).media_ids;
    const other = (await inbound(org.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }])).media_ids[0];
    const url = new URL((await call('GET', `/sms/media/${medId}`, { key: org.key })).body.data.url);
    const expires = url.searchParams.get('expires')!;
    const sig = url.searchParams.get('signature')!;
    const flipped = sig.slice(0, -1) + (sig.endsWith('0') ? '1' : '0');
    for (const path of [
      `/sms/media/${medId}/content?expires=${expires}&signature=${flipped}`,
      `/sms/media/${medId}/content?expires=${Number(expires) + 3600}&signature=${sig}`,
      `/sms/media/${other}/content?expires=${expires}&signature=${sig}`,
      `/sms/media/${medId}/content?expires=${expires}`,
      `/sms/media/${medId}/content`,
    ]) {
      const res = await call('GET', path);
      expect(res.status, path).to.equal(403);
      expect(res.body.code).to.equal('invalid_media_signature');
    }
    // An API key is no substitute for the signature.
    expect((await call('GET', `/sms/media/${medId}/content`, { key: org.key })).status).to.equal(403);
  });

  it('answers another organization\'s attachment id with 404 exactly like a missing one', async () => {
    const org = await smsOrg();
    const other = await smsOrg('Tenant B');
    const [theirs] = (await inbound(other.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }])).media_ids;
    const foreign = await call('GET', `/sms/media/${theirs}`, { key: org.key });
    const missing = await call('GET', '/sms/media/med_0000000000000000000000', { key: org.key });
    expect(foreign.status).to.equal(404);
    expect(missing.status).to.equal(404);
    expect(foreign.body.code).to.equal('media_not_found');
    expect({ ...foreign.body, instance: undefined, requestId: undefined, traceId: undefined }).to.deep.equal({ ...missing.body, instance: undefined, requestId: undefined, traceId: undefined });
    // A correctly signed link to an attachment that does not exist answers 404.
    const exp = Math.ceil(Date.now() / 1000) + 60;
    const gone = await call('GET', `/sms/media/med_0000000000000000000000/content?expires=${exp}&signature=${mediaSignature('med_0000000000000000000000', exp)}`);
    expect(gone.status).to.equal(404);
  });

  it('lets sms:read (without message access) read any attachment link, and needs sms:send to attach', async () => {
    const org = await smsOrg();
    const [medId] = (await inbound(org.from, [{ contentType: 'image/png', contentBase64: PNG.toString('base64') }])).media_ids;
    const readOnly = await key(org.orgId, ['sms:read']);
    const link = await call('GET', `/sms/media/${medId}`, { key: readOnly });
    expect(link.status).to.equal(200);
    expect((await call('GET', linkPath(link.body.data.url))).status).to.equal(200);
    const refused = await call('POST', '/sms/messages', { key: readOnly, json: { from: org.from, to: '+12125550152', body: 'Acme Dental: hi', trigger: 'reply', mediaIds: [medId] } });
    expect(refused.status).to.equal(403);
    const sendOnly = await key(org.orgId, ['sms:send']);
    expect((await call('GET', `/sms/media/${medId}`, { key: sendOnly })).status).to.equal(403);
  });

  it('lets a key with only sms:send upload text attachments, and only them', async () => {
    const org = await smsOrg('Upload Scopes');
    const sendOnly = await key(org.orgId, ['sms:send']);
    const sms = await upload(sendOnly, 'sms');
    expect(sms.status, JSON.stringify(sms.body)).to.equal(201);
    const general = await upload(sendOnly);
    expect(general.status).to.equal(403);
    expect(general.body.code).to.equal('insufficient_scope');
    expect(general.body.missingScopes).to.deep.equal(['knowledge:write', 'outbound:write']);
    const neither = await upload(await key(org.orgId, ['sms:read']), 'sms');
    expect(neither.status).to.equal(403);
    expect(neither.body.requiredScopes).to.deep.equal(['knowledge:write', 'outbound:write', 'sms:send']);
  });
});
