/**
 * RFC 5545 content lines: TEXT escaping, folding at 75 octets, CRLF, date-time stamps.
 * Pure and allocation-light: a feed renders thousands of lines, so the common case (a short
 * ASCII line) is checked once and passed through untouched.
 */

export const CRLF = "\r\n"
/** RFC 5545 §3.1: lines SHOULD NOT be longer than 75 octets, excluding the line break. */
export const MAX_LINE_OCTETS = 75

/**
 * RFC 5545 §3.3.11 TEXT: backslash, semicolon and comma are escaped; a line break becomes
 * `\n`. Other control characters have no TEXT form at all (only HTAB is allowed), so they are
 * dropped rather than producing a feed that strict parsers refuse.
 */
export const escapeText = (text: string): string => {
  if (!/[\\;,\u0000-\u0008\u000a-\u001f\u007f]/.test(text)) return text
  return text
    .replace(/\r\n?/g, "\n")
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "")
    .replace(/[\\;,\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`))
}

/** The inverse of `escapeText` on its output (what a parser does with a TEXT value). */
export const unescapeText = (text: string): string =>
  text.replace(/\\([\\;,nN])/g, (_, c: string) => (c === "n" || c === "N" ? "\n" : c))

/** UTF-8 length of the code point starting at `i` (a surrogate pair counts as one). */
const octetsAt = (code: number): number => (code < 0x80 ? 1 : code < 0x800 ? 2 : code >= 0xd800 && code <= 0xdbff ? 4 : 3)

/**
 * Folds one unfolded content line at 75 octets: each continuation line starts with a space,
 * and a break never falls inside a UTF-8 sequence (nor between the halves of a surrogate
 * pair). The result ends with CRLF.
 */
export const foldLine = (line: string): string => {
  if (line.length <= MAX_LINE_OCTETS && /^[\u0000-\u007f]*$/.test(line)) return line + CRLF
  let out = ""
  let start = 0
  let octets = 0
  // The first line holds 75 octets; each continuation holds 74 after its leading space.
  let room = MAX_LINE_OCTETS
  for (let i = 0; i < line.length;) {
    const code = line.charCodeAt(i)
    const size = octetsAt(code)
    const units = size === 4 && i + 1 < line.length ? 2 : 1
    if (octets + size > room) {
      out += (start === 0 ? "" : " ") + line.slice(start, i) + CRLF
      start = i
      octets = 0
      room = MAX_LINE_OCTETS - 1
    }
    octets += size
    i += units
  }
  return out + (start === 0 ? "" : " ") + line.slice(start) + CRLF
}

/** RFC 5545 §3.1 unfolding: a CRLF followed by one space or tab is removed. */
export const unfold = (text: string): string => text.replace(/\r\n[ \t]/g, "")

/** `NAME;PARAM=VALUE:value`, folded, with its CRLF. `value` must already be escaped as its type needs. */
export const contentLine = (name: string, value: string, params = ""): string => foldLine(`${name}${params}:${value}`)

/** A TEXT property, escaped and folded. */
export const textLine = (name: string, value: string): string => contentLine(name, escapeText(value))

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n))
const pad4 = (n: number) => String(n).padStart(4, "0")

/**
 * `YYYYMMDDTHHMMSS` of floating milliseconds (the fields read as UTC); seconds are
 * truncated, as iCalendar has no fractions.
 */
export const floatingStamp = (ms: number): string => {
  const d = new Date(ms)
  return `${pad4(d.getUTCFullYear())}${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())}T${pad2(d.getUTCHours())}${
    pad2(d.getUTCMinutes())
  }${pad2(d.getUTCSeconds())}`
}

/** `YYYYMMDDTHHMMSSZ` of a wire timestamp (`2026-11-21T08:00:00.000Z`), by slicing: no Date per field. */
export const stampOfIso = (iso: string): string =>
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(iso)
    ? iso.slice(0, 4) + iso.slice(5, 7) + iso.slice(8, 10) + "T" + iso.slice(11, 13) + iso.slice(14, 16) + iso.slice(17, 19) + "Z"
    : utcStamp(Date.parse(iso))

/** `YYYYMMDDTHHMMSSZ` of an instant. */
export const utcStamp = (ms: number): string => `${floatingStamp(ms)}Z`

/** A UTC offset in ms as `±HHMM` (`±HHMMSS` when it has seconds), RFC 5545 §3.3.14. */
export const utcOffset = (ms: number): string => {
  const sign = ms < 0 ? "-" : "+"
  const total = Math.round(Math.abs(ms) / 1000)
  const h = Math.floor(total / 3600)
  const m = Math.floor(total / 60) % 60
  const s = total % 60
  return `${sign}${pad2(h)}${pad2(m)}${s === 0 ? "" : pad2(s)}`
}

/** A parameter value, quoted when it holds `:`, `;` or `,` (RFC 5545 §3.2); DQUOTE and controls cannot appear. */
export const paramValue = (value: string): string => {
  const clean = value.replace(/[\u0000-\u001f\u007f"]/g, "")
  return /[:;,]/.test(clean) ? `"${clean}"` : clean
}
