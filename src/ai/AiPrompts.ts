import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * Prompts are versioned text files in `prompts/` (`<name>.v<N>.txt`), so a wording change
 * is a reviewed diff and the activity log can say which version answered. A new wording is
 * a new file with the next version; this table picks the one in use.
 */
export const PROMPT_FILES = {
  enrichment: "enrichment.v1.txt",
  quick_take: "quick_take.v1.txt",
  whats_next: "whats_next.v1.txt",
  insights: "insights.v1.txt",
  model_test: "model_test.v1.txt"
} as const
export type PromptName = keyof typeof PROMPT_FILES

/** `prompts/` sits at the package root, above both `src/` and `dist/src/`. */
const findPromptsDir = (): string => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    const candidate = Path.join(dir, "prompts")
    if (Fs.existsSync(Path.join(candidate, PROMPT_FILES.enrichment))) return candidate
    dir = Path.dirname(dir)
  }
  throw new Error("The prompts folder was not found next to the package")
}

/** Every prompt, read once when the AI layer starts (a missing file stops start-up). */
export const loadPrompts = Effect.sync(() => {
  const dir = findPromptsDir()
  return Object.fromEntries(
    Object.entries(PROMPT_FILES).map(([name, file]) => [name, Fs.readFileSync(Path.join(dir, file), "utf8")])
  ) as Record<PromptName, string>
})

/** `{{name}}` placeholders replaced by the values; unknown ones are left visible. */
export const fill = (template: string, values: Readonly<Record<string, string | number | boolean>>) =>
  template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => (key in values ? String(values[key]) : whole))
