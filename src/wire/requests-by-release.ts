import type { ReleaseRequestRules } from './request-rules';
import { requestRules30 } from './request-rules';
import { requestRules31 } from './adcp31/requests';
import type { AdcpRelease } from './version';

/** Each release's request rules, by the name `negotiateVersion` chooses it by (beside `codecFor`). */
export const REQUEST_RULES: Readonly<Record<AdcpRelease, ReleaseRequestRules>> = { '3.0': requestRules30, '3.1': requestRules31 };
