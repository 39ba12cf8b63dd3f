import Crypto
import Foundation
import JSONCore

/// Parsing and generating 1.x revision IDs (`<generation>-<suffix>`, spec 3.2 and 3.3).
enum RevisionID {
    /// The generation of a revision ID, or 0 when it is not a valid ID
    /// (`0-x`, `-4-x`, `5_x`, ` 5-x`, `7 -x`, `7-`, `7`, more than 9 digits…).
    static func generation(_ revID: String) -> Int {
        var gen = 0
        var digits = 0
        var sawDash = false
        var suffixLength = 0
        for byte in revID.utf8 {
            if sawDash { suffixLength += 1; if suffixLength > 0 { break } }
            if byte == UInt8(ascii: "-") {
                sawDash = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39 else { return 0 }
            digits += 1
            if digits > 9 { return 0 }
            gen = gen * 10 + Int(byte - 0x30)
        }
        guard sawDash, suffixLength > 0, digits > 0 else { return 0 }
        return gen
    }

    /// The suffix after the first `-`, or nil when the ID is invalid.
    static func suffix(_ revID: String) -> Substring? {
        guard generation(revID) > 0, let dash = revID.firstIndex(of: "-") else { return nil }
        return revID[revID.index(after: dash)...]
    }

    static func isValid(_ revID: String) -> Bool { generation(revID) > 0 }

    /// The 1.x digest rule, iOS form (spec 3.3): MD5 of `[len(parent) parent] deleted json`;
    /// generation-1 revisions hash no prefix at all.
    static func generate(json: some ContiguousBytes, deleted: Bool, parent: String?) throws -> String {
        try json.withUnsafeBytes { try generate(jsonBytes: $0, deleted: deleted, parent: parent) }
    }

    /// ``generate(json:deleted:parent:)`` over bytes in place. Runs once per save, so it makes no
    /// intermediate arrays: the digest input is fed from the buffers and the ID is written
    /// straight into the new string's storage.
    static func generate(jsonBytes json: UnsafeRawBufferPointer, deleted: Bool, parent: String?) throws -> String {
        var gen = 1
        var md5 = Insecure.MD5()
        if var parent {
            let parentGen = RevisionID.generation(parent)
            guard parentGen > 0 else { throw CBLError.badRequest("Invalid parent revision ID '\(parent)'") }
            gen = parentGen + 1
            parent.withUTF8 { bytes in
                // iOS silently uses the low 8 bits of the length (spec 3.3).
                withUnsafeBytes(of: UInt8(truncatingIfNeeded: bytes.count)) { md5.update(bufferPointer: $0) }
                md5.update(bufferPointer: UnsafeRawBufferPointer(bytes))
            }
        }
        withUnsafeBytes(of: UInt8(deleted ? 1 : 0)) { md5.update(bufferPointer: $0) }
        md5.update(bufferPointer: json)
        return format(generation: gen, digest: md5.finalize())
    }

    /// A generation-1 live revision's digest from its input laid out in one buffer: the
    /// `deleted` byte (0) then the canonical JSON — what the save path writes, so the digest is
    /// one pass over one buffer. Its ID is `digest.firstGenerationID`.
    static func firstGenerationDigest(digestInput: UnsafeRawBufferPointer) -> RevisionDigest {
        RevisionDigest(Insecure.MD5.hash(data: digestInput))
    }

    /// `<generation>-<32 hex digits>`, written straight into the new string's storage.
    private static func format(generation gen: Int, digest: Insecure.MD5Digest) -> String {
        digest.withUnsafeBytes { format(generation: gen, digestBytes: $0) }
    }

    /// `<generation>-<hex of digestBytes>`.
    fileprivate static func format(generation gen: Int, digestBytes: UnsafeRawBufferPointer) -> String {
        // A generation has at most 10 digits (parent ≤ 9 digits, + 1).
        String(unsafeUninitializedCapacity: 11 + 2 * digestBytes.count) { out in
            let hex: StaticString = "0123456789abcdef"
            var n = 0
            var scale = 1
            while gen / scale >= 10 { scale *= 10 }
            while scale > 0 {
                out[n] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: (gen / scale) % 10)
                n += 1
                scale /= 10
            }
            out[n] = UInt8(ascii: "-")
            n += 1
            for b in digestBytes {
                out[n] = hex.utf8Start[Int(b >> 4)]
                out[n + 1] = hex.utf8Start[Int(b & 0xF)]
                n += 2
            }
            return n
        }
    }

    /// `_revisions` (CouchDB history form) for a list of rev IDs, newest first (spec 3.4).
    static func revisionsDictionary(_ history: [String]) -> [String: Any] {
        var start = 0
        var ids: [String] = []
        var compressible = !history.isEmpty
        for (i, revID) in history.enumerated() {
            let gen = generation(revID)
            guard gen > 0, let suffix = suffix(revID) else { compressible = false; break }
            if i == 0 { start = gen } else if gen != start - i { compressible = false; break }
            ids.append(String(suffix))
        }
        if compressible { return ["start": start, "ids": ids] }
        return ["ids": history]
    }

    /// Parses `_revisions` back into full rev IDs, newest first. Nil when malformed.
    /// `_revisions` (`{"start": N, "ids": [...]}`) of a history, typed.
    static func typedRevisions(_ history: [String]) -> JSONValue {
        let dict = revisionsDictionary(history)
        var out = JSONObject()
        if let start = dict["start"] as? Int { out["start"] = .int(Int64(start)) }
        out["ids"] = .array((dict["ids"] as? [String] ?? []).map(JSONValue.string))
        return .object(out)
    }

    static func history(fromRevisions revisions: JSONObject) -> [String]? {
        guard case .array(let items)? = revisions["ids"] else { return nil }
        var ids: [String] = []
        ids.reserveCapacity(items.count)
        for item in items {
            guard let id = item.stringValue else { return nil }
            ids.append(id)
        }
        guard let start = revisions["start"]?.intValue else { return ids }
        guard start >= ids.count else { return nil }
        return ids.enumerated().map { "\(start - $0.offset)-\($0.element)" }
    }

    static func history(fromRevisions revisions: [String: Any]) -> [String]? {
        guard let ids = revisions["ids"] as? [String] else { return nil }
        guard let start = revisions["start"] as? Int else { return ids }
        guard start >= ids.count else { return nil }
        return ids.enumerated().map { "\(start - $0.offset)-\($0.element)" }
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)

/// Appends the lowercase hex digits of `bytes` to `out`.
func appendHex(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
    for b in bytes {
        out.append(hexDigits[Int(b >> 4)])
        out.append(hexDigits[Int(b & 0xF)])
    }
}

/// Lowercase hex of a digest.
func hex(_ digest: some Sequence<UInt8>) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(40)
    appendHex(digest, to: &out)
    return String(decoding: out, as: UTF8.self)
}

/// The 16 bytes of a revision's MD5 digest in two words: what a pending change keeps instead of
/// the 34-character ID string.
struct RevisionDigest: Hashable, Sendable {
    let first: UInt64
    let second: UInt64

    init(_ digest: Insecure.MD5Digest) {
        (first, second) = digest.withUnsafeBytes {
            ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// `1-<32 hex digits>`.
    var firstGenerationID: String {
        String(unsafeUninitializedCapacity: RevisionDigest.firstGenerationIDLength) { out in
            writeFirstGenerationID(into: UnsafeMutableRawBufferPointer(out))
            return RevisionDigest.firstGenerationIDLength
        }
    }

    /// The UTF-8 bytes of ``firstGenerationID``, in a stack buffer (binding it into a statement
    /// needs no string).
    func withFirstGenerationID<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: RevisionDigest.firstGenerationIDLength, alignment: 1) { out in
            writeFirstGenerationID(into: out)
            return try body(UnsafeRawBufferPointer(out))
        }
    }

    static let firstGenerationIDLength = 34

    private func writeFirstGenerationID(into out: UnsafeMutableRawBufferPointer) {
        let hex: StaticString = "0123456789abcdef"
        out[0] = UInt8(ascii: "1")
        out[1] = UInt8(ascii: "-")
        var words = (first, second)
        withUnsafeBytes(of: &words) { digest in
            var n = 2
            for b in digest {
                out[n] = hex.utf8Start[Int(b >> 4)]
                out[n &+ 1] = hex.utf8Start[Int(b & 0xF)]
                n &+= 2
            }
        }
    }
}
