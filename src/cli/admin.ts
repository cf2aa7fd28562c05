// The operator CLI's entry point (`npm run -s admin -- …`, scripts/launch.mjs runs dist/cli/admin.js): the
// commands are in admin-cli.ts, which tests also run in-process.
import { main } from './admin-cli.js';

process.exitCode = await main(process.argv.slice(2));
