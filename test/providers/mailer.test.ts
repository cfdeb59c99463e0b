/**
 * The mailer providers (DESIGN.md "Providers": `mailer`; docs/team-and-oauth.md "Team"): the SMTP adapter on `nodemailer`
 * against a loopback SMTP server (`smtp-server`, RFC 5321 with AUTH PLAIN/LOGIN), and the sandbox, which
 * records messages (and writes them to `DATA_DIR/mail/*.eml` and the log) and refuses the documented magic domain.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { createMailer } from '../../providers/mailer';
import { SandboxMailer } from '../../providers/mailer/sandbox';

describe('mailer providers', () => {
  let server: SMTPServer;
  let port: number;
  const received: { from: string; to: string[]; data: string; user?: string }[] = [];

  before(async () => {
    server = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      onAuth(auth, _session, cb) {
        if (auth.username === 'mailer' && auth.password === 's3cret') cb(null, { user: auth.username });
        else cb(new Error('535 authentication failed'));
      },
      onRcptTo(address, _session, cb) {
        if (address.address.endsWith('@nowhere.example')) cb(new Error('550 no such mailbox'));
        else cb();
      },
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), data: Buffer.concat(chunks).toString('utf8'), user: session.user as string | undefined });
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.server.address() as AddressInfo).port;
  });
  after(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends through SMTP with the configured credentials and From address', async () => {
    const mailer = createMailer({ MAILER_PROVIDER: 'smtp', SMTP_URL: `smtp://mailer:s3cret@127.0.0.1:${port}`, MAIL_FROM: 'team@acp.example' });
    try {
      expect(mailer.provider).to.equal('smtp');
      await mailer.send({ to: 'new@team.example', subject: 'You are invited', text: 'Set your password here: https://x.example/invitations/accept?token=abc' });
      const m = received.at(-1)!;
      expect(m).to.include({ from: 'team@acp.example', user: 'mailer' });
      expect(m.to).to.deep.equal(['new@team.example']);
      expect(m.data).to.include('Subject: You are invited').and.include('invitations/accept?token=abc');
      await expectRejects(mailer.send({ to: 'x@nowhere.example', subject: 's', text: 't' }), /550/);
    } finally {
      await mailer.close();
    }
    const wrongAuth = createMailer({ MAILER_PROVIDER: 'smtp', SMTP_URL: `smtp://mailer:wrong@127.0.0.1:${port}` });
    await expectRejects(wrongAuth.send({ to: 'a@team.example', subject: 's', text: 't' }), /535|auth/i);
    await wrongAuth.close();
  });

  it('defaults to the sandbox, which records messages and refuses @fail.example', async () => {
    const mailer = createMailer({});
    expect(mailer).to.be.instanceOf(SandboxMailer);
    await mailer.send({ to: 'a@b.example', subject: 's', text: 't' });
    expect((mailer as SandboxMailer).sent).to.deep.equal([{ to: 'a@b.example', subject: 's', text: 't' }]);
    await expectRejects(mailer.send({ to: 'x@fail.example', subject: 's', text: 't' }), /550/);
    expect(() => createMailer({ MAILER_PROVIDER: 'smtp' })).to.throw(/SMTP_URL/);
    expect(() => createMailer({ MAILER_PROVIDER: 'pigeon' })).to.throw(/not supported/);
  });

  it('writes each sandbox message to DATA_DIR/mail as an .eml file and logs it with its link', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-mail-'));
    const logged: { fields: Record<string, any>; message: string }[] = [];
    try {
      const mailer = createMailer({ MAIL_FROM: 'team@acp.example' }, { dataDir, logger: { info: (fields, message) => logged.push({ fields, message }) } });
      const link = 'http://127.0.0.1:8080/invitations/accept?token=abc123';
      await mailer.send({ to: 'new@team.example', subject: 'Olivia invited you to Bright Dental', text: `Set your password here:\n${link}\n` });
      const files = fs.readdirSync(path.join(dataDir, 'mail'));
      expect(files).to.have.length(1);
      expect(files[0]).to.match(/\.eml$/);
      const eml = fs.readFileSync(path.join(dataDir, 'mail', files[0]), 'utf8');
      expect(eml).to.include('From: team@acp.example').and.include('To: new@team.example').and.include('Subject: Olivia invited you to Bright Dental').and.include(link);
      expect(eml).to.match(/^Message-ID: <.+>\r$/m).and.match(/^Date: .+\r$/m);
      expect(logged).to.have.length(1);
      expect(logged[0].message).to.include(link);
      expect(logged[0].fields.mail).to.include({ to: 'new@team.example', file: path.join(dataDir, 'mail', files[0]) });
      // Refused mail is neither written nor logged.
      await expectRejects(mailer.send({ to: 'x@fail.example', subject: 's', text: 't' }), /550/);
      expect(fs.readdirSync(path.join(dataDir, 'mail'))).to.have.length(1);
      await mailer.close();
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

async function expectRejects(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(String((err as Error | undefined)?.message ?? err)).to.match(pattern);
}
