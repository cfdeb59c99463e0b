/**
 * Unit tests of the agents domain logic without HTTP, database or Temporal: playbook graph validation,
 * publish compilation, the diff and the pre-publish report (api/agents/*).
 */
import { expect } from 'chai';
import type { AgentRecord, DraftBundle } from '../../../domain/agents/types';
import type { PlaybookGraph } from '../../../schemas/types/playbooks';
import { canonicalJson, compileDraft, snapshotChecksum } from '../../../domain/agents/compile';
import { diffSnapshots } from '../../../domain/agents/diff';
import { validatePlaybookGraph } from '../../../domain/agents/playbookGraph';
import { buildPrepublishReport } from '../../../domain/agents/report';
import { skillConfigErrors } from '../../../domain/agents/skillTypes';
import { verifyTalkToken, signTalkToken } from '../../../api/agents/talkToken';
import { intakeGraph, chain } from '../../api/agents-fixtures';

function agentRecord(over: Partial<AgentRecord> = {}): AgentRecord {
  return {
    id: 'agt_1',
    orgId: 'org_1',
    name: 'Front desk',
    description: null,
    persona: 'Friendly receptionist',
    instructions: 'Book appointments',
    greeting: 'Hello!',
    voicemailMessage: null,
    language: 'en-US',
    voiceId: 'voice_ava',
    dtmf: { enabled: false },
    variables: [],
    guardrails: {},
    callerVerification: {},
    widget: {},
    analysis: { fields: [] },
    version: 3,
    publishedVersionId: null,
    publishedVersionNumber: null,
    publishedDraftVersion: null,
    skills: [],
    playbooks: [],
    knowledgeSourceCount: 0,
    createdAt: '2026-11-22T00:00:00.000Z',
    updatedAt: '2026-11-22T00:00:00.000Z',
    ...over,
  };
}

const BOOK = { id: 'skl_1', name: 'book_appointment', type: 'book_appointment', description: 'Books a visit', config: { url: 'https://cal.example.com/book', durationMinutes: 30, timeZone: 'America/Chicago' } };


function bundle(over: Partial<DraftBundle> = {}): DraftBundle {
  return {
    agent: agentRecord(),
    skills: [BOOK],
    playbooks: [{ id: 'pbk_1', name: 'intake', description: 'New patients', graph: intakeGraph() }],
    knowledge: [],
    ...over,
  };
}

const ctxWith = (skills = [BOOK]) => ({
  skills: new Map(skills.map((s) => [s.name, { type: s.type, config: s.config }])),
  initialVariables: new Set<string>(),
});

describe('agents domain: playbook graph validation', () => {
  it('accepts a graph that gathers every required input before the skill', () => {
    expect(validatePlaybookGraph(intakeGraph(), ctxWith())).to.deep.equal([]);
  });

  it('names unreachable nodes and dangling edges by node id', () => {
    const g = intakeGraph();
    g.nodes.push({ id: 'orphan', type: 'say', prompt: 'never said' });
    g.edges.push({ from: 'ask_time', to: 'ghost' });
    const errors = validatePlaybookGraph(g, ctxWith());
    expect(errors.map((e) => e.field)).to.include.members(['graph.nodes[orphan]', 'graph.edges[5]']);
    expect(errors.find((e) => e.field === 'graph.edges[5]')!.message).to.contain('"ghost"');
  });

  it('names a skill node that refers to a missing skill', () => {
    const errors = validatePlaybookGraph(intakeGraph(), ctxWith([]));
    expect(errors).to.deep.include({ field: 'graph.nodes[book].skill', message: 'names no skill of this agent: "book_appointment"' });
  });

  it('refuses a required input gathered on only one branch before use', () => {
    // The intake nodes, with a branch after ask_time that reaches book either through ask_phone or past it.
    const g: PlaybookGraph = {
      nodes: [...intakeGraph().nodes, { id: 'skip', type: 'say', prompt: 'We have your number' }, { id: 'branch', type: 'branch', on: 'name' }],
      edges: [...chain('start', 'ask_name', 'ask_time', 'branch'), { from: 'branch', to: 'ask_phone', when: 'new' }, ...chain('branch', 'skip'), ...chain('ask_phone', 'book'), ...chain('skip', 'book', 'end')],
    };
    const errors = validatePlaybookGraph(g, ctxWith());
    expect(errors.map((e) => e.field)).to.deep.equal(['graph.nodes[book].inputs.phone']);
  });

  it('requires exactly one start node and fields per node type', () => {
    const errors = validatePlaybookGraph({ nodes: [{ id: 'a', type: 'ask' }, { id: 'e', type: 'end' }], edges: [{ from: 'a', to: 'e' }] }, ctxWith());
    const fields = errors.map((e) => e.field);
    expect(fields).to.include.members(['graph.nodes', 'graph.nodes[a].prompt', 'graph.nodes[a].gathers']);
  });

  it('counts agent variables as gathered at the start', () => {
    const g = intakeGraph();
    g.nodes = g.nodes.filter((n) => n.id !== 'ask_phone');
    g.edges = [
      { from: 'start', to: 'ask_name' },
      { from: 'ask_name', to: 'ask_time' },
      { from: 'ask_time', to: 'book' },
      { from: 'book', to: 'end' },
    ];
    expect(validatePlaybookGraph(g, ctxWith()).map((e) => e.field)).to.deep.equal(['graph.nodes[book].inputs.phone']);
    expect(validatePlaybookGraph(g, { ...ctxWith(), initialVariables: new Set(['phone']) })).to.deep.equal([]);
  });
});

describe('agents domain: skill config validation', () => {
  it('names the config field that breaks the type schema', () => {
    const errors = skillConfigErrors('http_request', { url: 'http://insecure.example.com', method: 'FETCH' });
    expect(errors.map((e) => e.field).sort()).to.deep.equal(['config.method', 'config.url']);
  });
  it('answers an unknown type on `type`', () => {
    expect(skillConfigErrors('teleport', {})[0].field).to.equal('type');
  });
});

describe('agents domain: compile', () => {
  it('resolves a valid draft into a snapshot with no errors and a stable checksum', () => {
    const r = compileDraft(bundle());
    expect(r.errors).to.deep.equal([]);
    expect(r.snapshot.voice).to.deep.equal({ id: 'voice_ava', name: 'Ava', provider: 'sandbox' });
    expect(r.snapshot.skills.map((s) => s.name)).to.deep.equal(['book_appointment']);
    expect(r.snapshot.guardrails.redactPii).to.equal(true);
    expect(snapshotChecksum(r.snapshot)).to.equal(snapshotChecksum(compileDraft(bundle()).snapshot));
  });

  it('reports playbook and skill errors with deep field paths', () => {
    const bad = bundle({ skills: [{ ...BOOK, config: { ...BOOK.config, url: 'ftp://x' } }] });
    bad.playbooks[0].graph.nodes.push({ id: 'lost', type: 'end' });
    const fields = compileDraft(bad).errors.map((e) => e.field);
    expect(fields).to.include('skills[book_appointment].config.url');
    expect(fields).to.include('playbooks[intake].graph.nodes[lost]');
  });

  it('uses the language default voice with a warning when none is chosen', () => {
    const r = compileDraft(bundle({ agent: agentRecord({ voiceId: null, language: 'de-DE' }) }));
    expect(r.snapshot.voice?.id).to.equal('voice_hans');
    expect(r.warnings.map((w) => w.code)).to.include('default_voice');
  });

  it('keeps only ready knowledge sources in the snapshot and warns about the rest', () => {
    const r = compileDraft(
      bundle({
        knowledge: [
          { id: 'ks_a', kind: 'url', title: 'FAQ', status: 'ready', chunkCount: 12 },
          { id: 'ks_b', kind: 'file', title: 'Prices.pdf', status: 'failed', chunkCount: 0 },
        ],
      }),
    );
    expect(r.snapshot.knowledge.map((k) => k.id)).to.deep.equal(['ks_a']);
    expect(r.warnings.map((w) => w.code)).to.include('knowledge_failed');
  });

  it('canonical JSON sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).to.equal('{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}');
  });
});

describe('agents domain: diff', () => {
  it('keys named arrays by name and gives deep readable paths', () => {
    const before = compileDraft(bundle()).snapshot;
    const b2 = bundle({ skills: [{ ...BOOK, config: { ...BOOK.config, url: 'https://cal.example.com/v2' } }] });
    b2.playbooks[0].graph.nodes[1].prompt = 'What is your full name?';
    b2.agent.greeting = null;
    const entries = diffSnapshots(before, compileDraft(b2).snapshot);
    expect(entries).to.deep.include({ field: 'skills[book_appointment].config.url', before: 'https://cal.example.com/book', after: 'https://cal.example.com/v2', kind: 'changed' });
    expect(entries).to.deep.include({ field: 'playbooks[intake].graph.nodes[ask_name].prompt', before: 'Your name?', after: 'What is your full name?', kind: 'changed' });
    expect(entries).to.deep.include({ field: 'greeting', before: 'Hello!', after: null, kind: 'changed' });
  });

  it('reports whole named things as added or removed', () => {
    const before = compileDraft(bundle()).snapshot;
    const extra = { id: 'skl_2', name: 'hang_up', type: 'end_call', description: null, config: {} };
    const after = compileDraft(bundle({ skills: [BOOK, extra], playbooks: [] })).snapshot;
    const entries = diffSnapshots(before, after);
    expect(entries.find((e) => e.field === 'skills[hang_up]')).to.include({ kind: 'added' });
    expect(entries.find((e) => e.field === 'playbooks[intake]')).to.include({ kind: 'removed' });
    expect(entries.find((e) => e.field === 'playbooks[intake]')).to.not.have.property('after');
  });

  it('is empty for equal snapshots', () => {
    expect(diffSnapshots(compileDraft(bundle()).snapshot, compileDraft(bundle()).snapshot)).to.deep.equal([]);
  });
});

describe('agents domain: voicemail message', () => {
  it('compiles the voicemail message with organization variables in place, keeps agent variables for the call, and says it in the report', () => {
    const b = bundle({
      agent: agentRecord({ voicemailMessage: 'This is {{vars.clinic}} for {{first_name}}. Please call back.' }),
      orgVariables: [{ id: 'var_1', name: 'clinic', secret: false, value: 'Acme Dental' }],
    });
    const { snapshot, errors } = compileDraft(b);
    expect(errors).to.deep.equal([]);
    expect(snapshot.voicemailMessage).to.equal('This is Acme Dental for {{first_name}}. Please call back.');
    expect(buildPrepublishReport(b).willSay).to.include('Leaves on answering machines (campaign calls): "This is Acme Dental for {{first_name}}. Please call back."');
    expect(compileDraft(bundle()).snapshot.voicemailMessage).to.equal(null);
  });

  it('refuses a secret organization variable in the voicemail message, naming the field', () => {
    const b = bundle({ agent: agentRecord({ voicemailMessage: 'Code {{vars.token}}' }), orgVariables: [{ id: 'var_2', name: 'token', secret: true, value: null }] });
    expect(compileDraft(b).errors.map((e) => e.field)).to.deep.equal(['voicemailMessage']);
  });
});

describe('agents domain: pre-publish report', () => {
  it('lists data flows, guardrails, coverage and blocking errors', () => {
    const b = bundle({
      agent: agentRecord({ guardrails: { blockedTopics: ['medical advice'], redactPii: true }, callerVerification: { enabled: true, method: 'pin', requiredForSkills: ['book_appointment'] } }),
      knowledge: [
        { id: 'ks_a', kind: 'url', title: 'FAQ', status: 'ready', chunkCount: 12 },
        { id: 'ks_b', kind: 'text', title: 'Notes', status: 'pending', chunkCount: 0 },
      ],
    });
    const r = buildPrepublishReport(b);
    expect(r.dataLeavingSystem).to.deep.equal([
      { skill: 'book_appointment', type: 'book_appointment', destination: 'cal.example.com', fields: ['name', 'phone', 'email', 'start_time'], requiresVerifiedCaller: true },
    ]);
    expect(r.willNotSay).to.include('Will not discuss: medical advice');
    expect(r.willSay[0]).to.equal('Greets callers with: "Hello!"');
    expect(r.willSay).to.include('Looks callers up in Records by their number or email and asks for their PIN (field "pin", 3 attempts)');
    expect(r.activeGuardrails.map((g) => g.name)).to.include.members(['blockedTopics', 'redactPii']);
    expect(r.knowledgeCoverage).to.deep.equal({ sourcesByStatus: { pending: 1, processing: 0, ready: 1, failed: 0 }, totalSources: 2, chunkCount: 12 });
    expect(r.blockingErrors).to.deep.equal([]);
  });

  it('warns about caller verification the runtime cannot carry out as configured', () => {
    const codes = (cv: Record<string, unknown>, dtmf = { enabled: false }) =>
      compileDraft(bundle({ agent: agentRecord({ callerVerification: cv, dtmf }) })).warnings.map((w) => w.code);
    expect(codes({ enabled: true, method: 'sms_otp' })).to.include('caller_verification_unsupported');
    expect(codes({ enabled: true, method: 'pin' })).to.include('pin_without_keypad');
    expect(codes({ enabled: true, method: 'pin' }, { enabled: true })).to.not.include.members(['pin_without_keypad', 'caller_verification_unsupported']);
    expect(codes({ enabled: true, method: 'caller_id' })).to.not.include.members(['pin_without_keypad', 'caller_verification_unsupported']);
  });

  it('carries the errors a publish would answer', () => {
    const r = buildPrepublishReport(bundle({ skills: [] }));
    expect(r.blockingErrors.map((e) => e.field)).to.include('playbooks[intake].graph.nodes[book].skill');
  });
});

describe('agents domain: talk tokens', () => {
  const secret = Buffer.alloc(32, 7);
  const claims = { v: 1 as const, org: 'org_1', agt: 'agt_1', ver: 'ver_1', dv: null, ch: 'voice' as const, exp: 2_000, jti: 'j' };
  it('verifies its own signature before expiry', () => {
    expect(verifyTalkToken(signTalkToken(claims, secret), secret, 1_000)).to.deep.equal(claims);
  });
  it('refuses an expired, forged or re-signed token', () => {
    const t = signTalkToken(claims, secret);
    expect(verifyTalkToken(t, secret, 2_000)).to.equal(undefined);
    expect(verifyTalkToken(t, Buffer.alloc(32, 8), 1_000)).to.equal(undefined);
    const forged = `tt_${Buffer.from(JSON.stringify({ ...claims, agt: 'agt_2' })).toString('base64url')}.${t.split('.')[1]}`;
    expect(verifyTalkToken(forged, secret, 1_000)).to.equal(undefined);
  });
});
