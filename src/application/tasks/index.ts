import { getProducts, listAuthorizedProperties, listCreativeFormats } from './catalog-tasks';
import { listAccounts, syncAccounts, syncGovernance } from './account-tasks';
import { checkGovernance, getPlanAuditLogs, reportPlanOutcome, syncPlans } from './governance-tasks';
import { syncAudiences } from './audience-tasks';
import { logEvent, syncCatalogs, syncEventSources } from './commerce-tasks';
import { getAccountFinancials, providePerformanceFeedback } from './financial-tasks';
import { buildCreative } from './build-tasks';
import type { TaskDefinition } from './context';
import { previewCreative } from './preview-tasks';
import { listCreatives, syncCreatives } from './creative-tasks';
import { getMediaBuyDelivery } from './delivery-tasks';
import { createMediaBuy, getMediaBuys, updateMediaBuy } from './media-buy-tasks';
import { getTaskStatus, listTasks, tasksGet, tasksList } from './task-tasks';

/** Every media-buy task by its AdCP name; the REST shim, GraphQL and MCP all dispatch here. */
export const tasks: Readonly<Record<string, TaskDefinition>> = {
  get_products: getProducts,
  list_authorized_properties: listAuthorizedProperties,
  list_creative_formats: listCreativeFormats,
  create_media_buy: createMediaBuy,
  update_media_buy: updateMediaBuy,
  get_media_buys: getMediaBuys,
  sync_creatives: syncCreatives,
  list_creatives: listCreatives,
  get_media_buy_delivery: getMediaBuyDelivery,
  tasks_get: tasksGet,
  tasks_list: tasksList,
  get_task_status: getTaskStatus,
  list_tasks: listTasks,
  sync_accounts: syncAccounts,
  list_accounts: listAccounts,
  preview_creative: previewCreative,
  sync_audiences: syncAudiences,
  sync_catalogs: syncCatalogs,
  sync_event_sources: syncEventSources,
  log_event: logEvent,
  get_account_financials: getAccountFinancials,
  provide_performance_feedback: providePerformanceFeedback,
  build_creative: buildCreative,
  sync_governance: syncGovernance,
  sync_plans: syncPlans,
  check_governance: checkGovernance,
  report_plan_outcome: reportPlanOutcome,
  get_plan_audit_logs: getPlanAuditLogs,
};
