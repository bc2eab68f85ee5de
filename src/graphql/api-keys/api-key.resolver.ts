import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { issueApiKey, listApiKeys, revokeApiKey } from '../../application/api-keys';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';
import { IssueApiKeyInput } from './api-key.input';
import { ApiKey, IssuedApiKey, Viewer } from './api-key.type';

function requireAdmin(ctx: GraphQLContext): void {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
  if (ctx.principal.role !== 'admin') throw new AppError('FORBIDDEN', 'admin role required');
}

@Resolver()
export class ApiKeyResolver {
  @Query(() => Viewer, { nullable: true, description: 'The caller: null without credentials.' })
  viewer(@Ctx() ctx: GraphQLContext): Viewer | null {
    return ctx.principal ? { keyId: ctx.principal.keyId, org: ctx.principal.org, role: ctx.principal.role } : null;
  }

  @Query(() => [ApiKey], { description: 'Every issued key (admin only).' })
  async apiKeys(@Ctx() ctx: GraphQLContext): Promise<ApiKey[]> {
    requireAdmin(ctx);
    const rows = await listApiKeys(ctx.app.ports);
    return rows.map((r) => ({
      keyId: r.key_id,
      org: r.org,
      role: r.role,
      prefix: r.prefix,
      issuedAt: r.issued_at,
      revokedAt: r.revoked_at,
    }));
  }

  @Mutation(() => IssuedApiKey, { description: 'Issues a key (admin only). The secret is returned once.' })
  async issueApiKey(@Arg('input') input: IssueApiKeyInput, @Ctx() ctx: GraphQLContext): Promise<IssuedApiKey> {
    requireAdmin(ctx);
    return issueApiKey(ctx.app.ports.store, { org: input.org, role: input.role }, {
      now: ctx.app.clock().toISOString(),
      principal: ctx.principal!.keyId,
      correlationId: ctx.requestId,
    });
  }

  @Mutation(() => Boolean, { description: 'Revokes a key (admin only).' })
  async revokeApiKey(@Arg('keyId', () => ID) keyId: string, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    requireAdmin(ctx);
    await revokeApiKey(ctx.app.ports.store, keyId, {
      now: ctx.app.clock().toISOString(),
      principal: ctx.principal!.keyId,
      correlationId: ctx.requestId,
    });
    return true;
  }
}
