import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The compliance tree `@adcp/sdk` 6.11.0 bundles (AdCP 3.0.6). */
export const SDK_COMPLIANCE_DIR = path.join(path.dirname(require.resolve('@adcp/sdk/package.json')), 'compliance', 'cache', '3.0.6');

/** The first year the 3.0.6 storyboards' flights are set in: their authors' future. */
const AUTHORED_YEAR = 2026;

/**
 * The bundled storyboards carry fixed flight dates in 2026 (the future when they were written).
 * On a machine past them the runner swaps stale dates for `Date.now()`-relative ones, computed
 * afresh for each request, so a request and its replay differ by milliseconds and a correct
 * seller answers IDEMPOTENCY_CONFLICT. This copies the tree with every date from 2026 on moved
 * forward by whole years (relations between dates kept; the deliberately past 2020 and 2024
 * dates untouched), so the storyboards run as authored. Made once per process, under tmpdir;
 * the runner reads it through ADCP_COMPLIANCE_DIR.
 */
export function redatedComplianceDir(now = new Date()): string {
  const shift = Math.max(0, now.getUTCFullYear() - AUTHORED_YEAR + 1);
  // One copy per shift, shared by every process: built aside, then renamed into place.
  const target = path.join(os.tmpdir(), `adcp-compliance-3.0.6-plus${shift}y`);
  if (fs.existsSync(path.join(target, '.complete'))) return target;
  const building = `${target}.${process.pid}.tmp`;
  fs.rmSync(building, { recursive: true, force: true });
  fs.cpSync(SDK_COMPLIANCE_DIR, building, { recursive: true });
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.yaml') && shift > 0) {
        const text = fs.readFileSync(file, 'utf8');
        const moved = text.replace(/\b(20\d\d)-(\d\d)-(\d\d)/g, (m, y: string, mo: string, d: string) => (Number(y) >= AUTHORED_YEAR ? `${Number(y) + shift}-${mo}-${d}` : m));
        if (moved !== text) fs.writeFileSync(file, moved);
      }
    }
  };
  walk(building);
  fs.writeFileSync(path.join(building, '.complete'), '');
  try {
    fs.renameSync(building, target);
  } catch {
    // Another process got there first (or left an unfinished copy): use its, or replace that.
    if (!fs.existsSync(path.join(target, '.complete'))) {
      fs.rmSync(target, { recursive: true, force: true });
      fs.renameSync(building, target);
    } else fs.rmSync(building, { recursive: true, force: true });
  }
  return target;
}
