/** The time slots every new user starts with (CONTRACT §4). */
export const DEFAULT_TIME_SLOTS: ReadonlyArray<{ readonly label: string; readonly start_time: string }> = [
  { label: "Early morning", start_time: "07:00" },
  { label: "Morning", start_time: "09:00" },
  { label: "Midday", start_time: "12:00" },
  { label: "Afternoon", start_time: "16:00" },
  { label: "Evening", start_time: "20:30" }
]

export const INBOX_NAME = "Inbox"
