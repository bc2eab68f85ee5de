import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { loadBundle, readBundle, VERSION_DIR } from '../domain/storyboards/bundle';
import { bundleStream, type StoryboardEvent } from '../domain/storyboards/events';
import type { EventStore, NewEvent } from '../eventstore/port';

/** The bundles `@adcp/sdk` ships (`compliance/cache/<version>/`). */
export function sdkComplianceDirs(): string[] {
  let root: string;
  try {
    root = path.join(path.dirname(require.resolve('@adcp/sdk/package.json')), 'compliance', 'cache');
  } catch {
    return [];
  }
  return fs.existsSync(root) ? fs.readdirSync(root).filter((d) => VERSION_DIR.test(d)).map((d) => path.join(root, d)) : [];
}

/**
 * Imports every compliance bundle as events (start-up, like the catalog): the SDK's, then each
 * COMPLIANCE_DIRS entry. A bundle whose hash is already recorded for its version is skipped;
 * one that cannot be read is recorded as failed (and logged) instead of stopping the gateway.
 */
export async function importComplianceBundles(store: EventStore, dirs: readonly string[], log: Pick<Logger, 'warn' | 'error'>): Promise<void> {
  for (const dir of dirs) {
    const now = new Date().toISOString();
    let events: NewEvent[];
    let version: string;
    try {
      // The hash first: an unchanged bundle is skipped without parsing its YAML.
      const { index, hash } = readBundle(dir);
      version = index.adcp_version;
      const recorded = await store.readStream(bundleStream(version));
      const last = recorded.at(-1) as unknown as StoryboardEvent | undefined;
      if (last?.type === 'StoryboardBundleImported' && last.data.hash === hash) continue;
      const bundle = loadBundle(dir);
      const imported: StoryboardEvent[] = [
        ...bundle.storyboards.map((storyboard, ord): StoryboardEvent => ({ type: 'StoryboardImported', data: { adcp_version: version, ord, storyboard } })),
        ...bundle.test_kits.map((kit): StoryboardEvent => ({ type: 'TestKitImported', data: { adcp_version: version, kit } })),
        { type: 'StoryboardBundleImported', data: { adcp_version: version, source: dir, hash: bundle.hash, storyboards: bundle.storyboards.length, test_kits: bundle.test_kits.length, at: now } },
      ];
      events = imported;
    } catch (err) {
      version = path.basename(dir);
      log.error({ err, dir }, 'compliance bundle unreadable; its version will answer 500');
      events = [{ type: 'StoryboardBundleFailed', data: { adcp_version: version, source: dir, error: (err as Error).message, at: now } }];
    }
    await store.append(bundleStream(version), events.map((e) => ({ type: e.type, data: e.data, metadata: { principal: 'system' } })));
  }
}
