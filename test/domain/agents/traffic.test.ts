/** The traffic split rules (domain/agents/traffic.ts): the weighted sticky pick and the field checks of a split. */
import { expect } from 'chai';
import { defaultSplit, pickVersion, splitErrors, splitShapeErrors, stickyPoint, type TrafficSplitRule } from '../../../domain/agents/traffic';

const SPLIT: TrafficSplitRule = { splits: [{ versionId: 'ver_a', percent: 90 }, { versionId: 'ver_b', percent: 10 }], stickiness: 'counterpart' };

describe('traffic split rules', () => {
  it('maps a key to a stable point in [0, 100) that depends on the agent', () => {
    const p = stickyPoint('agt_one', '+12065550123');
    expect(p).to.be.at.least(0).and.below(100);
    expect(stickyPoint('agt_one', '+12065550123')).to.equal(p);
    expect(stickyPoint('agt_two', '+12065550123')).to.not.equal(p);
  });

  it('picks by the cumulative shares: a fixed agent puts 1,000 keys 90/10 within 3 points (88.3 %), each key on one version', () => {
    let a = 0;
    for (let i = 0; i < 1000; i++) {
      const v = pickVersion(SPLIT, 'agt_fixed', `customer-${i}`);
      expect(pickVersion(SPLIT, 'agt_fixed', `customer-${i}`)).to.equal(v);
      if (v === 'ver_a') a++;
    }
    expect(a / 10).to.equal(88.3); // deterministic: SHA-256 of fixed inputs
    expect(a / 10).to.be.within(87, 93);
  });

  it('picks at random without a key or with stickiness none, and by the random draw at the edges', () => {
    expect(pickVersion(SPLIT, 'agt_x', null, () => 0)).to.equal('ver_a');
    expect(pickVersion(SPLIT, 'agt_x', null, () => 0.8999)).to.equal('ver_a');
    expect(pickVersion(SPLIT, 'agt_x', null, () => 0.9)).to.equal('ver_b');
    expect(pickVersion(SPLIT, 'agt_x', '', () => 0.95)).to.equal('ver_b');
    expect(pickVersion({ ...SPLIT, stickiness: 'none' }, 'agt_x', 'customer-1', () => 0.99)).to.equal('ver_b');
    expect(pickVersion(defaultSplit('ver_live'), 'agt_x', 'anyone')).to.equal('ver_live');
    expect(() => pickVersion({ splits: [], stickiness: 'none' }, 'agt_x', null)).to.throw();
  });

  it('names each offending field: percent out of range or fractional, a repeated version, a foreign version, a sum other than 100', () => {
    const known = new Set(['ver_a', 'ver_b']);
    expect(splitErrors(SPLIT.splits, known)).to.deep.equal([]);
    expect(splitErrors([{ versionId: 'ver_a', percent: 60 }, { versionId: 'ver_b', percent: 30 }], known)).to.deep.equal([{ field: 'splits', message: 'the percents must sum to 100 (they sum to 90)' }]);
    expect(splitErrors([{ versionId: 'ver_a', percent: 50 }, { versionId: 'ver_a', percent: 50 }], known).map((e) => e.field)).to.deep.equal(['splits.1.versionId']);
    expect(splitErrors([{ versionId: 'ver_z', percent: 100 }], known)).to.deep.equal([{ field: 'splits.0.versionId', message: 'is not a published version of this agent' }]);
    expect(splitErrors([{ versionId: 'ver_a', percent: 0 }, { versionId: 'ver_b', percent: 100 }], known).map((e) => e.field)).to.deep.equal(['splits.0.percent']);
    expect(splitShapeErrors({ splits: [{ versionId: 'ver_a', percent: 99.5 }, { versionId: 'ver_b', percent: 0.5 }] }).map((e) => e.field)).to.deep.equal(['splits.0.percent', 'splits.1.percent']);
    expect(splitShapeErrors({ splits: 'nope' })).to.deep.equal([]);
    expect(splitShapeErrors({ splits: [null, 3] }).map((e) => e.field)).to.deep.equal(['splits.0.percent', 'splits.1.percent']);
  });
});
