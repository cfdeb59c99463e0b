/** Service secrets (docs/security.md): generated once under DATA_DIR/secrets, owner-only, reused; env wins; production requires them. */
import { expect } from 'chai';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureServiceSecrets, generateSecretLines, MissingSecretError, SERVICE_SECRETS } from '../secrets';
import { openSecret, sealSecret } from '../domain/webhooks/signing';
import { loadWebhookSettings } from '../domain/webhooks/settings';

describe('service secrets (docs/security.md)', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-secrets-'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('generates every unset secret at random on first start, owner-only, and reuses it on the next start', () => {
    const first: NodeJS.ProcessEnv = {};
    expect(ensureServiceSecrets({ dataDir, production: false, env: first })).to.deep.equal(SERVICE_SECRETS.map((s) => s.name));
    const dir = path.join(dataDir, 'secrets');
    expect(fs.statSync(dir).mode & 0o777).to.equal(0o700);
    for (const { name } of SERVICE_SECRETS) {
      expect(first[name], name).to.be.a('string').with.length.greaterThan(30);
      expect(fs.statSync(path.join(dir, name)).mode & 0o777, name).to.equal(0o600);
      expect(fs.readFileSync(path.join(dir, name), 'utf8').trim()).to.equal(first[name]);
    }
    expect(Buffer.from(first.WEBHOOK_SECRET_KEY!, 'base64')).to.have.length(32);
    const second: NodeJS.ProcessEnv = {};
    ensureServiceSecrets({ dataDir, production: false, env: second });
    expect(second).to.deep.equal(first);
    const elsewhere: NodeJS.ProcessEnv = {};
    ensureServiceSecrets({ dataDir: path.join(dataDir, 'other'), production: false, env: elsewhere });
    expect(elsewhere.MEDIA_URL_SECRET).to.not.equal(first.MEDIA_URL_SECRET);
  });

  it('lets a set environment variable win over the stored file', () => {
    ensureServiceSecrets({ dataDir, production: false, env: {} });
    const env: NodeJS.ProcessEnv = { MEDIA_URL_SECRET: 'from-the-environment' };
    expect(ensureServiceSecrets({ dataDir, production: false, env })).to.not.include('MEDIA_URL_SECRET');
    expect(env.MEDIA_URL_SECRET).to.equal('from-the-environment');
  });

  it('refuses to start in production without the variable, naming it, and writes nothing', () => {
    const env: NodeJS.ProcessEnv = { MEDIA_URL_SECRET: 'x', CARRIER_CALLBACK_SECRET: 'y' };
    expect(() => ensureServiceSecrets({ dataDir, production: true, env })).to.throw(MissingSecretError, /^WEBHOOK_SECRET_KEY is not set/);
    expect(fs.existsSync(path.join(dataDir, 'secrets'))).to.equal(false);
  });

  it('prints fresh NAME=value lines for a production environment', () => {
    const a = generateSecretLines();
    expect(a.map((l) => l.split('=')[0])).to.deep.equal(SERVICE_SECRETS.map((s) => s.name));
    expect(generateSecretLines()).to.not.deep.equal(a);
  });

  describe('webhook signing secrets at rest', () => {
    const key = crypto.randomBytes(32);
    const previous = crypto.randomBytes(32);

    it('are always sealed: there is no unsealed form for a new write', () => {
      expect(() => sealSecret('whsec_abc', null)).to.throw(/WEBHOOK_SECRET_KEY is not set/);
      expect(sealSecret('whsec_abc', key)).to.match(/^v1:/).and.not.include('whsec_abc');
    });

    it('open with the previous key during a rotation (WEBHOOK_SECRET_KEY_PREVIOUS) and with neither once it is gone', () => {
      const sealedBefore = sealSecret('whsec_old', previous);
      const settings = loadWebhookSettings({}, { WEBHOOK_SECRET_KEY: key.toString('base64'), WEBHOOK_SECRET_KEY_PREVIOUS: previous.toString('base64') });
      expect(openSecret(sealedBefore, [settings.secretKey, settings.previousSecretKey])).to.equal('whsec_old');
      expect(openSecret(sealSecret('whsec_new', settings.secretKey), [settings.secretKey, settings.previousSecretKey])).to.equal('whsec_new');
      expect(() => openSecret(sealedBefore, [key])).to.throw(/neither WEBHOOK_SECRET_KEY nor WEBHOOK_SECRET_KEY_PREVIOUS/);
      expect(() => loadWebhookSettings({}, { WEBHOOK_SECRET_KEY_PREVIOUS: 'c2hvcnQ=' })).to.throw(/WEBHOOK_SECRET_KEY_PREVIOUS must be 32 bytes/);
    });

    it('still reads a legacy plain: row', () => {
      expect(openSecret('plain:whsec_legacy', [key])).to.equal('whsec_legacy');
    });
  });
});
