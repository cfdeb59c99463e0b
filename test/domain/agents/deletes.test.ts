/** The rules of the deletes (domain/agents/deletes.ts; docs/api-notes.md "Deletes"). */
import { expect } from 'chai';
import { campaignHoldsAgent, knowledgeSourceDeletable, numberReleaseBlocker } from '../../../domain/agents/deletes';

describe('delete rules', () => {
  it('keeps an agent while one of its campaigns is running or paused, not once it is a draft, completed or cancelled', () => {
    expect(['draft', 'running', 'paused', 'completed', 'cancelled'].filter(campaignHoldsAgent)).to.deep.equal(['running', 'paused']);
  });

  it('deletes a knowledge source only once its ingestion stopped writing (ready or failed)', () => {
    expect(['pending', 'processing', 'ready', 'failed'].filter(knowledgeSourceDeletable)).to.deep.equal(['ready', 'failed']);
  });

  it('refuses to release a number an agent still answers', () => {
    expect(numberReleaseBlocker({ status: 'purchased', agentId: 'agt_1' })).to.equal('number_assigned');
    expect(numberReleaseBlocker({ status: 'purchased', agentId: null })).to.equal(null);
    expect(numberReleaseBlocker({ status: 'reserved', agentId: null })).to.equal(null);
  });
});
