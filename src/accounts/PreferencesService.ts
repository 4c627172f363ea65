import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { NotFound, ValidationError } from "../kernel/Errors.js"
import { type Preferences, type PreferencesPatch, withDefaults } from "./Preferences.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Credentials } from "./Credentials.js"
import { Mutations } from "../pipeline/Mutations.js"
import { Quotas } from "../quotas/Quotas.js"
import { ownsSlot } from "../slots/TimeSlotsTable.js"
import { preferencesOf, setPreferences } from "./UsersTable.js"
import type { UserId } from "../kernel/Ids.js"

/** Spec §2.8 preferences and the user's time zone (CONTRACT §5). */
export class PreferencesService extends Effect.Service<PreferencesService>()("steady/PreferencesService", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const credentials = yield* Credentials
    const quotas = yield* Quotas

    const read = Effect.fnUntraced(function*(userId: UserId, lock = false) {
      const row = yield* preferencesOf(sql, userId, lock)
      if (row === undefined) return yield* Effect.fail(NotFound.of("User"))
      return withDefaults(row.preferences, row.timezone)
    })

    const get = (user: CurrentUserShape) => read(user.id)

    // The zone is part of what a token stands for (CurrentUser): verified tokens are re-read.
    const update = (user: CurrentUserShape, patch: PreferencesPatch) =>
      credentials.revoking(mutations.run({ user, action: "preferences", undoable: false }, (tx) =>
        Effect.gen(function*() {
          const current = yield* read(user.id, true)
          for (const field of ["default_reminder_slot_id", "quota_prompt_slot_id"] as const) {
            const slot = patch[field]
            if (slot !== undefined && slot !== null) {
              if (!(yield* ownsSlot(sql, user.id, slot))) return yield* Effect.fail(ValidationError.field(field, "No such time slot"))
            }
          }
          const { timezone, ...rest } = patch
          const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined))
          const next: Preferences = {
            ...current,
            ...defined,
            timezone: timezone ?? current.timezone,
            ai_context_updated_at: patch.ai_context !== undefined && patch.ai_context !== current.ai_context
              ? tx.now.toISOString()
              : current.ai_context_updated_at
          }
          const { timezone: zone, ...stored } = next
          yield* setPreferences(sql, user.id, stored, zone)
          // Quota periods follow the new calendar before the response (spec §3, §4.7).
          const zoneChanged = zone !== current.timezone
          if (zoneChanged || next.week_start !== current.week_start) {
            yield* quotas.realign(tx, user.id, { zone, weekStart: next.week_start }, {
              weekStart: next.week_start !== current.week_start,
              zone: zoneChanged
            })
          }
          tx.describe("Updated preferences")
          return next
        })))

    return { get, update } as const
  })
}) {}
