import { Schema } from "effect"
import { Timestamp } from "../tasks/Task.js"

export const TimeSlot = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.Int,
  label: Schema.String,
  start_time: Schema.String,
  sort_order: Schema.Int,
  created_at: Timestamp
}).annotations({ identifier: "TimeSlot" })

export const QuotaPromptSchema = Schema.Struct({
  prompt_key: Schema.String,
  task_id: Schema.Int,
  number: Schema.Int,
  slot_id: Schema.Int,
  title: Schema.String,
  current: Schema.Int,
  target: Schema.Int,
  period: Schema.String,
  considered: Schema.Boolean,
  done: Schema.Boolean
}).annotations({ identifier: "QuotaPrompt" })
