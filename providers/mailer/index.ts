/**
 * The mailer interface (DESIGN.md "Providers": `mailer`, invitations; docs/team-and-oauth.md "Team"). The sandbox, the
 * default, records every message in memory, logs it and writes it to `DATA_DIR/mail/*.eml`; `MAILER_PROVIDER=smtp` sends through `nodemailer` to the SMTP
 * server named by `SMTP_URL` (e.g. `smtps://user:pass@smtp.example.com:465`), from `MAIL_FROM`.
 */
import path from 'node:path';
import { SandboxMailer, type SandboxMailerOptions } from './sandbox';
import { SmtpMailer } from './smtp';
import { instrumentProvider } from '../../metrics';

/** One message to send (plain text; invitations need no HTML). */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** A mailer adapter. */
export interface Mailer {
  readonly provider: string;
  /** Sends one message. @throws Error when the provider refuses it or cannot be reached */
  send(message: MailMessage): Promise<void>;
  /** Releases connections (SMTP pool); a no-op for the sandbox. */
  close(): Promise<void>;
}

/**
 * The configured mailer (MAILER_PROVIDER: `sandbox`, the default, or `smtp` with SMTP_URL and MAIL_FROM).
 * @param opts.dataDir DATA_DIR: the sandbox writes each message to `<dataDir>/mail/*.eml`; `opts.logger`
 *   gets one log line per sandbox message (its text, links included)
 * @throws Error for another provider name, or `smtp` without SMTP_URL
 */
export function createMailer(env: NodeJS.ProcessEnv = process.env, opts: { dataDir?: string; logger?: SandboxMailerOptions['logger'] } = {}): Mailer {
  const name = env.MAILER_PROVIDER || 'sandbox';
  if (name === 'sandbox') {
    const sandbox = new SandboxMailer({ dir: opts.dataDir ? path.join(opts.dataDir, 'mail') : undefined, logger: opts.logger, from: env.MAIL_FROM || undefined });
    return instrumentProvider('mailer', name, sandbox);
  }
  if (name === 'smtp') {
    if (!env.SMTP_URL) throw new Error('MAILER_PROVIDER=smtp needs SMTP_URL (e.g. smtps://user:pass@smtp.example.com:465)');
    return instrumentProvider('mailer', name, new SmtpMailer(env.SMTP_URL, env.MAIL_FROM || 'no-reply@localhost'));
  }
  throw new Error(`MAILER_PROVIDER=${name} is not supported; use "sandbox" or "smtp"`);
}
