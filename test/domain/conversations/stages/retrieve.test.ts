/**
 * Retrieval and the tools of a free turn as stages (domain/conversations/turn/retrieve.ts, offerTools.ts): the
 * request, the lead said first, the knowledge kept, and the tools offered in order with the agent's own winning.
 */
import { expect } from 'chai';
import { KNOWLEDGE_RESULTS, retrieve } from '../../../../domain/conversations/turn/retrieve';
import { offerTools } from '../../../../domain/conversations/turn/offerTools';
import type { KnowledgeHit } from '../../../../domain/conversations/prompt';
import type { EscalationRoute } from '../../../../domain/conversations/escalation';
import { begin, clinic, conversationOf, portsOf, streamed } from './turn';

const hit = (i: number, score: number): KnowledgeHit => ({ chunkId: `chk_${i}`, content: `Section ${i}`, score, source: { id: 'ks_1', title: 'Handbook', name: null, url: null } });
const withKnowledge = () => clinic({ knowledge: [{ id: 'ks_1', title: 'Handbook', kind: 'text' }] as never });
const history = [
  { role: 'assistant' as const, content: 'Hello' },
  { role: 'user' as const, content: 'Do you take Delta Dental?' },
  { role: 'assistant' as const, content: 'Yes.' },
  { role: 'user' as const, content: 'please book visit name: Ada' },
];

describe('turn stages: retrieve and offer tools', () => {
  it('retrieves for the stored message with the earlier turns, keeps hits above the floor and records the lookup', async () => {
    const asked: unknown[][] = [];
    const ports = portsOf({
      searchKnowledge: async (...args) => {
        asked.push(args);
        return [hit(1, 0.4), hit(2, 0.005)];
      },
    });
    const { turn, state } = begin(conversationOf(withKnowledge(), { history }), 'And MetLife?', ports);
    const out = await retrieve(turn, state);
    expect(asked).to.deep.equal([['And MetLife?', KNOWLEDGE_RESULTS, ['Do you take Delta Dental?', 'please book visit name: Ada']]]);
    expect(out).to.include({ request: 'And MetLife?', leadSaid: '' });
    expect(out.hits.map((h) => h.chunkId)).to.deep.equal(['chk_1']);
    expect(out.receipt.knowledge).to.have.length(1);
    expect(out.receipt.knowledge[0]).to.deep.include({ query: 'And MetLife?', results: [{ chunkId: 'chk_1', score: 0.4, sourceId: 'ks_1', source: 'Handbook' }] });
    expect(out.receipt.latency.map((l) => l.stage)).to.deep.equal(['retrieval']);
  });

  it('for a skill resumed after the PIN, asks with the message that asked for it and says the thanks first', async () => {
    const { turn, state, events } = begin(conversationOf(withKnowledge(), { history }), '4321', portsOf({ searchKnowledge: async () => [] }));
    const out = await retrieve(turn, { ...state, resume: 'skill:book_visit', lead: 'Thank you, Grace, you are verified.' });
    expect(out.request).to.equal('please book visit name: Ada');
    expect(out.leadSaid).to.equal('Thank you, Grace, you are verified. ');
    expect(streamed(events)).to.equal('Thank you, Grace, you are verified. ');
  });

  it('searches nothing for an agent without knowledge or a turn without a message', async () => {
    const never = portsOf({
      searchKnowledge: async () => {
        throw new Error('no search expected');
      },
    });
    const plain = begin(conversationOf(clinic()), 'hello', never);
    expect((await retrieve(plain.turn, plain.state)).receipt.knowledge).to.deep.equal([]);
    const none = begin(conversationOf(withKnowledge()), null, never);
    const out = await retrieve(none.turn, none.state);
    expect(out.request).to.equal(null);
    expect(out.receipt.latency).to.deep.equal([]);
  });

  it("offers skills, the servers' tools, playbooks, escalate and the client's tools, the agent's own winning a name", async () => {
    const route: EscalationRoute = { destination: { id: 'esc_1', kind: 'email', address: 'desk@clinic.example' }, phone: null, email: null };
    const remote = (name: string, offered = true) => ({ skill: 'crm', remoteName: name, tool: { name, description: name, parameters: {} }, offered });
    const ports = portsOf({
      escalationRoute: async () => route,
      remoteTools: async () => ({ tools: [remote('crm__find'), remote('book_visit'), remote('crm__delete', false)], unavailable: [{ skill: 'calendar', error: 'timed out' }] }),
    });
    const clientTools = [{ name: 'get_weather', description: 'Weather', parameters: {} }, { name: 'escalate', description: 'Mine', parameters: {} }];
    const { turn, state } = begin(conversationOf(clinic()), 'hello', ports, { clientTools });
    const out = await offerTools(turn, await retrieve(turn, state));
    expect(out.tools.map((t) => t.name)).to.deep.equal(['book_visit', 'crm__find', 'start_playbook_book_appointment', 'escalate', 'get_weather']);
    expect(out.remote.map((r) => r.tool.name)).to.deep.equal(['crm__find', 'crm__delete']);
    expect(out.escalateOffered).to.equal(true);
    expect(out.clientTools.map((t) => t.name)).to.deep.equal(['get_weather']);
    expect(out.receipt.unavailableSkills).to.deep.equal([{ skill: 'calendar', error: 'timed out' }]);
  });

  it('offers no escalate without a destination, and goes on without tools when the servers cannot be listed', async () => {
    const ports = portsOf({
      escalationRoute: async () => ({ destination: null, phone: null, email: null }),
      remoteTools: async () => {
        throw new Error('unreachable');
      },
    });
    const { turn, state } = begin(conversationOf(clinic({ playbooks: [] })), 'hello', ports);
    const out = await offerTools(turn, await retrieve(turn, state));
    expect(out.tools.map((t) => t.name)).to.deep.equal(['book_visit']);
    expect(out.escalateOffered).to.equal(false);
    expect(out.receipt).to.not.have.property('unavailableSkills');
  });
});
