// `npm start` as a supervisor, `timeout` or `kill %1` runs it: SIGTERM goes to npm, whose script shell
// may be dash (which, unlike bash, forks for a `sh -c` command). The appliance must receive the signal
// and stop: its port closes. The package.json scripts `exec` node so that the shell is replaced by it.
import t from 'tap';
import { rmSync } from 'node:fs';
import { makeDataDir } from '../helpers/app.js';
import { ApplianceProcess, childEnv, connectOnce, until } from '../helpers/process.js';

// npm compiles dist/ first when it is out of date (scripts/launch.mjs): minutes on a loaded machine.
t.setTimeout(600_000);


for (const shell of ['/bin/sh', '/bin/bash']) {
  t.test(`SIGTERM to npm start (script shell ${shell}) stops the appliance`, async (t) => {
    const dir = makeDataDir();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const app = new ApplianceProcess(t, childEnv({ MAIL_DATA_DIR: dir, NPM_CONFIG_SCRIPT_SHELL: shell }), ['npm', 'start']);
    const port = await app.port('api');
    t.equal(await connectOnce(port), 'connected');
    app.signal('SIGTERM'); // to npm, not to node
    await app.exitCode(60_000);
    const refused = await until('the API port to close', async () => ((await connectOnce(port)) === 'ECONNREFUSED' ? true : undefined), 30_000).catch(() => false);
    t.ok(refused, 'the appliance stopped: its API port refuses connections');
  });
}
