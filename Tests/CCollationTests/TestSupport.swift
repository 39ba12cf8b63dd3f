import CCollation
import Foundation
import XCTest
import CBLTestSupport

// MARK: - Calling the C collators with Swift byte arrays

enum Mode: String, CaseIterable, Sendable {
    case unicode, raw, ascii

    var c: CBLJSONCollationMode {
        switch self {
        case .unicode: return CBLCollationUnicode
        case .raw: return CBLCollationRaw
        case .ascii: return CBLCollationASCII
        }
    }
}

func collate(_ mode: Mode, _ a: [UInt8], _ b: [UInt8], arrayLimit: Int = 0) -> Int {
    a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in
            Int(cbl_json_collate(mode.c, pa.baseAddress, pa.count, pb.baseAddress, pb.count, Int32(arrayLimit)))
        }
    }
}

func collate(_ mode: Mode, _ a: String, _ b: String, arrayLimit: Int = 0) -> Int {
    collate(mode, Array(a.utf8), Array(b.utf8), arrayLimit: arrayLimit)
}

func collateRevID(_ a: String, _ b: String) -> Int {
    let a = Array(a.utf8), b = Array(b.utf8)
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in Int(cbl_revid_collate(pa.baseAddress, pa.count, pb.baseAddress, pb.count)) }
    }
}

func collateUnicodeStrings(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in
            Int(cbl_collate_unicode_strings(
                pa.baseAddress?.assumingMemoryBound(to: CChar.self), pa.count,
                pb.baseAddress?.assumingMemoryBound(to: CChar.self), pb.count))
        }
    }
}

// MARK: - Fixtures (read from ../shared/fixtures/collation next to the repo)

enum Fixtures {
    /// Repo root = 3 levels up from this file (Tests/CCollationTests/<file>).
    static var directory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()   // CCollationTests
            .deletingLastPathComponent()   // Tests
            .deletingLastPathComponent()   // repo root
            .appendingPathComponent("../shared/fixtures/collation")
            .standardizedFileURL
    }

    /// Parsed fixture file, or XCTSkip when the shared fixture folder is absent.
    static func load(_ name: String) throws -> JSONValue {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("collation fixtures not found at \(url.path)")
        }
        let bytes = [UInt8](try Data(contentsOf: url))
        return try JSONParser.parse(bytes)
    }

    static func orderFiles() throws -> [String] {
        guard FileManager.default.fileExists(atPath: directory.path) else {
            throw XCTSkip("collation fixtures not found at \(directory.path)")
        }
        return try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("order_") && $0.hasSuffix(".json") }
            .sorted()
    }
}

// MARK: - Order-preserving JSON model, parser and compact encoder

/// JSON value that keeps object members in source order and numbers as their
/// source text (so `3.0` stays `3.0`, `5e-324` stays `5e-324`).
indirect enum JSONValue: Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([Member])

    struct Member: Sendable {
        var key: String
        var value: JSONValue
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.key == key }?.value }
        return nil
    }

    var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    var intValue: Int? { if case .number(let t) = self { return Int(t) }; return nil }

    var description: String { String(decoding: CompactJSON.compact(self), as: UTF8.self) }
}

struct JSONParseError: Error, CustomStringConvertible {
    var offset: Int
    var description: String { "JSON parse error at offset \(offset)" }
}

/// Small recursive-descent parser, used only on trusted test data.
struct JSONParser {
    private let bytes: [UInt8]
    private var i = 0

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        var p = JSONParser(bytes: bytes)
        let v = try p.value()
        p.skipSpace()
        guard p.i == bytes.count else { throw JSONParseError(offset: p.i) }
        return v
    }

    static func parse(_ text: String) throws -> JSONValue { try parse(Array(text.utf8)) }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func skipSpace() {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    private mutating func expect(_ literal: String) throws {
        for ch in literal.utf8 {
            guard i < bytes.count, bytes[i] == ch else { throw JSONParseError(offset: i) }
            i += 1
        }
    }

    private mutating func value() throws -> JSONValue {
        skipSpace()
        guard i < bytes.count else { throw JSONParseError(offset: i) }
        switch bytes[i] {
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            i += 1
            var items: [JSONValue] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                items.append(try value())
                skipSpace()
                guard i < bytes.count else { throw JSONParseError(offset: i) }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                try expect("]")
                return .array(items)
            }
        case UInt8(ascii: "{"):
            i += 1
            var members: [JSONValue.Member] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                let key = try string()
                skipSpace()
                try expect(":")
                members.append(.init(key: key, value: try value()))
                skipSpace()
                guard i < bytes.count else { throw JSONParseError(offset: i) }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                try expect("}")
                return .object(members)
            }
        default:
            let start = i
            while i < bytes.count, "+-.eE0123456789".utf8.contains(bytes[i]) { i += 1 }
            guard i > start else { throw JSONParseError(offset: i) }
            return .number(String(decoding: bytes[start..<i], as: UTF8.self))
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count,
              let v = UInt32(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16)
        else { throw JSONParseError(offset: i) }
        i += 4
        return v
    }

    private mutating func string() throws -> String {
        try expect("\"")
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw JSONParseError(offset: i) }
            let ch = bytes[i]
            i += 1
            if ch == UInt8(ascii: "\"") { break }
            if ch != UInt8(ascii: "\\") { out.append(ch); continue }
            guard i < bytes.count else { throw JSONParseError(offset: i) }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var cp = try hex4()
                if (0xD800...0xDBFF).contains(cp) {
                    try expect("\\u")
                    let low = try hex4()
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                }
                out.append(contentsOf: Array(String(Unicode.Scalar(cp)!).utf8))
            default: out.append(e)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Compact JSON writer. Non-ASCII is written as raw UTF-8 and object members
/// keep their order, as the fixture README requires. With a random generator
/// it also varies the escaping (\/, \u00XX, \uXXXX with surrogate pairs) so
/// that the collator's escape decoding is exercised.
enum CompactJSON {
    static func compact(_ v: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        var rng: SplitMix64? = nil
        write(v, into: &out, rng: &rng)
        return out
    }

    static func randomlyEscaped(_ v: JSONValue, rng: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        var r: SplitMix64? = rng
        write(v, into: &out, rng: &r)
        rng = r!
        return out
    }

    private static func write(_ v: JSONValue, into out: inout [UInt8], rng: inout SplitMix64?) {
        switch v {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let t): out += Array(t.utf8)
        case .string(let s): writeString(s, into: &out, rng: &rng)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out, rng: &rng)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (n, m) in members.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                writeString(m.key, into: &out, rng: &rng)
                out.append(UInt8(ascii: ":"))
                write(m.value, into: &out, rng: &rng)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func hexEscape(_ unit: UInt32, lowercase: Bool) -> [UInt8] {
        var h = String(unit, radix: 16, uppercase: !lowercase)
        while h.count < 4 { h = "0" + h }
        return Array("\\u\(h)".utf8)
    }

    private static func writeString(_ s: String, into out: inout [UInt8], rng: inout SplitMix64?) {
        out.append(UInt8(ascii: "\""))
        for scalar in s.unicodeScalars {
            let v = scalar.value
            var fancy = false, lower = true
            if var r = rng {
                fancy = r.next() % 3 == 0
                lower = r.next() % 2 == 0
                rng = r
            }
            switch v {
            case 0x22: out += Array("\\\"".utf8)
            case 0x5C: out += Array("\\\\".utf8)
            case 0x0A: out += fancy ? hexEscape(v, lowercase: lower) : Array("\\n".utf8)
            case 0x09: out += fancy ? hexEscape(v, lowercase: lower) : Array("\\t".utf8)
            case 0x0D: out += Array("\\r".utf8)
            case 0x08: out += Array("\\b".utf8)
            case 0x2F: out += fancy ? Array("\\/".utf8) : [0x2F]
            // Never \f: the collator decodes \f as the letter f (spec 6.1 quirk).
            case 0..<0x20, 0x7F: out += hexEscape(v, lowercase: lower)
            case 0x20..<0x80: out += fancy ? hexEscape(v, lowercase: lower) : [UInt8(v)]
            default:
                if fancy {
                    for unit in String(scalar).utf16 { out += hexEscape(UInt32(unit), lowercase: lower) }
                } else {
                    out += Array(String(scalar).utf8)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Deterministic random numbers


// MARK: - Input buffers next to an inaccessible page

/// Places the bytes against a PROT_NONE guard page: at the very end of the readable region when
/// the guard follows it (any read past the given length crashes the test), or at its very start
/// when the guard precedes it (any read before the given start crashes the test).
final class GuardedBuffer {
    /// Where the guard page is, relative to the bytes.
    enum GuardPage {
        case after
        case before
    }

    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private let mapped: Int
    private let page: Int
    private let guardPage: GuardPage

    init(capacity: Int, guardPage: GuardPage = .after) {
        page = Int(sysconf(Int32(_SC_PAGESIZE)))
        self.guardPage = guardPage
        let dataPages = (capacity + page - 1) / page
        mapped = (dataPages + 1) * page
        let p = mmap(nil, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        precondition(p != MAP_FAILED, "mmap failed")
        base = p!
        self.capacity = dataPages * page
        let guardStart = guardPage == .after ? base + self.capacity : base
        precondition(mprotect(guardStart, page, PROT_NONE) == 0, "mprotect failed")
    }

    deinit { munmap(base, mapped) }

    func with<T>(_ bytes: [UInt8], _ body: (UnsafeRawPointer, Int) -> T) -> T {
        precondition(bytes.count <= capacity)
        let start = guardPage == .after ? base + (capacity - bytes.count) : base + page
        bytes.withUnsafeBytes { src in
            if let s = src.baseAddress { start.copyMemory(from: s, byteCount: bytes.count) }
        }
        return body(UnsafeRawPointer(start), bytes.count)
    }
}
