import type { Storyboard, TestKit } from './bundle';

/**
 * A compliance bundle as events: one per storyboard and test kit (so no single event outgrows a
 * Kafka message), then the bundle marker with its hash, which an unchanged restart finds and skips.
 * A bundle that cannot be read is recorded too: its version then answers 500, not 404.
 */
export type StoryboardEvent =
  | { readonly type: 'StoryboardImported'; readonly data: { readonly adcp_version: string; readonly ord: number; readonly storyboard: Storyboard } }
  | { readonly type: 'TestKitImported'; readonly data: { readonly adcp_version: string; readonly kit: TestKit } }
  | { readonly type: 'StoryboardBundleImported'; readonly data: { readonly adcp_version: string; readonly source: string; readonly hash: string; readonly storyboards: number; readonly test_kits: number; readonly at: string } }
  | { readonly type: 'StoryboardBundleFailed'; readonly data: { readonly adcp_version: string; readonly source: string; readonly error: string; readonly at: string } };

export const bundleStream = (adcpVersion: string) => `storyboard-bundle-${adcpVersion}`;
