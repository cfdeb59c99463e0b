/**
 * Booking by text (docs/api-notes.md "Booking skills", docs/sms.md "Agents answer texts"): a signed sandbox inbound
 * text asks an agent whose `book_appointment` targets the plain endpoint, Google Calendar or Cal.com (loopback stubs
 * of ../providers/bookingFixtures.ts); the reply goes out through `sms-message/{id}` on the worker (createActivities,
 * as npm start composes it). On success the texter reads the booking; on a 4xx, a 5xx, no answer in time or an
 * unparsable answer, the reply text and every stored line are free of any claim that something was booked, and the
 * texter is offered a person.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { COMPLETE_BRAND, postCallback, startSmsTestApi } from './sms-fixtures';
import { QUICK_CLIENT, type TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { allMessages } from '../../db/repositories/conversations';
import { TOOL_FAILURE_SENTENCE } from '../../providers/llm/sandboxReplies';
import { until } from '../helpers/wait';
import { BOOK, BookingTargets, CLAIMS, type BookingTarget } from '../providers/bookingFixtures';

describe('booking by text (signed sandbox inbound SMS → reply): every target, success and each failure kind', function () {
  this.timeout(120_000);
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const targets = new BookingTargets();
  const numbers: Partial<Record<BookingTarget, string>> = {};
  let texters = 0;

  before(async () => {
    await targets.start();
    t = await startSmsTestApi('sms_booking', QUICK_CLIENT, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }) });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
    org = await t.org('Texting booking');
    await targets.connect(t, org);
    expect((await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND })).status).to.equal(200);
    let i = 0;
    for (const target of ['url', 'google', 'calcom'] as const) {
      const agentId = await targets.agentOn(t, org, `Texts ${target}`, target);
      const e164 = sandboxInventory('312')[i++].e164;
      const p = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
      expect(p.status, p.text).to.be.oneOf([200, 201]);
      expect((await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
      expect((await t.call('PUT', `/numbers/${p.body.data.id}/sms`, { key: org.key, json: { enabled: true } })).status).to.equal(200);
      numbers[target] = e164;
    }
    await t.db('sms_registrations').where({ org_id: org.orgId }).update({ status: 'active' });
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
    await targets.stop();
  });
  afterEach(() => {
    expect(targets.problems(), 'wire problems').to.deep.equal([]);
  });

  /** A new texter sends the booking request: the reply text once sent, and every assistant line stored. */
  const text = async (target: BookingTarget) => {
    const from = `+1212555${String(200 + texters++).padStart(4, '0')}`;
    const id = `SMin${crypto.randomBytes(6).toString('hex')}`;
    const res = await postCallback(t, { type: 'message.inbound', id, from, to: numbers[target]!, text: BOOK });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const inbound = await t.db('sms_messages').where({ org_id: org.orgId, provider_message_id: id }).first();
    const reply = await until(async () => {
      const r = await t.db('sms_messages').where({ org_id: org.orgId, reply_to: inbound.id }).first();
      return r && r.status !== 'queued' ? r : undefined;
    }, 30_000, 'the reply');
    expect(reply).to.include({ direction: 'outbound', trigger: 'reply', to_e164: from });
    const replies = await t.db('sms_messages').where({ org_id: org.orgId, direction: 'outbound', to_e164: from });
    const stored = (await allMessages(t.db, org.orgId, reply.conversation_id)).filter((m) => m.role === 'assistant' && m.content && !m.toolCalls).map((m) => m.content!);
    return { read: replies.map((r) => r.body as string), stored };
  };

  for (const target of ['url', 'google', 'calcom'] as const) {
    it(`${target}: the texter reads the booking`, async () => {
      const before = targets.bookingCount(target);
      const { read, stored } = await text(target);
      expect(targets.bookingCount(target)).to.equal(before + 1);
      expect(read).to.have.length(1);
      expect(read[0]).to.match(/^All done\. The status is confirmed/).and.contain('Thursday, December 3 at 10:00 AM');
      expect(stored).to.deep.equal(read);
    });
    for (const failure of targets.bookingFailures(target)) {
      it(`${target}: ${failure.kind} is texted as an apology and an offer of a person — no text claims a booking`, async () => {
        const before = targets.bookingCount(target);
        failure.arm();
        const { read, stored } = await text(target);
        expect(targets.bookingCount(target)).to.equal(before);
        expect(read).to.deep.equal([TOOL_FAILURE_SENTENCE]);
        for (const line of [...read, ...stored]) expect(line, 'a text the person reads').to.not.match(CLAIMS);
        expect(stored).to.deep.equal(read);
      });
    }
  }
});
