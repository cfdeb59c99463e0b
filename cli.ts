/**
 * Operator CLI (`npm run cli -- <command>`; docs/operations.md "Operator CLI"): organizations, secret keys, secrets.
 *   orgs create <name>                      create an organization, print its id
 *   orgs list                               list organizations
 *   keys create --org <id> --scopes a,b [--name n] [--rate-limit N] [--rate-window S]
 *                                           mint a secret key and print it once
 *   keys list --org <id>                    list an organization's keys (never the secret)
 *   keys revoke <keyId>                     revoke a key at once
 *   secrets generate                        print fresh values of every service secret (docs/security.md)
 *   calls place --to <E164> [--from <E164>] [--url <api base>] <line|keys:digits>...
 *                                           place a sandbox phone call through the running API (docs/voice.md): each argument is a spoken line, `keys:1234#`
 *                                           presses keys; prints the conversation as heard
 *   texts send --to <E164> [--from <E164>] [--url <api base>] [--wait <seconds>] <text>...
 *                                           text an SMS-enabled number through the running API as the sandbox carrier reports
 *                                           an inbound text (a signed `message.inbound` callback, docs/sms.md); prints the agent's reply
 *   secrets reseal-webhooks                 re-seal every stored webhook signing secret, secret variable, integration credential and sensitive record field with WEBHOOK_SECRET_KEY
 *                                           (opening with it or WEBHOOK_SECRET_KEY_PREVIOUS), after a key rotation
 *   secrets rotate-talk-tokens --org <id>   replace the organization's talk-token signing secret: every talk token, widget
 *                                           session token and relay reference signed with the old one stops at once (docs/security.md)
 * Uses DATABASE_URL, else the embedded Postgres under DATA_DIR: the cluster `npm start` is running when
 * there is one (found through its postmaster.pid), else one it starts and stops itself. Any failure
 * prints one `error: …` line and exits non-zero (1; 2 for a usage error).
 */
import { loadConfig } from './config';
import { createLogger, failureLine, loadServiceSecrets, openDatabase, runEntryPoint } from './runtime';
import { generateSecretLines } from './secrets';
import { createOrganization, getOrganization, listOrganizations } from './db/repositories/organizations';
import { createSecretKey, findKeyOwner, listKeys, revokeKey } from './db/repositories/apiKeys';
import { parseScopes, NON_RESERVED_SCOPES, RESERVED_SCOPES } from './domain/scopes';
import { resealEndpointSecrets } from './db/repositories/webhookEndpoints';
import { resealVariableSecrets } from './db/repositories/variables';
import { resealConnectionCredentials } from './db/repositories/integrations';
import { resealRecordFields } from './db/repositories/records';
import { rotateTalkTokenSecret } from './db/repositories/agentVersions';
import { loadWebhookSettings } from './domain/webhooks/settings';
import { openSecret, sealSecret } from './domain/webhooks/signing';
import { placeSandboxCall, type CallStep } from './providers/telephony/sandboxCaller';
import { sendSandboxText } from './providers/telephony/sandboxTexter';
import { findInboundByProviderId, findReplyTo, getMessageRecord } from './db/repositories/smsMessages';

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

const USAGE = `usage: npm run cli -- orgs create <name> | orgs list | keys create --org <id> --scopes a,b [--name n] [--rate-limit N] [--rate-window S] | keys list --org <id> | keys revoke <keyId> | secrets generate | secrets reseal-webhooks | secrets rotate-talk-tokens --org <id> | calls place --to <E164> [--from <E164>] [--url <api base>] <line|keys:digits>... | texts send --to <E164> [--from <E164>] [--url <api base>] [--wait <seconds>] <text>...`;

/**
 * Runs one CLI command.
 * @param out where results go (stdout); `err` where the usage and the one-line failure go (stderr)
 * @returns process exit code: 0, 1 on failure, 2 on a usage error
 */
export async function runCli(argv: string[], out: (line: string) => void = console.log, err: (line: string) => void = console.error): Promise<number> {
  const [group, cmd, ...rest] = argv;
  if (!group || !cmd) {
    err(USAGE);
    return 2;
  }
  if (group === 'secrets' && cmd === 'generate') {
    // For a production environment (NODE_ENV=production requires each); nothing is stored.
    for (const line of generateSecretLines()) out(line);
    return 0;
  }
  if (group === 'calls' && cmd === 'place') return placeCall(rest, out, err);
  if (group === 'texts' && cmd === 'send') return sendText(rest, out, err);
  let database: Awaited<ReturnType<typeof openDatabase>>;
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
    // The keys the service uses: the environment, else DATA_DIR/secrets (docs/security.md).
    if (group === 'secrets') loadServiceSecrets(config);
    database = await openDatabase(config, createLogger(process.env.LOG_LEVEL ?? 'warn'), { attach: true, applicationName: 'agent-control-plane-cli' });
  } catch (e) {
    err(`error: ${failureLine(e)}`);
    return 1;
  }
  const { db } = database;
  try {
    if (group === 'orgs' && cmd === 'create') {
      const name = rest.filter((a) => !a.startsWith('--')).join(' ').trim();
      if (!name) throw new Error('orgs create needs a name');
      const org = await createOrganization(db, name);
      out(JSON.stringify({ id: org.id, name: org.name }));
      return 0;
    }
    if (group === 'orgs' && cmd === 'list') {
      for (const o of await listOrganizations(db)) out(`${o.id}\t${o.createdAt.toISOString()}\t${o.name}`);
      return 0;
    }
    if (group === 'keys' && cmd === 'create') {
      const orgId = flag(rest, 'org');
      if (!orgId || !(await getOrganization(db, orgId))) throw new Error('keys create needs --org <existing organization id>');
      const scopesArg = flag(rest, 'scopes');
      if (!scopesArg) throw new Error(`keys create needs --scopes (comma-separated; "all" for every non-reserved scope)`);
      const scopes = scopesArg === 'all' ? NON_RESERVED_SCOPES : parseScopes(scopesArg);
      // Reserved scopes are never granted, by the CLI or the API (spec "Scope rules" 5; domain/keys.ts).
      const reserved = scopes.filter((s) => RESERVED_SCOPES.has(s));
      if (reserved.length) throw new Error(`reserved scopes cannot be granted: ${reserved.join(', ')}`);
      const rl = flag(rest, 'rate-limit');
      const rw = flag(rest, 'rate-window');
      const { key, info } = await createSecretKey(db, orgId, {
        brand: config.keyBrandPrefix,
        scopes,
        name: flag(rest, 'name'),
        rateLimitPoints: rl ? Number(rl) : undefined,
        rateLimitWindowSeconds: rw ? Number(rw) : undefined,
      });
      out(`key id:  ${info.id}`);
      out(`scopes:  ${info.scopes.join(',')}`);
      out(`secret:  ${key}`);
      out('The secret is shown once; store it now.');
      return 0;
    }
    if (group === 'keys' && cmd === 'list') {
      const orgId = flag(rest, 'org');
      if (!orgId) throw new Error('keys list needs --org <id>');
      for (const k of await listKeys(db, orgId)) {
        const state = k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt.getTime() <= Date.now() ? 'expired' : 'active';
        out(`${k.id}\t${k.kind}\t${k.displayPrefix}…\t${state}\t${k.scopes.join(',')}\t${k.name}`);
      }
      return 0;
    }
    if (group === 'secrets' && cmd === 'reseal-webhooks') {
      const { secretKey, previousSecretKey } = loadWebhookSettings();
      const reseal = (sealed: string) => sealSecret(openSecret(sealed, [secretKey, previousSecretKey]), secretKey);
      let endpoints = 0;
      let variables = 0;
      let connections = 0;
      let records = 0;
      for (const o of await listOrganizations(db)) {
        endpoints += await resealEndpointSecrets(db, o.id, reseal);
        variables += await resealVariableSecrets(db, o.id, reseal);
        connections += await resealConnectionCredentials(db, o.id, reseal);
        records += await resealRecordFields(db, o.id, reseal);
      }
      out(`resealed the signing secrets of ${endpoints} webhook endpoint(s), ${variables} secret variable(s), the credentials of ${connections} integration connection(s) and the sensitive fields of ${records} record(s) with WEBHOOK_SECRET_KEY; WEBHOOK_SECRET_KEY_PREVIOUS may now be removed`);
      return 0;
    }
    if (group === 'secrets' && cmd === 'rotate-talk-tokens') {
      const orgId = flag(rest, 'org');
      if (!orgId || !(await getOrganization(db, orgId))) throw new Error('secrets rotate-talk-tokens needs --org <existing organization id>');
      const at = await rotateTalkTokenSecret(db, orgId);
      out(`rotated the talk-token secret of ${orgId} at ${at.toISOString()}: its talk tokens, widget sessions and relay references signed before stop now`);
      return 0;
    }
    if (group === 'keys' && cmd === 'revoke') {
      const keyId = rest[0];
      const orgId = keyId ? await findKeyOwner(db, keyId) : undefined;
      const revoked = orgId ? await revokeKey(db, orgId, keyId) : undefined;
      if (!revoked) throw new Error(`no key ${keyId ?? '(missing id)'}`);
      out(`revoked ${revoked.id}`);
      return 0;
    }
    err(USAGE);
    return 2;
  } catch (e) {
    err(`error: ${failureLine(e)}`);
    return 1;
  } finally {
    await database.close();
  }
}

if (require.main === module) {
  runEntryPoint('npm run cli', async () => process.exit(await runCli(process.argv.slice(2))));
}

/**
 * `calls place`: rings the running API's sandbox voice webhook for `--to` and plays the script over the
 * relay WebSocket (providers/telephony/sandboxCaller.ts), printing each line heard.
 * Signs with the service's CARRIER_CALLBACK_SECRET (environment, else DATA_DIR/secrets).
 */
async function placeCall(args: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  try {
    const config = loadConfig();
    loadServiceSecrets(config);
    const to = flag(args, 'to');
    if (!to || !/^\+[1-9]\d{6,14}$/.test(to)) throw new Error('calls place needs --to <E.164 number assigned to an agent>');
    const from = flag(args, 'from') ?? '+12065550100';
    const baseUrl = flag(args, 'url') ?? `${config.publicBaseUrl.replace(/\/$/, '')}/api/v1`;
    const valued = new Set(['--to', '--from', '--url']);
    const script: CallStep[] = args.filter((a, i) => !valued.has(a) && !valued.has(args[i - 1])).map((a) => (a.startsWith('keys:') ? { digits: a.slice(5) } : { say: a }));
    const rec = await placeSandboxCall({ baseUrl, from, to, script });
    if (rec.refusal !== null || rec.webhookStatus !== 200) {
      out(`refused (${rec.webhookStatus}): ${rec.refusal ?? rec.markup.slice(0, 200)}`);
      return 1;
    }
    for (const l of rec.lines) out(`${l.who === 'agent' ? 'agent ' : 'caller'}: ${l.text}`);
    if (rec.handoff) out(`transferred: ${JSON.stringify(rec.handoff)}`);
    out(`call ${rec.callSid} ended (${rec.endedByAgent ? 'by the agent' : 'caller hung up'})`);
    return 0;
  } catch (e) {
    err(`error: ${failureLine(e)}`);
    return 1;
  }
}

/** Longest `texts send` waits for the agent's reply by default, seconds. */
const TEXT_REPLY_WAIT_SECONDS = 30;

/**
 * `texts send`: posts a signed sandbox `message.inbound` callback for `--to` from `--from` (default +12065550100) to
 * the running API (providers/telephony/sandboxTexter.ts), then reads the stored text and the agent's reply from the
 * database (`--wait` seconds, default 30; 0 does not wait) and prints it. Signs with CARRIER_CALLBACK_SECRET
 * (environment, else DATA_DIR/secrets).
 * @returns 0 when the text was received (and answered, or declined with why), 1 otherwise
 */
async function sendText(args: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let database: Awaited<ReturnType<typeof openDatabase>> | undefined;
  try {
    const config = loadConfig();
    loadServiceSecrets(config);
    const to = flag(args, 'to');
    if (!to || !/^\+[1-9]\d{6,14}$/.test(to)) throw new Error('texts send needs --to <E.164 number of the organization, SMS-enabled>');
    const from = flag(args, 'from') ?? '+12065550100';
    if (!/^\+[1-9]\d{6,14}$/.test(from)) throw new Error('--from must be an E.164 number');
    const waitArg = flag(args, 'wait');
    const waitSeconds = waitArg === undefined ? TEXT_REPLY_WAIT_SECONDS : Number(waitArg);
    if (!Number.isFinite(waitSeconds) || waitSeconds < 0 || waitSeconds > 600) throw new Error('--wait must be 0 to 600 seconds');
    const valued = new Set(['--to', '--from', '--url', '--wait']);
    const text = args.filter((a, i) => !valued.has(a) && !valued.has(args[i - 1])).join(' ').trim();
    if (!text) throw new Error('texts send needs the text to send');
    const baseUrl = flag(args, 'url') ?? `${config.publicBaseUrl.replace(/\/$/, '')}/api/v1`;
    const sent = await sendSandboxText({ baseUrl, from, to, text });
    if (sent.status !== 200) {
      out(`refused (${sent.status}): ${typeof sent.body === 'string' ? sent.body.slice(0, 200) : JSON.stringify(sent.body)}`);
      return 1;
    }
    out(`texter: ${text}`);
    if (waitSeconds === 0) {
      out(`text ${sent.providerMessageId} received`);
      return 0;
    }
    database = await openDatabase(config, createLogger(process.env.LOG_LEVEL ?? 'warn'), { attach: true, applicationName: 'agent-control-plane-cli' });
    const { db } = database;
    const deadline = Date.now() + waitSeconds * 1000;
    for (;;) {
      const inbound = await findInboundByProviderId(db, sent.providerMessageId);
      const reply = inbound ? await findReplyTo(db, inbound.orgId, inbound.id) : undefined;
      if (inbound && reply && reply.status !== 'queued') {
        out(`agent : ${(await getMessageRecord(db, inbound.orgId, reply.id))?.body ?? ''}`);
        out(`text ${inbound.id} answered by ${reply.id} (${reply.status})`);
        return 0;
      }
      if (inbound && inbound.answerState !== 'pending' && !reply) {
        out(`text ${inbound.id} received; no reply from the agent${inbound.answerNote ? ` (${inbound.answerNote})` : inbound.answerState ? ` (${inbound.answerState})` : ' (no agent answers this number, or a keyword)'}`);
        return 0;
      }
      if (Date.now() > deadline) {
        out(`text ${inbound?.id ?? sent.providerMessageId} received; no reply within ${waitSeconds} s`);
        return 1;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  } catch (e) {
    err(`error: ${failureLine(e)}`);
    return 1;
  } finally {
    await database?.close();
  }
}
