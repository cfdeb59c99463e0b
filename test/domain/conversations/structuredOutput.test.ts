/**
 * A caller's `response_format` checked with ajv (domain/conversations/structuredOutput.ts; OpenAI API reference
 * "Structured Outputs"), and a caller's sampling over the agent's model settings (runtime `modelRequestSettings`).
 */
import { expect } from 'chai';
import { compileAnswerSchema, structuredOutputProblem } from '../../../domain/conversations/structuredOutput';
import { modelRequestSettings } from '../../../domain/conversations/runtime';
import type { CompiledAgent } from '../../../domain/agents/compile';

describe('structured output and caller sampling (domain)', () => {
  const format = { type: 'json_schema' as const, name: 'booking', schema: { type: 'object', properties: { nights: { type: 'integer' } }, required: ['nights'] } };

  it('accepts a conforming object and names what is wrong otherwise', () => {
    expect(structuredOutputProblem('{"nights":2}', format)).to.equal(null);
    expect(structuredOutputProblem('{"nights":"two"}', format)).to.equal('/nights must be integer');
    expect(structuredOutputProblem('{}', format)).to.equal("(answer) must have required property 'nights'");
    expect(structuredOutputProblem('not json', 'json_object')).to.equal('the answer is not JSON');
    expect(structuredOutputProblem('[1]', 'json_object')).to.equal('the answer is not a JSON object');
    expect(structuredOutputProblem('{"a":1}', 'json_object')).to.equal(null);
  });

  it('says why a schema cannot be compiled', () => {
    expect(compileAnswerSchema({ type: 'nope' })).to.be.a('string');
  });

  it('lets a caller override sampling but never raise the agent\'s token limit', () => {
    const agent = { model: 'gpt-x', temperature: 0.7, maxTokens: 100 } as unknown as CompiledAgent;
    expect(modelRequestSettings(agent, { temperature: 0.1, maxTokens: 500, seed: 3, stop: ['END'] })).to.deep.equal({ model: 'gpt-x', temperature: 0.1, maxTokens: 100, seed: 3, stop: ['END'] });
    expect(modelRequestSettings(agent, { maxTokens: 20 }).maxTokens).to.equal(20);
    expect(modelRequestSettings({} as CompiledAgent, { maxTokens: 20 }).maxTokens).to.equal(20);
  });
});
