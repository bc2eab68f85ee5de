import { getProducts, listAuthorizedProperties, listCreativeFormats } from './catalog-tasks';
import type { TaskDefinition } from './context';

/** Every media-buy task by its AdCP name; the REST shim, GraphQL and MCP all dispatch here. */
export const tasks: Readonly<Record<string, TaskDefinition>> = {
  get_products: getProducts,
  list_authorized_properties: listAuthorizedProperties,
  list_creative_formats: listCreativeFormats,
};
