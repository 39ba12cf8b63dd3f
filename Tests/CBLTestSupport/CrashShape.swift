/// The documents every CBLCrashWriter mode writes have one shape, so the crash tests check them
/// alike: `doc-<i>` with `i`, a `payload` starting with "<i>:", an `updates` counter, and
/// attachments whose byte k is (i·31 + k·7) mod 256 (any length).
public enum CrashShape {
    public static func docID(_ i: Int) -> String { "doc-\(i)" }

    /// The index `i` of `doc-<i>`, nil for any other ID.
    public static func index(ofDocID id: String) -> Int? {
        id.hasPrefix("doc-") ? Int(id.dropFirst(4)) : nil
    }

    /// A random payload of 16–`maxLength` characters that starts with "<i>:".
    public static func payload(_ i: Int, maxLength: Int = 400, using rng: inout SplitMix64) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789 ".utf8)
        let length = Int.random(in: 16...max(16, maxLength), using: &rng)
        var bytes = [UInt8]()
        bytes.reserveCapacity(length)
        for _ in 0..<length { bytes.append(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]) }
        return "\(i):" + String(decoding: bytes, as: UTF8.self)
    }

    /// The attachment content of document `i`, `size` bytes long.
    public static func attachmentBytes(index i: Int, size: Int) -> [UInt8] {
        (0..<size).map { k in UInt8(truncatingIfNeeded: i &* 31 &+ k &* 7) }
    }

    /// True when `bytes` is an attachment of document `i` (of its own length).
    public static func isAttachment<C: Collection>(_ bytes: C, of i: Int) -> Bool where C.Element == UInt8 {
        var k = 0
        for byte in bytes {
            if byte != UInt8(truncatingIfNeeded: i &* 31 &+ k &* 7) { return false }
            k += 1
        }
        return true
    }

    /// The view the `index` mode builds and the test rebuilds: key `i`, value the `updates` count.
    public static let viewName = "crash/byI"
    public static let viewVersion = "1"

    public static func map(_ doc: [String: Any], _ emit: (Any, Any?) -> Void) {
        guard let i = doc["i"] as? Int else { return }
        emit(i, (doc["updates"] as? Int) ?? 0)
    }
}
