/**
 * The SMTP mailer on `nodemailer` (the de-facto Node SMTP client; RFC 5321 submission). Proven in the
 * suite against a loopback SMTP server (test/activities/mailer.test.ts).
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type { Mailer, MailMessage } from './index';

/** Sends through one SMTP server given as a URL (`smtp://`, `smtps://`, credentials in the user info). */
export class SmtpMailer implements Mailer {
  readonly provider = 'smtp';
  private readonly transport: Transporter;

  /** @param url SMTP URL, e.g. `smtps://user:pass@smtp.example.com:465`; @param from the From address */
  constructor(url: string, private readonly from: string) {
    this.transport = nodemailer.createTransport(url);
  }

  /** Submits the message. @throws Error with the server's reply when it refuses it */
  async send(message: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}
