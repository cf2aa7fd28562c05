// The only source of "now". Services read ctx.clock, never Date.now(), so tests can move time.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = {
  now: () => new Date(),
};

/** A clock that stands still until a test moves it. */
export class FakeClock implements Clock {
  private ms: number;

  constructor(start: Date | string | number = '2026-01-01T00:00:00.000Z') {
    this.ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  advance(ms: number): Date {
    this.ms += ms;
    return this.now();
  }

  set(at: Date | string | number): Date {
    this.ms = new Date(at).getTime();
    return this.now();
  }
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
