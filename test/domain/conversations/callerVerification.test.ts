/**
 * The pure rules of caller verification (docs/api-notes.md "Caller verification"): which identity a conversation
 * carries, the outcome of a Records lookup, PIN answers and attempts, skills reserved to verified callers.
 */
import { expect } from 'chai';
import {
  callerIdentity,
  pinDigits,
  pinStep,
  skillAllowed,
  startVariables,
  type VerificationRecord,
} from '../../../domain/conversations/callerVerification';
import type { CallerVerification } from '../../../schemas/types/guardrails';

const cv = (over: Partial<CallerVerification> = {}): CallerVerification => ({ enabled: true, method: 'pin', requiredForSkills: [], maxAttempts: 3, ...over });
const grace: VerificationRecord = { id: 'rec_1', name: 'Grace', email: 'g@example.com', phone: '+12065550100', hasPin: true };

describe('caller verification rules', () => {
  it('takes the counterpart on voice and sms, else the session phone or email; malformed values are no identity', () => {
    expect(callerIdentity('voice', '+12065550100', { phone: '+14155550100' })).to.deep.equal({ phone: '+12065550100' });
    expect(callerIdentity('sms', '+12065550100', {})).to.deep.equal({ phone: '+12065550100' });
    expect(callerIdentity('chat', '+12065550100', { phone: '+14155550100' })).to.deep.equal({ phone: '+14155550100' });
    expect(callerIdentity('web', undefined, { email: ' a@b.co ' })).to.deep.equal({ email: 'a@b.co' });
    expect(callerIdentity('chat', undefined, { phone: '555-0100', email: 'nope' })).to.deep.equal({});
    expect(callerIdentity('voice', 'anonymous', {})).to.deep.equal({});
  });

  it('maps a lookup to its outcome: verified, PIN due, not found, shared identity, record without PIN, unsupported method', () => {
    const id = { phone: grace.phone! };
    expect(startVariables(cv({ method: 'caller_id' }), id, [grace])).to.deep.equal({
      caller_verified: 'true',
      caller_verification: 'verified',
      caller_record_id: 'rec_1',
      caller_name: 'Grace',
      caller_email: 'g@example.com',
    });
    expect(startVariables(cv(), id, [grace])).to.deep.equal({ caller_verified: 'false', caller_verification: 'pin_required', caller_pin_attempts: '0' });
    expect(startVariables(cv(), id, [])).to.include({ caller_verification: 'not_found' });
    expect(startVariables(cv({ method: 'caller_id' }), id, [grace, { ...grace, id: 'rec_2' }])).to.include({ caller_verified: 'false', caller_verification: 'ambiguous' });
    expect(startVariables(cv(), id, [{ ...grace, hasPin: false }])).to.include({ caller_verification: 'no_pin' });
    expect(startVariables(cv(), {}, [])).to.include({ caller_verification: 'no_identity' });
    expect(startVariables(cv({ method: 'sms_otp' }), id, [grace])).to.include({ caller_verified: 'false', caller_verification: 'unsupported_method' });
  });

  it('reads a PIN answer as digits (spaces, dashes, a trailing #), and nothing else as one', () => {
    expect(pinDigits(' 43-21 #')).to.equal('4321');
    expect(pinDigits('4321#')).to.equal('4321');
    expect(pinDigits('my pin is 4321')).to.equal(null);
    expect(pinDigits('12')).to.equal(null);
  });

  it('counts failed attempts and hands off at maxAttempts; a match verifies', () => {
    const one = pinStep(cv({ maxAttempts: 2 }), 'chat', { caller_pin_attempts: '0' }, null);
    expect(one).to.deep.include({ escalate: false, variables: { caller_pin_attempts: '1' } });
    expect(one.reply).to.contain('1 attempt left').and.contain('please type your PIN');
    const two = pinStep(cv({ maxAttempts: 2 }), 'chat', { caller_pin_attempts: '1' }, null);
    expect(two).to.deep.include({ escalate: true, variables: { caller_verified: 'false', caller_verification: 'failed', caller_pin_attempts: '2' } });
    expect(pinStep(cv(), 'voice', {}, grace)).to.deep.include({ escalate: false, reply: 'Thank you, Grace, you are verified. How can I help?' });
  });

  it('runs a skill in requiredForSkills only for a verified caller, and only while verification is enabled', () => {
    const c = cv({ requiredForSkills: ['refund'] });
    expect(skillAllowed(c, 'refund', { caller_verified: 'false' })).to.equal(false);
    expect(skillAllowed(c, 'refund', {})).to.equal(false);
    expect(skillAllowed(c, 'refund', { caller_verified: 'true' })).to.equal(true);
    expect(skillAllowed(c, 'lookup', {})).to.equal(true);
    expect(skillAllowed({ ...c, enabled: false }, 'refund', {})).to.equal(true);
  });
});
