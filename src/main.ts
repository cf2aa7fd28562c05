// `npm start`: load the configuration, start the appliance, stop cleanly on SIGTERM/SIGINT.
import { ConfigError, loadConfig } from './config.js';
import { startAppliance } from './appliance.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const appliance = await startAppliance({ config });
  const { bootstrap } = appliance;
  if (bootstrap && !bootstrap.fromConfig) {
    // Printed once, outside the structured log, so an operator can copy it from the first start's output.
    process.stdout.write(
      [
        '',
        '  First start: created the default team and its API key (shown only this once):',
        '',
        `    ${bootstrap.issued.token}`,
        '',
        `  Try: curl -H "Authorization: Bearer ${bootstrap.issued.token}" http://localhost:${appliance.ports.api.port}/domains`,
        '',
      ].join('\n') + '\n',
    );
  } else if (bootstrap) {
    appliance.ctx.log.info({ team: bootstrap.team.id }, 'first start: default team created with MAIL_BOOTSTRAP_API_KEY');
  }

  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) process.exit(1); // a second signal: stop waiting
    appliance.ctx.log.info({ signal }, 'shutting down');
    appliance.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        appliance.ctx.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`Start-up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
