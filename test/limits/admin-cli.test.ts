// The limits commands of the operator CLI, on the data directory (in-process; test/cli/admin.test.ts covers the CLI as a process):
// set-plan, usage, hold, release-hold and the platform-wide pause of new senders.
import t from 'tap';
import { rmSync } from 'node:fs';
import { makeDataDir } from '../helpers/app.js';
import { openDatabase } from '../../src/db/index.js';
import { adminJson, adminInProcess } from '../helpers/admin-cli.js';

t.setTimeout(300_000);

t.test('limits commands', async (t) => {
  const dir = makeDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const team = adminJson<{ team_id: string }>(t, await adminInProcess(dir, 'teams', 'create', '--name', 'Acme', '--plan', 'free', '--owner', 'a@b.test'), 'teams create');
  const db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  await db('team_usage').insert({ team_id: team.team_id, month: new Date().toISOString().slice(0, 7), sent: 12_345 });
  await db('team_send_state').insert({ team_id: team.team_id, held_at: new Date().toISOString(), hold_reason: 'more than 10 external sends in the account\'s first hour' });

  const [planned, hold, bad, pause] = await Promise.all([
    adminInProcess(dir, 'teams', 'set-plan', '--team', team.team_id, '--plan', 'starter'),
    adminInProcess(dir, 'teams', 'hold', '--team', team.team_id),
    adminInProcess(dir, 'teams', 'set-plan', '--team', team.team_id, '--plan', 'gold'),
    adminInProcess(dir, 'platform', 'pause-new-senders', 'on'),
  ]);
  t.match(adminJson(t, planned, 'set-plan'), { team_id: team.team_id, plan: 'starter' });
  t.match(adminJson(t, hold, 'hold'), { team_id: team.team_id, on_hold: true, hold_reason: /first hour/ });
  t.equal(bad.code, 2, 'an unknown plan is a usage error');
  t.match(bad.stderr, /--plan must be one of free, starter, pro, scale, enterprise/);
  t.same(adminJson(t, pause, 'pause on'), { pause_new_senders: true });
  t.equal((await db('platform_settings').where({ key: 'send_limit_exceeded' }).first('value')).value, 'on');

  const usage = adminJson<Record<string, unknown>>(t, await adminInProcess(dir, 'teams', 'usage', '--team', team.team_id), 'usage');
  t.match(usage, { plan: 'starter', sent: 12_345, allowance: 10_000, overage: 2345, overage_cost_eur: 0.59, on_hold: true });

  const released = adminJson<Record<string, unknown>>(t, await adminInProcess(dir, 'teams', 'release-hold', '--team', team.team_id), 'release-hold');
  t.match(released, { on_hold: false, held_at: null, reviewed_at: /^\d{4}-/ });
  t.equal((await db('team_send_state').where({ team_id: team.team_id }).first('held_at')).held_at, null, 'the hold is gone from the store');
  // Again, with no hold: refused, and the team is not marked reviewed (that would exempt it from holds).
  const again = await adminInProcess(dir, 'teams', 'release-hold', '--team', team.team_id);
  t.equal(again.code, 1);
  t.match(again.stderr, /Team is not on hold/);
  t.equal((await db('team_send_state').where({ team_id: team.team_id }).first('reviewed_at')).reviewed_at, released.reviewed_at, 'reviewed_at unchanged');

  t.same(adminJson(t, await adminInProcess(dir, 'platform', 'pause-new-senders', 'off'), 'pause off'), { pause_new_senders: false });
  const missing = await adminInProcess(dir, 'teams', 'release-hold', '--team', 'nope');
  t.equal(missing.code, 1);
  t.match(missing.stderr, /Team not found/);
});
