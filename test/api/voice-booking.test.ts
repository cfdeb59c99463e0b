/**
 * Booking over the phone (docs/api-notes.md "Booking skills", docs/voice.md): a caller on ConversationRelay (the
 * sandbox caller rings the signed voice webhook and speaks on the relay socket) asks an agent whose
 * `book_appointment` targets the plain endpoint, Google Calendar or Cal.com (loopback stubs of
 * ../providers/bookingFixtures.ts). On success the caller hears the booking said as a person would; on a 4xx, a
 * 5xx, no answer in time or an unparsable answer, every line the caller hears and every line of the stored
 * transcript is free of any claim that something was booked, and the caller is offered a person.
 */
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { getVoiceCall } from '../../db/repositories/voiceCalls';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall } from '../../providers/telephony/sandboxCaller';
import { TOOL_FAILURE_SENTENCE } from '../../providers/llm/sandboxReplies';
import { until } from '../helpers/wait';
import { BOOK, BookingTargets, CLAIMS, type BookingTarget } from '../providers/bookingFixtures';

describe('booking over the phone (ConversationRelay): every target, success and each failure kind', function () {
  this.timeout(120_000);
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const targets = new BookingTargets();
  const numbers: Partial<Record<BookingTarget, string>> = {};
  let callers = 0;

  before(async () => {
    await targets.start();
    t = await startTestApi('voice_booking');
    org = await t.org('Voice booking');
    await targets.connect(t, org);
    let i = 0;
    for (const target of ['url', 'google', 'calcom'] as const) {
      const agentId = await targets.agentOn(t, org, `Phone ${target}`, target, { greeting: 'Thanks for calling Acme Dental.' });
      const e164 = sandboxInventory('415')[i++].e164;
      const p = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
      expect(p.status, p.text).to.equal(200);
      expect((await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
      numbers[target] = e164;
    }
  });
  after(async () => {
    await t?.close();
    await targets.stop();
  });
  afterEach(() => {
    expect(targets.problems(), 'wire problems').to.deep.equal([]);
  });

  /** One call saying the booking request: what the caller heard and the stored transcript once the call ended. */
  const call = async (target: BookingTarget) => {
    const from = `+1206555${String(100 + callers++).padStart(4, '0')}`;
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from, to: numbers[target]!, script: [{ say: BOOK }] });
    expect(rec.webhookStatus).to.equal(200);
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
    const conversationId = await until(async () => {
      const c = await getVoiceCall(t.db, org.orgId, callId);
      if (!c?.conversationId) return undefined;
      return (await getConversation(t.db, org.orgId, c.conversationId))?.status === 'ended' ? c.conversationId : undefined;
    }, 10_000, `call ${callId} ended`);
    const stored = (await allMessages(t.db, org.orgId, conversationId)).filter((m) => m.role === 'assistant' && m.content && !m.toolCalls).map((m) => m.content!);
    const heard = rec.lines.filter((l) => l.who === 'agent').map((l) => l.text);
    return { heard, stored };
  };

  for (const target of ['url', 'google', 'calcom'] as const) {
    it(`${target}: the caller hears the booking, said as a person would`, async () => {
      const before = targets.bookingCount(target);
      const { heard, stored } = await call(target);
      expect(targets.bookingCount(target)).to.equal(before + 1);
      expect(heard[0]).to.equal('Thanks for calling Acme Dental.');
      expect(heard[1]).to.match(/^All done\. The status is confirmed/).and.contain('Thursday, December 3 at 10:00 AM');
      expect(stored).to.deep.equal(heard);
    });
    for (const failure of targets.bookingFailures(target)) {
      it(`${target}: ${failure.kind} is heard as an apology and an offer of a person — no line claims a booking`, async () => {
        const before = targets.bookingCount(target);
        failure.arm();
        const { heard, stored } = await call(target);
        expect(targets.bookingCount(target)).to.equal(before);
        expect(heard).to.have.length(2);
        expect(heard[1]).to.equal(TOOL_FAILURE_SENTENCE);
        for (const line of [...heard, ...stored]) expect(line, 'a line the caller hears').to.not.match(CLAIMS);
        expect(stored).to.deep.equal(heard);
      });
    }
  }
});
