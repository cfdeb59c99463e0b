/**
 * The sandbox mailer: records messages instead of sending them (docs/team-and-oauth.md "Team"). Addresses ending in
 * `@fail.example` are refused, as a real server refuses a mailbox, so the failure path can be tried. When
 * given a directory it also writes each message there as an RFC 5322 `.eml` file (openable by any mail
 * client; built by nodemailer's stream transport, so it is the message SMTP would have carried), and when
 * given a logger it logs each message with its text, so a local user finds an invitation link in the log.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import type { Mailer, MailMessage } from './index';

/** Where the sandbox puts what it "sends". */
export interface SandboxMailerOptions {
  /** Directory for `.eml` files (created when missing), e.g. `DATA_DIR/mail`. */
  dir?: string;
  /** Logs one line per message (pino's `info(fields, message)` shape). */
  logger?: { info(fields: Record<string, unknown>, message: string): void };
  /** The From address written into the files. */
  from?: string;
}

/** Records every message it is given, newest last. */
export class SandboxMailer implements Mailer {
  readonly provider = 'sandbox';
  /** Messages "sent" by this process, oldest first. */
  readonly sent: MailMessage[] = [];
  private readonly composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

  constructor(private readonly options: SandboxMailerOptions = {}) {}

  /**
   * Records the message, writes it to `dir` and logs it.
   * @returns nothing; the written file's path is in the log line
   * @throws Error for a recipient at `fail.example` (the documented magic domain), or when the file cannot be written
   */
  async send(message: MailMessage): Promise<void> {
    if (/@fail\.example$/i.test(message.to)) throw new Error(`550 mailbox unavailable: ${message.to}`);
    let file: string | undefined;
    if (this.options.dir) {
      const info = (await this.composer.sendMail({ from: this.options.from ?? 'no-reply@localhost', to: message.to, subject: message.subject, text: message.text })) as { message: Buffer };
      await fs.mkdir(this.options.dir, { recursive: true });
      // Sortable by time; the random part keeps two messages of one millisecond apart.
      file = path.join(this.options.dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${crypto.randomBytes(4).toString('hex')}.eml`);
      await fs.writeFile(file, info.message);
    }
    this.sent.push({ ...message });
    this.options.logger?.info({ mail: { provider: 'sandbox', to: message.to, subject: message.subject, file } }, `sandbox mail (not sent) to ${message.to}: ${message.subject}\n${message.text}`);
  }

  async close(): Promise<void> {
    this.composer.close();
  }
}
