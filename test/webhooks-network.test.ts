import { describe, expect, it } from "vitest"
import { embeddedIPv4, ipv6Bytes, refusedAddress } from "../src/webhooks/WebhookNetwork.js"

/**
 * The webhook SSRF address policy (src/webhooks/WebhookNetwork.ts): every IPv6 spelling of
 * an IPv4 address is judged as that IPv4 address; multicast and reserved ranges are always
 * refused, with Azure's wire server and Teredo; private ranges unless SERVICE_WEBHOOK_ALLOW_PRIVATE is true.
 */
describe("ipv6Bytes", () => {
  it("reads every spelling of one address to the same bytes", () => {
    const expected = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]
    for (const a of ["::ffff:127.0.0.1", "::FFFF:7f00:1", "0:0:0:0:0:ffff:7f00:0001", "0::ffff:127.0.0.1", "::ffff:7f00:1%eth0"]) {
      expect(Array.from(ipv6Bytes(a)!), a).toEqual(expected)
    }
    expect(Array.from(ipv6Bytes("::")!)).toEqual(Array(16).fill(0))
    expect(Array.from(ipv6Bytes("1::")!)).toEqual([0, 1, ...Array(14).fill(0)])
    expect(ipv6Bytes("127.0.0.1")).toBeUndefined()
    expect(ipv6Bytes("nope")).toBeUndefined()
  })
})

describe("embeddedIPv4", () => {
  it.each([
    ["::ffff:10.1.2.3", "10.1.2.3"], // IPv4-mapped
    ["::ffff:a01:203", "10.1.2.3"],
    ["::10.1.2.3", "10.1.2.3"], // IPv4-compatible
    ["::0a01:0203", "10.1.2.3"],
    ["::a01:203", "10.1.2.3"],
    ["::ffff:0:10.1.2.3", "10.1.2.3"], // IPv4-translated
    ["::ffff:0:a01:203", "10.1.2.3"],
    ["64:ff9b::10.1.2.3", "10.1.2.3"], // NAT64 well-known prefix
    ["64:ff9b::a01:203", "10.1.2.3"],
    ["64:ff9b:1::10.1.2.3", "10.1.2.3"], // local-use NAT64
    ["64:ff9b:1:abcd::a01:203", "10.1.2.3"],
    ["2002:a01:203::1", "10.1.2.3"] // 6to4
  ])("%s carries %s", (v6, v4) => {
    expect(embeddedIPv4(v6)).toBe(v4)
  })

  it("leaves plain IPv6 addresses, the unspecified and the loopback address alone", () => {
    for (const a of ["::", "::1", "2001:db8::1", "fe80::1", "64:ff9c::a01:203", "::fffe:a01:203"]) {
      expect(embeddedIPv4(a), a).toBeUndefined()
    }
  })
})

describe("refusedAddress", () => {
  const forms = (v4: string) => {
    const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number]
    const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
    return [
      v4,
      `::ffff:${v4}`,
      `::ffff:${hex}`,
      `::${v4}`,
      `::${hex}`,
      `::ffff:0:${v4}`,
      `::ffff:0:${hex}`,
      `64:ff9b::${v4}`,
      `64:ff9b:1::${hex}`
    ]
  }

  it("metadata and link-local addresses are refused in every form, even with private addresses allowed", () => {
    for (const v4 of ["169.254.169.254", "100.100.100.200", "169.254.1.1", "168.63.129.16"]) {
      for (const a of forms(v4)) expect(refusedAddress(a, true), a).toMatch(/link-local/)
    }
    // Azure's wire server as 6to4 too; its neighbours are ordinary public addresses.
    expect(refusedAddress("2002:a83f:8110::1", true)).toMatch(/metadata/)
    expect(refusedAddress("168.63.129.15", false)).toBeUndefined()
    expect(refusedAddress("168.63.129.17", false)).toBeUndefined()
  })

  it("Teredo (2001::/32) is refused in every spelling, private allowed or not; the rest of 2001::/16 is not", () => {
    for (
      const a of [
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001:0000:4136:E378:8000:63BF:3FFF:FDD2",
        "2001::",
        "2001::1",
        "2001:0:ffff:ffff:ffff:ffff:ffff:ffff",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2%eth0"
      ]
    ) {
      expect(refusedAddress(a, true), a).toMatch(/tunnel/)
      expect(refusedAddress(a, false), a).toMatch(/tunnel/)
    }
    expect(refusedAddress("2001:1::1", false)).toBeUndefined()
    expect(refusedAddress("2001:4860:4860::8888", false)).toBeUndefined()
  })

  it("multicast, 0.0.0.0/8, 240.0.0.0/4 and the broadcast address are refused in every form, private allowed or not", () => {
    for (const v4 of ["224.0.0.1", "239.255.255.250", "0.0.0.0", "0.1.2.3", "240.0.0.1", "255.255.255.255"]) {
      for (const a of forms(v4)) {
        expect(refusedAddress(a, true), a).toMatch(/multicast, reserved/)
        expect(refusedAddress(a, false), a).toMatch(/multicast, reserved/)
      }
    }
    for (const a of ["ff02::1", "ff05::fb", "FF0E::1", "::"]) expect(refusedAddress(a, true), a).toMatch(/multicast, reserved/)
  })

  it("loopback, private and shared (100.64/10) addresses are refused in every form only when private is not allowed", () => {
    for (const v4 of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.10", "100.64.0.1"]) {
      for (const a of forms(v4)) {
        expect(refusedAddress(a, false), a).toMatch(/private/)
        expect(refusedAddress(a, true), a).toBeUndefined()
      }
    }
    for (const a of ["::1", "fd00::1", "fec0::1"]) {
      expect(refusedAddress(a, false), a).toMatch(/private/)
      expect(refusedAddress(a, true), a).toBeUndefined()
    }
  })

  it("a local-use NAT64 address is private whatever IPv4 address it carries", () => {
    expect(refusedAddress("64:ff9b:1::8.8.8.8", false)).toMatch(/private/)
    expect(refusedAddress("64:ff9b:1::8.8.8.8", true)).toBeUndefined()
    expect(refusedAddress("64:ff9b::8.8.8.8", false)).toBeUndefined()
  })

  it("public addresses pass in every form", () => {
    for (const v4 of ["8.8.8.8", "93.184.216.34"]) {
      for (const a of forms(v4).filter((f) => !f.startsWith("64:ff9b:1:"))) expect(refusedAddress(a, false), a).toBeUndefined()
    }
    expect(refusedAddress("2606:4700::1111", false)).toBeUndefined()
    expect(refusedAddress("example.com", true)).toMatch(/not an IP address/)
  })
})
