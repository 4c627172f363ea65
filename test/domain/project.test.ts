import { describe, expect, it } from "vitest"
import { OWNER_CANNOT_SEE_PROJECT, PROJECT_NOT_FOUND, projectRefusal } from "../../src/projects/Project.js"

/** Where a task may be filed (src/projects/Project.ts): a project both the mover and the task's owner can see. */
describe("projectRefusal", () => {
  const alice = 1
  const bob = 2

  it("the owner's own moves: any project they can see", () => {
    expect(projectRefusal({ owner_id: alice, shared: false }, alice, alice)).toBeUndefined()
    expect(projectRefusal({ owner_id: bob, shared: true }, alice, alice)).toBeUndefined()
    expect(projectRefusal({ owner_id: bob, shared: false }, alice, alice)).toBe(PROJECT_NOT_FOUND)
  })

  it("moving someone else's task: only a shared project, or one the mover cannot see (not found)", () => {
    expect(projectRefusal({ owner_id: bob, shared: true }, bob, alice)).toBeUndefined()
    expect(projectRefusal({ owner_id: alice, shared: true }, bob, alice)).toBeUndefined()
    expect(projectRefusal({ owner_id: bob, shared: false }, bob, alice)).toBe(OWNER_CANNOT_SEE_PROJECT)
    expect(projectRefusal({ owner_id: alice, shared: false }, bob, alice)).toBe(PROJECT_NOT_FOUND)
    expect(projectRefusal({ owner_id: 3, shared: false }, bob, alice)).toBe(PROJECT_NOT_FOUND)
  })

  it("an unknown project is not found", () => {
    expect(projectRefusal(undefined, alice, alice)).toBe(PROJECT_NOT_FOUND)
  })
})
