// The SDK's own MCP client over real HTTP against the appliance, and readers of its tool results.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Test } from 'tap';
import type { TestApp } from '../helpers/app.js';

export interface ToolAnswer<T = Record<string, unknown>> {
  isError: boolean;
  /** The JSON of the text content (what an agent reads). */
  json: T;
  structured: unknown;
}

export interface McpSession {
  client: Client;
  call<T = Record<string, unknown>>(name: string, args?: Record<string, unknown>): Promise<ToolAnswer<T>>;
}

/** Connects the SDK's Client through its StreamableHTTPClientTransport with `key` as the bearer credential. */
export async function connectMcp(t: Test, app: TestApp, key: string = app.apiKey): Promise<McpSession> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  t.teardown(() => client.close());
  return {
    client,
    async call<T>(name: string, args: Record<string, unknown> = {}) {
      const res = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text?: string }>; structuredContent?: unknown };
      const text = res.content.find((c) => c.type === 'text')?.text ?? 'null';
      return { isError: res.isError === true, json: JSON.parse(text) as T, structured: res.structuredContent };
    },
  };
}
