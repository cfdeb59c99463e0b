/**
 * temporal.api.testservice.v1.TestService handlers (time skipping), compatible with
 * @temporalio/testing (devserver/README.md "Time skipping").
 */
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import type { Engine } from '../engine';
import { fromMs, toMs } from '../proto';
import { Plain } from '../protoTypes';
import { ServiceError } from '../types';
import { Handlers } from './common';

import tsv = temporal.api.testservice.v1;

/** TestService handlers (time skipping), compatible with @temporalio/testing. */
export function testServiceHandlers(engine: Engine): Handlers {
  // While a test-service sleep waits, started activities do not hold the clock (engine.testSleeps).
  const sleepUntil = (at: number) =>
    new Promise<void>((resolve) => {
      if (at <= engine.clock.now()) return resolve();
      engine.testSleeps++;
      engine.clock.schedule(at, () => {
        engine.testSleeps--;
        resolve();
      });
      engine.scheduleIdleCheck();
    });
  return {
    async LockTimeSkipping() {
      engine.timeSkippingLocks++;
      return {};
    },
    async UnlockTimeSkipping() {
      if (engine.timeSkippingLocks <= 0) throw new ServiceError(Code.FAILED_PRECONDITION, 'Time skipping is not locked');
      engine.timeSkippingLocks--;
      engine.scheduleIdleCheck();
      return {};
    },
    async UnlockTimeSkippingWithSleep(req: Plain<tsv.ISleepRequest>) {
      const at = engine.clock.now() + (toMs(req.duration) ?? 0);
      engine.timeSkippingLocks--;
      try {
        await sleepUntil(at);
      } finally {
        engine.timeSkippingLocks++;
      }
      return {};
    },
    async Sleep(req: Plain<tsv.ISleepRequest>) {
      await sleepUntil(engine.clock.now() + (toMs(req.duration) ?? 0));
      return {};
    },
    async SleepUntil(req: Plain<tsv.ISleepUntilRequest>) {
      await sleepUntil(toMs(req.timestamp) ?? 0);
      return {};
    },
    async GetCurrentTime() {
      return { time: fromMs(engine.clock.now()) };
    },
  };
}
