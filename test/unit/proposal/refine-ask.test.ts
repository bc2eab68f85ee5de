import { applyAsk } from '../../../src/domain/proposal/refine-ask';
import { proposalDecider, PROPOSAL_HOLD_MS, type Allocation } from '../../../src/domain/proposal/proposal';

const CHANNELS: Record<string, string[]> = { ctv_a: ['ctv', 'video'], video_b: ['video'], display_c: ['display'] };
const channelsOf = (id: string) => CHANNELS[id] ?? [];
const plan: Allocation[] = [
  { product_id: 'ctv_a', pricing_option_id: 'p', allocation_percentage: 40 },
  { product_id: 'video_b', pricing_option_id: 'p', allocation_percentage: 35 },
  { product_id: 'display_c', pricing_option_id: 'p', allocation_percentage: 25 },
];
const shares = (a: Allocation[]) => Object.fromEntries(a.map((x) => [x.product_id, x.allocation_percentage]));
const sum = (a: Allocation[]) => Math.round(a.reduce((s, x) => s + x.allocation_percentage, 0) * 100) / 100;

describe('applyAsk: what the seller understands of a free-text ask on a proposal', () => {
  it('shifts a share to a channel, keeping proportions on both sides', () => {
    const r = applyAsk(plan, 'Shift 60% of the budget to display.', channelsOf);
    expect(shares(r.allocations)).toEqual({ ctv_a: 21.33, video_b: 18.67, display_c: 60 });
    expect(sum(r.allocations)).toBe(100);
    expect(r).toMatchObject({ applied: ['display now has 60% of the budget'], unable: [] });
  });

  it('drops a channel and gives its share to the channel named, or to the rest', () => {
    const to = applyAsk(plan, 'Drop the display product and redistribute that budget to video only', (id) => (id === 'ctv_a' ? ['ctv'] : channelsOf(id)));
    expect(shares(to.allocations)).toEqual({ ctv_a: 40, video_b: 60 });
    const rest = applyAsk(plan, 'remove display', channelsOf);
    expect(shares(rest.allocations)).toEqual({ ctv_a: 53.33, video_b: 46.67 });
    expect(sum(rest.allocations)).toBe(100);
  });

  it('reads 3.0 channel names and synonyms (olv, connected TV, banners)', () => {
    expect(shares(applyAsk(plan, 'put 50% into connected TV', channelsOf).allocations).ctv_a).toBe(50);
    expect(applyAsk(plan, 'exclude banners', channelsOf).allocations.map((a) => a.product_id)).toEqual(['ctv_a', 'video_b']);
  });

  it('applies clauses in order, each on what the last left', () => {
    const r = applyAsk(plan, 'Drop display. Shift 70% to CTV.', (id) => (id === 'ctv_a' ? ['ctv'] : channelsOf(id)));
    expect(shares(r.allocations)).toEqual({ ctv_a: 70, video_b: 30 });
    expect(r.applied).toHaveLength(2);
  });

  it('says what it could not do, and changes nothing for it', () => {
    const r = applyAsk(plan, 'All products must support frequency capping at 3 per day. Shift 60% to audio; drop display, ctv and video', channelsOf);
    expect(r.unable).toHaveLength(2);
    expect(r.unable[0]).toMatch(/not an instruction this seller applies/);
    expect(r.unable[1]).toMatch(/no allocation of this plan is in the channel named/);
    // "drop display, ctv and video": the first channel named is dropped (display).
    expect(r.applied).toEqual(['dropped display; its share went to the rest of the plan']);
    const empty = applyAsk([plan[2]!], 'drop display', channelsOf);
    expect(empty).toMatchObject({ allocations: [plan[2]], unable: [expect.stringMatching(/leave the plan empty/)] });
    expect(applyAsk(plan, 'shift 140% to ctv', channelsOf).unable[0]).toMatch(/more than the whole budget/);
  });
});

describe('proposal decider', () => {
  const base = { proposalId: 'plan', owner: 'acme', allocations: plan };
  it('finalizing holds the plan for the hold window; again while held is a no-op; a changed plan is held anew', () => {
    const now = '2027-01-01T00:00:00.000Z';
    const [finalized] = proposalDecider.decide({ type: 'FinalizeProposal', ...base, now }, proposalDecider.initialState());
    expect(finalized).toMatchObject({ type: 'ProposalFinalized', data: { expires_at: new Date(Date.parse(now) + PROPOSAL_HOLD_MS).toISOString() } });
    const held = proposalDecider.evolve(proposalDecider.initialState(), finalized!);
    expect(proposalDecider.decide({ type: 'FinalizeProposal', ...base, now: '2027-01-01T01:00:00.000Z' }, held)).toEqual([]);
    const changed = [...plan.slice(0, 2), { ...plan[2]!, allocation_percentage: 20 }, { ...plan[2]!, product_id: 'x', allocation_percentage: 5 }];
    expect(proposalDecider.decide({ type: 'FinalizeProposal', ...base, allocations: changed, now: '2027-01-01T01:00:00.000Z' }, held)).toHaveLength(1);
    // A refinement ends the hold: it is a new offer.
    const refined = proposalDecider.evolve(held, proposalDecider.decide({ type: 'RefineProposal', ...base, allocations: changed, asks: ['x'], now }, held)[0]!);
    expect(refined.expiresAt).toBeUndefined();
  });

  it('refuses allocations that do not sum to 100', () => {
    expect(() => proposalDecider.decide({ type: 'RefineProposal', ...base, allocations: plan.slice(0, 2), asks: [], now: '2027-01-01T00:00:00Z' }, {})).toThrow(/sum to 100/);
  });
});
