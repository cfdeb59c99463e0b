/**
 * `POST /uploads` over a real socket: multipart parsing, the 25 MB limit (413 file_too_large), storage
 * in Postgres, and 404 file_expired when an upload is gone before a knowledge source takes it.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { createAgent } from '../../db/repositories/agents';
import { attachUpload, collectExpiredUploads, createUpload, getUploadContent } from '../../db/repositories/uploads';
import { MAX_UPLOAD_BYTES } from '../../api/routes/uploads';

/** A multipart/form-data body with one file part (and optional text fields). */
function multipart(file: { name: string; type?: string; data: Buffer; field?: string }, fields: Record<string, string> = {}) {
  const boundary = `----acp${crypto.randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.name}"\r\n` +
        `Content-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
    ),
  );
  parts.push(file.data, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { raw: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Real file heads: the signatures file-type reads. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
const JPEG = Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), Buffer.alloc(64, 0x20)]);
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120, 0)]);
const PDF = Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n', 'latin1');

describe('POST /uploads', () => {
  let t: TestApi;
  let org: { orgId: string; key: string };

  before(async () => {
    t = await startTestApi('uploads', QUICK_CLIENT);
    org = await t.org('Upload Org');
  });
  after(() => t.close());

  it('stores a small file and answers 201 with a file_ id, its size, type, SHA-256 and a 24 h expiry', async () => {
    const data = Buffer.from('Opening hours: 9 to 5.\n');
    const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'hours.txt', type: 'text/plain', data }) });
    expect(res.status).to.equal(201);
    const up = res.body.data;
    expect(up.id).to.match(/^file_[0-9A-Za-z]+$/);
    expect(up).to.include({ filename: 'hours.txt', contentType: 'text/plain', sizeBytes: data.length, sha256: crypto.createHash('sha256').update(data).digest('hex') });
    const ttl = Date.parse(up.expiresAt) - Date.parse(up.createdAt);
    expect(ttl).to.equal(24 * 3600 * 1000);
    const stored = await getUploadContent(t.db, org.orgId, up.id);
    expect(stored!.data.equals(data)).to.equal(true);
  });

  it('guesses the type of a generic part from its extension and strips directories from the name', async () => {
    const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: '../../etc/handbook.pdf', data: Buffer.from('%PDF-1.4\n') }) });
    expect(res.status).to.equal(201);
    expect(res.body.data).to.include({ filename: 'handbook.pdf', contentType: 'application/pdf' });
  });

  it('accepts a file of exactly 25 MB', async function () {
    this.timeout(60_000);
    const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'max.txt', type: 'text/plain', data: Buffer.alloc(MAX_UPLOAD_BYTES, 0x61) }) });
    expect(res.status).to.equal(201);
    expect(res.body.data.sizeBytes).to.equal(25 * 1024 * 1024);
  });

  it('answers 413 file_too_large for 25 MB + 1 byte and stores nothing', async function () {
    this.timeout(60_000);
    const before = await t.db('uploads').where({ org_id: org.orgId }).count({ n: '*' });
    const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'big.txt', type: 'text/plain', data: Buffer.alloc(MAX_UPLOAD_BYTES + 1, 0x61) }) });
    expect(res.status).to.equal(413);
    expect(res.body.code).to.equal('file_too_large');
    expect(res.headers.get('content-type')).to.match(/application\/problem\+json/);
    const after = await t.db('uploads').where({ org_id: org.orgId }).count({ n: '*' });
    expect(after[0].n).to.equal(before[0].n);
  });

  it('answers 413 file_too_large before reading the body when Content-Length is far over the limit', async () => {
    // Only the headers and a few bytes are sent: the answer must come without the rest of the body.
    const url = new URL(`${t.api.baseUrl}/uploads`);
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${org.key}`,
          'content-type': 'multipart/form-data; boundary=x',
          'content-length': String(MAX_UPLOAD_BYTES * 2),
        },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
          req.destroy();
        });
      });
      req.on('error', reject);
      req.write(Buffer.alloc(10));
    });
    expect(status.status).to.equal(413);
    expect(JSON.parse(status.body).code).to.equal('file_too_large');
  });

  it('refuses a body that is not multipart (415), a multipart body without a file (400) and an empty file (400)', async () => {
    const json = await t.call('POST', '/uploads', { key: org.key, json: { file: 'x' } });
    expect(json.status).to.equal(415);
    const boundary = 'b0undary';
    const noFile = await t.call('POST', '/uploads', {
      key: org.key,
      raw: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n--${boundary}--\r\n`),
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(noFile.status).to.equal(400);
    expect(noFile.body.errors).to.deep.equal([{ field: 'file', message: 'is required (a multipart part with a filename)' }]);
    const empty = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'empty.txt', data: Buffer.alloc(0) }) });
    expect(empty.status).to.equal(400);
    expect(empty.body.errors[0].field).to.equal('file');
  });

  it('answers 415 content_type_mismatch when the bytes are not the declared image, audio, video or PDF (nothing stored)', async () => {
    const before = Number((await t.db('uploads').where({ org_id: org.orgId }).count({ n: '*' }))[0].n);
    const probes: Array<{ name: string; type: string; data: Buffer }> = [
      { name: 'photo.png', type: 'image/png', data: ELF },
      { name: 'photo.jpg', type: 'image/jpeg', data: Buffer.from('<html><script>alert(1)</script></html>') },
      { name: 'contract.pdf', type: 'application/pdf', data: Buffer.from('<!DOCTYPE html><html><body>not a pdf</body></html>') },
      { name: 'song.mp3', type: 'audio/mpeg', data: PNG },
      { name: 'clip.mp4', type: 'video/mp4', data: Buffer.from('plain words, no video') },
      { name: 'notes.txt', type: 'text/plain', data: PNG },
      { name: 'notes.txt', type: 'text/plain', data: ELF },
    ];
    const answered: string[] = [];
    for (const p of probes) {
      const res = await t.call('POST', '/uploads', { key: org.key, ...multipart(p) });
      const problem = res.headers.get('content-type')?.startsWith('application/problem+json') && res.body.errors?.[0]?.field === 'file';
      answered.push(`${p.type}: ${res.status} ${problem ? res.body.code : ''}`.trim());
    }
    expect(answered, 'each declared type with other bytes').to.deep.equal(probes.map((p) => `${p.type}: 415 content_type_mismatch`));
    expect(Number((await t.db('uploads').where({ org_id: org.orgId }).count({ n: '*' }))[0].n)).to.equal(before);
  });

  it('accepts files whose bytes are what they say, and names an undeclared type from the bytes', async () => {
    for (const [name, type, data] of [['a.png', 'image/png', PNG], ['b.jpg', 'image/jpg', JPEG], ['c.pdf', 'application/pdf', PDF], ['d.csv', 'text/csv', Buffer.from('a,b\n1,2\n')]] as const) {
      const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name, type, data }) });
      expect(res.status, `${type}: ${res.text}`).to.equal(201);
    }
    const sniffed = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'blob', data: PNG }) });
    expect(sniffed.status).to.equal(201);
    expect(sniffed.body.data.contentType).to.equal('image/png');
  });

  it('takes as knowledge only the text-extractable types it documents: an ELF binary declared text/plain answers 415', async () => {
    const agent = await createAgent(t.db, org.orgId, { name: 'Sniffing desk' });
    const addSource = (fileId: string) => t.call('POST', `/agents/${agent.id}/knowledge/sources`, { key: org.key, json: { kind: 'file', fileId } });
    // Stored as an older version would have stored it (no check at upload).
    const elf = await createUpload(t.db, org.orgId, { filename: 'manual.txt', contentType: 'text/plain', data: ELF });
    const res = await addSource(elf.id);
    expect(res.status, res.text).to.equal(415);
    expect(res.body.code).to.equal('content_type_mismatch');
    expect(res.body.errors).to.deep.equal([{ field: 'fileId', message: 'is declared text/plain but its bytes are application/x-elf' }]);
    expect(await t.db('knowledge_sources').where({ org_id: org.orgId, agent_id: agent.id })).to.have.length(0);
    const image = await createUpload(t.db, org.orgId, { filename: 'photo.png', contentType: 'image/png', data: PNG });
    const img = await addSource(image.id);
    expect(img.status).to.equal(415);
    expect(img.body.code).to.equal('unsupported_media_type');
    // A text file passes the check (then this API, without Temporal, answers 503).
    const text = await createUpload(t.db, org.orgId, { filename: 'faq.txt', contentType: 'text/plain', data: Buffer.from('Open 9 to 5.') });
    expect((await addSource(text.id)).status).to.equal(503);
  });

  it('requires knowledge:write', async () => {
    const reader = await t.org('Reader Org', ['knowledge:read']);
    const res = await t.call('POST', '/uploads', { key: reader.key, ...multipart({ name: 'a.txt', data: Buffer.from('a') }) });
    expect(res.status).to.equal(403);
  });

  it('answers 404 file_expired when an upload was garbage-collected before a source took it', async () => {
    const agent = await createAgent(t.db, org.orgId, { name: 'Upload desk' });
    const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'faq.md', type: 'text/markdown', data: Buffer.from('# FAQ') }) });
    const fileId = res.body.data.id;
    await t.db('uploads').where({ id: fileId }).update({ expires_at: new Date(Date.now() - 1000) });
    await collectExpiredUploads(t.db);
    expect(await getUploadContent(t.db, org.orgId, fileId)).to.equal(undefined);
    const src = await t.call('POST', `/agents/${agent.id}/knowledge/sources`, { key: org.key, json: { kind: 'file', fileId } });
    expect(src.status).to.equal(404);
    expect(src.body.code).to.equal('file_expired');
  });

  it('never collects an upload a source has attached', async () => {
    const res = await t.call('POST', '/uploads', { key: org.key, ...multipart({ name: 'kept.txt', type: 'text/plain', data: Buffer.from('kept') }) });
    const fileId = res.body.data.id;
    await t.db.transaction((trx) => attachUpload(trx, org.orgId, fileId));
    await t.db('uploads').where({ id: fileId }).update({ expires_at: new Date(Date.now() - 1000) });
    await collectExpiredUploads(t.db);
    expect(await getUploadContent(t.db, org.orgId, fileId)).not.to.equal(undefined);
  });
});
