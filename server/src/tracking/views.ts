// What callers see of tracking, each body built once here and typed with the contract: a recorded
// event or batch, a user written, aliased or renamed (the REST users API), a user's profile (GET
// /mcp/users/{userId}, and GET /v1/users/{user_id} with `success`) and the demo data seeded (the admin API).
import type {
  AliasCreated,
  BatchAccepted,
  DemoSeedResult,
  EventAccepted,
  IdReplaced,
  UserProfile,
  UserProfileResult,
  UserUpserted,
} from '@tally/client';
import type { IngestResult } from '../storage/event-writer.js';
import type { UserRow } from '../storage/users.js';

export const eventAcceptedView = (result: IngestResult): EventAccepted => ({
  success: true,
  event_id: result.eventId,
  message: result.duplicate ? 'Already recorded: an event with this insert_id was stored earlier.' : 'Event recorded.',
  ...(result.duplicate ? { duplicate: true } : {}),
});

export const batchAcceptedView = ({
  processed,
  duplicates,
}: {
  processed: number;
  duplicates: number;
}): BatchAccepted => ({
  success: true,
  processed_count: processed,
  duplicates,
  message:
    duplicates > 0
      ? `${processed} events recorded; ${duplicates} were already recorded.`
      : `${processed} events recorded.`,
});

export const userUpsertedView = ({ user, created }: { user: UserRow; created: boolean }): UserUpserted => ({
  success: true,
  user_id: user.id,
  external_id: user.external_id,
  message: created ? 'User created.' : 'User updated.',
});

export const aliasCreatedView = ({ user, aliasId }: { user: UserRow; aliasId: string }): AliasCreated => ({
  success: true,
  alias_id: aliasId,
  user_id: user.external_id,
  message: `"${aliasId}" now identifies the user "${user.external_id}".`,
});

/** The user once known as `previousId`, under its new id. */
export const idReplacedView = (user: UserRow, previousId: string): IdReplaced => ({
  success: true,
  user_id: user.external_id,
  message: `The user "${previousId}" is now "${user.external_id}"; its history moved with it.`,
});

export const userProfileView = (user: UserRow): UserProfile => ({
  id: user.id,
  external_id: user.external_id,
  email: user.email,
  phone: user.phone,
  properties: user.properties,
  origin: user.origin,
  created_at: user.created_at.toISOString(),
  last_active: user.last_active ? user.last_active.toISOString() : null,
  event_count: Number(user.event_count),
});

export const userProfileResultView = (user: UserRow): UserProfileResult => ({
  success: true,
  ...userProfileView(user),
});

export const demoSeededView = (seeded: { users: number; events: number }): DemoSeedResult => ({
  success: true,
  ...seeded,
});
