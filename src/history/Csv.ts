/**
 * CSV cells per RFC 4180, with cells a spreadsheet would run as formulas neutralised
 * (a leading =, +, -, @, tab or carriage return gets a leading apostrophe).
 */
const FORMULA_START = /^[=+\-@\t\r]/

export const csvCell = (value: unknown): string => {
  if (value === null || value === undefined) return ""
  let text: string
  if (typeof value === "string") text = FORMULA_START.test(value) ? `'${value}` : value
  else if (typeof value === "number" || typeof value === "boolean") text = String(value)
  else if (Array.isArray(value) && value.every((v) => typeof v === "string")) return csvCell(value.join(", "))
  else return csvCell(JSON.stringify(value))
  return /[",\r\n]/.test(text) || /^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

export const csvRow = (cells: ReadonlyArray<unknown>) => `${cells.map(csvCell).join(",")}\r\n`
