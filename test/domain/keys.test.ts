/** Key rules (domain/keys.ts): origin normalization and matching, scope grants. */
import { expect } from 'chai';
import { normalizeOrigin, originAllowed, parseAllowedOrigins, scopeGrantErrors, scopesBeyond } from '../../domain/keys';

describe('domain/keys', () => {
  it('normalizes origins and refuses paths, wildcards, user info and other schemes', () => {
    expect(normalizeOrigin('https://EXAMPLE.com:443')).to.deep.equal({ origin: 'https://example.com' });
    expect(normalizeOrigin('http://localhost:3000')).to.deep.equal({ origin: 'http://localhost:3000' });
    expect(normalizeOrigin('http://[::1]:8080')).to.deep.equal({ origin: 'http://[::1]:8080' });
    expect(normalizeOrigin('http://localhost:*')).to.deep.equal({ origin: 'http://localhost:*' });
    for (const bad of ['https://example.com/', 'https://*.example.com', 'https://example.com:*', 'ws://example.com', 'https://a@example.com', 'https://', 'null', 'https://example.com#x']) {
      expect(normalizeOrigin(bad), bad).to.have.property('error');
    }
  });

  it('matches an Origin header exactly, and any localhost port only when http://localhost:* is listed', () => {
    const list = parseAllowedOrigins(['https://example.com', 'http://localhost:*']).origins;
    expect(originAllowed('https://example.com', list)).to.equal(true);
    expect(originAllowed('https://example.com:443', list)).to.equal(true);
    expect(originAllowed('http://example.com', list)).to.equal(false);
    expect(originAllowed('https://sub.example.com', list)).to.equal(false);
    expect(originAllowed('http://localhost:5173', list)).to.equal(true);
    expect(originAllowed('http://localhost', list)).to.equal(true);
    expect(originAllowed('https://localhost:5173', list)).to.equal(false);
    expect(originAllowed('null', list)).to.equal(false);
    expect(originAllowed(undefined, list)).to.equal(false);
    expect(originAllowed('http://localhost:5173', ['http://localhost:3000'])).to.equal(false);
  });

  it('names unknown and reserved scopes and the scopes beyond the holder', () => {
    expect(scopeGrantErrors(['agents:read', 'nope', 'escalations:claim']).map((e) => e.field)).to.deep.equal(['scopes.1', 'scopes.2']);
    expect(scopesBeyond(new Set(['agents:read']), ['agents:read', 'sms:read', 'sms:read'])).to.deep.equal(['sms:read']);
  });
});
