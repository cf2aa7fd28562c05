import { startAppliance } from '../src/appliance.js';
import { testConfig } from '../test/helpers/app.js';
import { systemClock } from '../src/core/clock.js';
import { LeanHttpClient } from './bench-client.js';
const app = await startAppliance({ config: testConfig({ logLevel: 'warn' }), clock: systemClock });
const port = app.ports.api.port;
const c = new LeanHttpClient('127.0.0.1', port, 32, []);
async function run(path: string, n: number) {
  let next = 0; const t0 = performance.now(); const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: 32 }, async () => { while (next < n) { next++; await c.get(path, ['User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120']); } }));
  const cpu = process.cpuUsage(cpu0);
  console.log(path.slice(0, 30), (n / ((performance.now() - t0) / 1000)).toFixed(0), '/s; cpu µs/req', ((cpu.user + cpu.system) / n).toFixed(0));
}
await run('/track/open/' + 'a'.repeat(48), 5000);
await run('/track/open/' + 'a'.repeat(48), 20000);
await run('/health', 20000);
await run('/nope', 20000);
c.close(); await app.stop(); process.exit(0);
