import { Schema } from "effect"

/** Ids are PostgreSQL `integer`s: positive and at most 2^31 - 1; anything else is a 400. */
const MAX_ID = 2_147_483_647

const IdNumber = Schema.Int.pipe(
  Schema.greaterThanOrEqualTo(1, { message: () => "must be a positive integer" }),
  Schema.lessThanOrEqualTo(MAX_ID, { message: () => "is out of range" })
)

/**
 * A path segment such as "42": digits only, so "4.2", "1e3" and "-1" are refused, then 1 to
 * 2^31 - 1 (0 and larger values are a 400). The document says exactly that: an integer
 * in that range, not the digits pattern, which would admit both.
 */
const IdFromString = Schema.String.pipe(
  Schema.pattern(/^\d{1,10}$/, { message: () => "must be a positive integer id" }),
  Schema.compose(Schema.NumberFromString),
  Schema.compose(IdNumber)
).annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: MAX_ID } })

const brandedId = <B extends string>(brand: B) => {
  const Id = IdNumber.pipe(Schema.brand(brand))
  const FromString = IdFromString.pipe(Schema.brand(brand))
  return { Id, FromString } as const
}

export const TaskIds = brandedId("TaskId")
export const TaskId = TaskIds.Id
export type TaskId = typeof TaskId.Type

export const ProjectIds = brandedId("ProjectId")
export const ProjectId = ProjectIds.Id
export type ProjectId = typeof ProjectId.Type

export const UserIds = brandedId("UserId")
export const UserId = UserIds.Id
export type UserId = typeof UserId.Type

export const TokenIds = brandedId("TokenId")
export const TokenId = TokenIds.Id
export type TokenId = typeof TokenId.Type

export const SlotIds = brandedId("TimeSlotId")
export const TimeSlotId = SlotIds.Id
export type TimeSlotId = typeof TimeSlotId.Type

/** Path parameters `{id}` for each resource. */
export const TaskIdParam = Schema.Struct({ id: TaskIds.FromString })
export const ProjectIdParam = Schema.Struct({ id: ProjectIds.FromString })
export const TokenIdParam = Schema.Struct({ id: TokenIds.FromString })

export const WebhookIds = brandedId("WebhookId")
export const WebhookId = WebhookIds.Id
export type WebhookId = typeof WebhookId.Type
export const WebhookIdParam = Schema.Struct({ id: WebhookIds.FromString })
