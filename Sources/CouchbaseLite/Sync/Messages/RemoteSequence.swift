import Foundation
import JSONCore

/// A sequence as a peer's changes feed names it (spec 9.3): opaque to everyone but the peer,
/// so it is kept as the peer wrote it and sent back unchanged (`since`, checkpoints). 1.x and
/// Sync Gateway send numbers, CouchDB 2+ strings (`"26-g1AAAA…"`), BigCouch-era peers arrays.
package struct RemoteSequence: Sendable, Hashable, CustomStringConvertible {
    /// The JSON value a sequence is.
    package enum Value: Sendable, Hashable {
        case integer(Int64)
        case string(String)
        /// Any other JSON value (an array, an object, a fractional number) as compact JSON text.
        case json(String)
    }

    package let value: Value

    package init(_ value: Value) { self.value = value }

    /// A sequence of this database (the listener's feed numbers its rows).
    package init(_ sequence: Int64) { value = .integer(sequence) }

    /// From a JSON value; nil for `null` or an absent member.
    package init?(json: JSONValue?) {
        switch json {
        case nil, .null?: return nil
        case .string(let s)?: value = .string(s)
        case .int(let n)?: value = .integer(n)
        // Some JSON writers send whole numbers as doubles (`12.0`).
        case .double(let d)? where d == d.rounded() && abs(d) < 1e15: value = .integer(Int64(d))
        case let other?:
            guard let text = try? JSON.string(other, sortedKeys: false) else { return nil }
            value = .json(text)
        }
    }

    /// From the text a checkpoint stores (``checkpointString``): digits are a number (the 1.x
    /// form), JSON arrays and objects are themselves, anything else is a string.
    package init(checkpoint stored: String) {
        if let n = Int64(stored), n >= 0 {
            value = .integer(n)
        } else if let first = stored.first, first == "[" || first == "{", (try? JSON.value(stored)) != nil {
            value = .json(stored)
        } else {
            value = .string(stored)
        }
    }

    /// The text a checkpoint stores and a URL's `since` carries: a string as it is, a number
    /// as its digits, other values as their JSON (the form 1.x checkpoints hold).
    package var checkpointString: String {
        switch value {
        case .integer(let n): return String(n)
        case .string(let s): return s
        case .json(let text): return text
        }
    }

    /// The number, when the sequence is one (this database's sequences, 1.x peers).
    package var integerValue: Int64? {
        if case .integer(let n) = value { return n }
        return nil
    }

    /// The 1.x sequence a listener's sequence stands for: the number, or the number a string
    /// starts with (`"12"`, and CouchDB 2+'s form `"12-…"`, which the listener writes); nil for
    /// anything else. Only meaningful for sequences of this package's listener.
    package var localSequence: Int64? {
        switch value {
        case .integer(let n): return n >= 0 ? n : nil
        case .string(let s): return Self.localSequence(s)
        case .json: return nil
        }
    }

    /// The number `text` stands for as a sequence of this package's listener: digits, optionally
    /// followed by `-` and anything (CouchDB 2+'s opaque form), in quotes or not; nil otherwise.
    package static func localSequence(_ text: String) -> Int64? {
        var digits = Substring(text.trimmingCharacters(in: .whitespaces))
        if digits.count >= 2, digits.first == "\"", digits.last == "\"" { digits = digits.dropFirst().dropLast() }
        if let dash = digits.firstIndex(of: "-"), dash != digits.startIndex { digits = digits[..<dash] }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int64(digits) else { return nil }
        return n
    }

    /// The sequence as the JSON value it is (a `_changes` POST body's `since`).
    package var json: JSONValue {
        switch value {
        case .integer(let n): return .int(n)
        case .string(let s): return .string(s)
        case .json(let text): return (try? JSON.value(text)) ?? .string(text)
        }
    }

    /// Writes the sequence as the JSON value it is.
    package func encode(into writer: inout JSONWriter) {
        switch value {
        case .integer(let n): writer.writeRaw(String(n).utf8)
        case .string(let s): writer.writeString(s)
        case .json(let text): writer.writeRaw(text.utf8)
        }
    }

    package var description: String { checkpointString }
}
