/** One change-feed entry (the reference registry's feed event shape). */
export interface FeedEntry {
  readonly event_id: string;
  readonly event_type: string;
  readonly entity_type: 'publisher' | 'authorization' | 'brand' | 'storyboards';
  readonly entity_id: string;
  readonly payload: Record<string, unknown>;
  readonly actor: string;
  readonly created_at: string;
}

export type FeedEvent = { readonly type: 'FeedEntryRecorded'; readonly data: FeedEntry };

/** The feed entries derived from one source event live in one stream, appended once. */
export const feedStream = (sourceEventId: string) => `feed-${sourceEventId}`;

/** Days entries stay readable; an older (or unknown) cursor answers 410. */
export const FEED_RETENTION_DAYS = 90;
