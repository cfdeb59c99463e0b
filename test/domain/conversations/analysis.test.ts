/**
 * The pure part of the post-conversation analysis (domain/conversations/analysis.ts, docs/api-notes.md
 * "Conversation analysis") and the sandbox LLM's rule 0: field rules at save, value checks per type, reading a model's answer.
 */
import { expect } from 'chai';
import { analysisFieldErrors, checkFieldValue, isIsoDate, parseAnalysis } from '../../../domain/conversations/analysis';
import { sandboxAnalysis } from '../../../providers/llm/sandboxJudging';
import type { AnalysisField } from '../../../schemas/types/agents';

const FIELDS: AnalysisField[] = [
  { name: 'when', type: 'date' },
  { name: 'count', type: 'number' },
  { name: 'ok', type: 'boolean' },
  { name: 'tier', type: 'enum', values: ['gold', 'silver'] },
  { name: 'note', type: 'string' },
];

describe('conversation analysis (domain)', () => {
  it('checks fields at save: repeated names, enum without values, values on another type, repeated values', () => {
    expect(analysisFieldErrors(FIELDS)).to.deep.equal([]);
    expect(
      analysisFieldErrors([
        { name: 'a', type: 'enum' },
        { name: 'a', type: 'string', values: ['x'] },
        { name: 'b', type: 'enum', values: ['x', 'x'] },
      ]).map((e) => e.field),
    ).to.deep.equal(['analysis.fields[a].values', 'analysis.fields[a]', 'analysis.fields[a].values', 'analysis.fields[b].values']);
  });

  it('keeps values of the right type and drops the others with a note', () => {
    expect(checkFieldValue(FIELDS[0], '2028-02-29')).to.deep.equal({ value: '2028-02-29' });
    expect(checkFieldValue(FIELDS[0], '2027-02-29')).to.have.property('note');
    expect(checkFieldValue(FIELDS[0], 'tomorrow')).to.deep.equal({ note: 'when: dropped "tomorrow" (not a YYYY-MM-DD date)' });
    expect(checkFieldValue(FIELDS[1], 3)).to.deep.equal({ value: 3 });
    expect(checkFieldValue(FIELDS[1], '3')).to.have.property('note');
    expect(checkFieldValue(FIELDS[2], false)).to.deep.equal({ value: false });
    expect(checkFieldValue(FIELDS[2], 'yes')).to.have.property('note');
    expect(checkFieldValue(FIELDS[3], 'gold')).to.deep.equal({ value: 'gold' });
    expect(checkFieldValue(FIELDS[3], 'Gold')).to.have.property('note');
    expect(checkFieldValue(FIELDS[4], '  ')).to.have.property('note');
    expect(isIsoDate('2026-13-01')).to.equal(false);
  });

  it('reads an answer: unknown outcome and sentiment replaced with notes, unknown fields ignored, a fenced answer accepted, non-JSON refused', () => {
    const r = parseAnalysis('```json\n{"summary":" s ","outcome":"great","sentiment":"meh","fields":{"count":2,"extra":1,"tier":null}}\n```', FIELDS);
    expect(r).to.deep.equal({
      summary: 's',
      outcome: 'unresolved',
      sentiment: 'neutral',
      fields: { count: 2 },
      notes: ['outcome: "great" is not a known outcome; unresolved recorded', 'sentiment: "meh" is not a known sentiment; neutral recorded'],
    });
    expect(() => parseAnalysis('Sure! The caller was happy.', FIELDS)).to.throw('did not answer with JSON');
    expect(() => parseAnalysis('[1]', FIELDS)).to.throw('JSON object');
  });

  it('sandbox rule 0 is deterministic: transferred, abandoned, resolved, unresolved; sentiment by word count; fields read from user lines', () => {
    const transcript = [
      { speaker: 'agent' as const, text: 'Hello' },
      { speaker: 'user' as const, text: 'This is terrible, count: 4, tier: gold, when: 2026-05-01' },
    ];
    const a = sandboxAnalysis({ transcript, fields: FIELDS, endReason: 'ended_by_user' });
    expect(a).to.deep.equal({
      summary: 'The user wrote 1 message(s), first: "This is terrible, count: 4, tier: gold, when: 2026-05-01"; the agent answered 1 time(s); ended: ended_by_user.',
      outcome: 'unresolved',
      sentiment: 'negative',
      fields: { when: '2026-05-01', count: 4, tier: 'gold' },
    });
    expect(sandboxAnalysis({ transcript, fields: [], endReason: 'transferred' }).outcome).to.equal('transferred');
    expect(sandboxAnalysis({ transcript: transcript.slice(0, 1), fields: FIELDS, endReason: null })).to.deep.equal({ summary: 'The user said nothing; ended: unknown.', outcome: 'abandoned', sentiment: 'neutral', fields: {} });
    expect(sandboxAnalysis({ transcript: [...transcript, { speaker: 'user', text: 'ok thanks, bye' }], fields: [], endReason: 'ended_by_user' })).to.include({ outcome: 'resolved', sentiment: 'neutral' });
  });
});
