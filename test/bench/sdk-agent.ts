/**
 * The bench's reference agent: a seller built with `@adcp/sdk`'s own server framework
 * (`createAdcpServerFromPlatform`, its idempotency store and task registry, all in memory), doing
 * the create_media_buy the gateway does, minus durability: check the packages against a catalog,
 * assign ids, keep the buy in a Map. Served over MCP Streamable HTTP on 127.0.0.1 the way the
 * SDK's `serve()` does (a fresh agent per request), but bound to loopback. Runs as its own process
 * (the SDK refuses in-memory stores unless NODE_ENV is development or test); prints its URL.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';

async function main(): Promise<void> {
  const sdk = require('@adcp/sdk/server') as Record<string, any>;
  const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js') as { StreamableHTTPServerTransport: new (o: object) => any };
  const catalog = new Map([['news_display_run_of_site', { pricing_option_id: 'cpm_usd_fixed', price: 8.5 }]]);
  const buys = new Map<string, unknown>();
  const platform = {
    capabilities: { specialisms: ['sales-non-guaranteed'], channels: ['display'], pricingModels: ['cpm'], config: {} },
    accounts: { resolve: async () => ({ id: 'acc_bench', ctx_metadata: {} }) },
    sales: {
      getProducts: async () => ({ products: [] }),
      createMediaBuy: async (req: { packages?: { product_id: string; pricing_option_id: string; budget: number }[]; end_time: string }) => {
        const packages = req.packages ?? [];
        if (packages.length === 0) throw new sdk.AdcpError('INVALID_REQUEST', { message: 'packages required', field: 'packages', recovery: 'correctable' });
        packages.forEach((p, i) => {
          const product = catalog.get(p.product_id);
          if (!product) throw new sdk.AdcpError('PRODUCT_NOT_FOUND', { message: 'unknown product', field: `packages[${i}].product_id`, recovery: 'correctable' });
          if (product.pricing_option_id !== p.pricing_option_id || !(p.budget > 0)) throw new sdk.AdcpError('INVALID_REQUEST', { message: 'bad package', field: `packages[${i}]`, recovery: 'correctable' });
        });
        const id = `mb_${randomUUID()}`;
        const out = { media_buy_id: id, status: 'pending_creatives', confirmed_at: new Date().toISOString(), revision: 1, packages: packages.map((p, i) => ({ package_id: `${id}_${i}`, product_id: p.product_id, budget: p.budget })) };
        buys.set(id, out);
        return out;
      },
    },
  };
  const idempotency = sdk.createIdempotencyStore({ backend: sdk.memoryBackend(), ttlSeconds: 86_400 });
  const taskRegistry = sdk.createInMemoryTaskRegistry();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const agent = sdk.createAdcpServerFromPlatform(platform, { name: 'sdk-reference-seller', version: '1.0.0', idempotency, taskRegistry });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        res.on('close', () => void transport.close());
        await agent.connect(transport);
        await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
      })().catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
    });
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
  });
  // Bounded: the bench stops it, and it stops itself after ten minutes regardless.
  setTimeout(() => process.exit(0), 600_000).unref();
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

if (require.main === module) void main();
