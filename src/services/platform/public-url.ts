// Where people and their clients reach the box's public pages and links (unsubscribe, tracking, MCP's OAuth
// metadata): MAIL_PUBLIC_URL, else https://<MAIL_HOSTNAME>.
import type { AppContext } from '../../context.js';

export const publicBaseUrl = (ctx: AppContext): string => ctx.config.publicUrl ?? `https://${ctx.config.hostname}`;
